/**
 * Pulsar through the official native client, `pulsar-client` (a Node addon
 * over libpulsar), for `--pulsar-client native`. It is an optional
 * dependency, imported only when this transport connects: its install needs
 * a prebuilt binary that is not on every platform (see docs/pulsar.md). When it
 * cannot be loaded, connect() fails with one line that says why.
 *
 * Laid out like the built-in transport (pulsar-transport.ts): Shared subscriptions for
 * consume(), Exclusive ones of its own for subscribe(), receiver queues of
 * at least 1000, the bridge's concurrency applied between that queue and the
 * bridge. Producer batching is off (on by default in the addon, where it held
 * a request/reply round trip to 46 req/s), and the addon's array-like
 * properties are copied into a plain object.
 */
import { randomUUID } from 'node:crypto'
import { messageOf, ToolbridgeError } from '../../../shared/errors.ts'
import { parseQueueName, pulsarTopic } from '../../../shared/queues.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { MIN_RECEIVER_QUEUE, PULSAR_MAX_MESSAGE_BYTES, type PulsarTransportOptions } from './pulsar-transport.ts'
import { parsePulsarUrl } from './url.ts'
import { asBuffer, closedError, deliveryOf, handOver, redact } from '../adapter-parts.ts'
import type { ConsumeOptions, Consumer, OnDelivery, Properties, Transport } from '../transport.ts'

// The part of pulsar-client's API used here (its own types come with the addon).
interface NativeMessage {
  getData(): Buffer
  getProperties(): Record<string, unknown>
  getRedeliveryCount(): number
  getPublishTimestamp(): number
}
interface NativeConsumer {
  acknowledge(message: NativeMessage): Promise<null> | void
  negativeAcknowledge(message: NativeMessage): void
  close(): Promise<null>
}
interface NativeProducer {
  send(message: { data: Buffer; properties?: Record<string, string> }): Promise<unknown>
  close(): Promise<null>
}
interface NativeClient {
  createProducer(config: Record<string, unknown>): Promise<NativeProducer>
  subscribe(config: Record<string, unknown>): Promise<NativeConsumer>
  close(): Promise<null>
}
interface NativeModule {
  Client: new (config: Record<string, unknown>) => NativeClient
  AuthenticationToken: new (config: { token: string }) => unknown
}

export type NativeLoad = { ok: true; pulsar: NativeModule } | { ok: false; reason: string }

let loading: Promise<NativeLoad> | undefined

/** Imports pulsar-client once; says why when it cannot be loaded. */
export function loadNativePulsar(): Promise<NativeLoad> {
  loading ??= import('pulsar-client' as string).then(
    (module: { default?: NativeModule } & NativeModule) => ({ ok: true as const, pulsar: module.default ?? module }),
    (err: Error & { code?: string }) => ({
      ok: false as const,
      reason:
        err.code === 'ERR_MODULE_NOT_FOUND'
          ? 'pulsar-client is not installed (an optional dependency: its install downloads a prebuilt libpulsar binary, which failed or was skipped)'
          : `pulsar-client is installed but does not load: ${err.message.split('\n')[0]}`,
    }),
  )
  return loading
}

/** The addon's properties object is array-like: keep its string entries only. */
function plainProperties(raw: Record<string, unknown>): Properties {
  const out: Properties = {}
  for (const [key, value] of Object.entries(raw)) if (typeof value === 'string') out[key] = value
  return out
}

/** Hands a consumer's messages to the bridge at most `limit` unsettled at a time; the rest wait here. */
class Gate {
  private readonly waiting: (() => void)[] = []
  private running = 0
  private readonly limit: number

  constructor(limit: number) {
    this.limit = limit
  }

  admit(start: () => void): void {
    if (this.running < this.limit) {
      this.running++
      start()
    } else this.waiting.push(start)
  }

  release(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.running--
  }

  drop(): void {
    this.waiting.length = 0
  }
}

export class NativePulsarTransport implements Transport {
  readonly kind = 'pulsar-native'
  readonly address: string
  readonly maxMessageBytes = PULSAR_MAX_MESSAGE_BYTES

  private readonly broker: string
  private readonly options: PulsarTransportOptions
  private readonly logger: Logger
  private client: NativeClient | undefined
  private readonly producers = new Map<string, Promise<NativeProducer>>()
  private readonly consumers = new Set<NativeConsumer>()
  private closed = false

  constructor(broker: string, options: PulsarTransportOptions = {}) {
    parsePulsarUrl(broker) // the same URL checks as the built-in client
    this.broker = broker
    this.address = redact(broker)
    this.options = options
    this.logger = options.logger ?? silentLogger
  }

  async connect(): Promise<void> {
    if (this.client) return
    const loaded = await loadNativePulsar()
    if (!loaded.ok) {
      throw new ToolbridgeError(
        'config',
        `--pulsar-client native: ${loaded.reason}; the built-in client (the default) needs nothing native`,
      )
    }
    const { serviceUrl, tls } = parsePulsarUrl(this.broker)
    const { Client, AuthenticationToken } = loaded.pulsar
    try {
      this.client = new Client({
        serviceUrl,
        operationTimeoutSeconds: Math.ceil((this.options.operationTimeoutMs ?? 30_000) / 1000),
        ...(this.options.token ? { authentication: new AuthenticationToken({ token: this.options.token }) } : {}),
        ...(this.options.listener ? { listenerName: this.options.listener } : {}),
        ...(tls
          ? {
              tlsTrustCertsFilePath: tls.caFile,
              tlsValidateHostname: tls.validateHostname,
              tlsAllowInsecureConnection: tls.allowInsecure,
            }
          : {}),
      })
    } catch (err) {
      throw new ToolbridgeError(
        'config',
        `cannot create a native Pulsar client for ${this.address}: ${messageOf(err)}`,
        { cause: err },
      )
    }
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer> {
    return this.attach(
      queue,
      options.subscription,
      'Shared',
      Math.max(MIN_RECEIVER_QUEUE, options.concurrency),
      options.concurrency,
      onDelivery,
      options.startAt === 'earliest' ? 'Earliest' : 'Latest',
    )
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer> {
    return this.attach(
      queue,
      `toolbridge-${randomUUID()}`,
      'Exclusive',
      MIN_RECEIVER_QUEUE,
      MIN_RECEIVER_QUEUE,
      onDelivery,
    )
  }

  async publish(queue: string, body: Uint8Array, properties: Properties): Promise<void> {
    if (body.byteLength > this.maxMessageBytes) {
      throw new ToolbridgeError(
        'too-large',
        `a message of ${body.byteLength} bytes for ${queue} is over Pulsar's limit of ${this.maxMessageBytes} bytes`,
      )
    }
    const topic = pulsarTopic(parseQueueName(queue))
    const producer = await this.producer(topic)
    try {
      await producer.send({ data: asBuffer(body), properties })
    } catch (err) {
      throw new ToolbridgeError(
        'unavailable',
        `Pulsar (native client) did not take the message for ${topic}: ${messageOf(err)}`,
        { cause: err, retriable: true },
      )
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const client = this.client
    if (!client) return
    await Promise.all([...this.consumers].map((c) => c.close().catch(() => {})))
    await Promise.all([...this.producers.values()].map((p) => p.then((producer) => producer.close()).catch(() => {})))
    await client.close().catch(() => {})
  }

  private connected(): NativeClient {
    if (this.closed) throw closedError('Pulsar', this.address)
    if (!this.client) throw new ToolbridgeError('unavailable', `Pulsar transport for ${this.address}: connect() first`)
    return this.client
  }

  private producer(topic: string): Promise<NativeProducer> {
    let producer = this.producers.get(topic)
    if (!producer) {
      producer = this.connected().createProducer({ topic, batchingEnabled: false, sendTimeoutMs: 30_000 })
      producer.catch(() => this.producers.delete(topic))
      this.producers.set(topic, producer)
    }
    return producer
  }

  private async attach(
    queue: string,
    subscription: string,
    subscriptionType: 'Shared' | 'Exclusive',
    receiverQueueSize: number,
    concurrency: number,
    onDelivery: OnDelivery,
    initialPosition: 'Latest' | 'Earliest' = 'Latest',
  ): Promise<Consumer> {
    const topic = pulsarTopic(parseQueueName(queue))
    const gate = new Gate(concurrency)
    let consumer: NativeConsumer
    try {
      consumer = await this.connected().subscribe({
        topic,
        subscription,
        subscriptionType,
        subscriptionInitialPosition: initialPosition,
        receiverQueueSize,
        listener: (message: NativeMessage, from: NativeConsumer) =>
          gate.admit(() => this.deliver(message, from, gate, onDelivery)),
      })
    } catch (err) {
      throw new ToolbridgeError(
        'unavailable',
        `cannot subscribe ${subscription} on ${topic} (native client): ${messageOf(err)}`,
        { cause: err, retriable: true },
      )
    }
    this.consumers.add(consumer)
    return {
      close: async () => {
        gate.drop()
        this.consumers.delete(consumer)
        await consumer.close().catch(() => {})
      },
    }
  }

  private deliver(message: NativeMessage, consumer: NativeConsumer, gate: Gate, onDelivery: OnDelivery): void {
    const delivery = deliveryOf(
      {
        body: message.getData(),
        properties: plainProperties(message.getProperties()),
        redelivered: message.getRedeliveryCount() > 0,
        timestamp: message.getPublishTimestamp(),
      },
      (ack) => {
        gate.release()
        try {
          if (ack) void Promise.resolve(consumer.acknowledge(message)).catch(() => {})
          else consumer.negativeAcknowledge(message)
        } catch {
          // the consumer closed: the broker has it back already
        }
      },
    )
    handOver(onDelivery, delivery, this.logger, { broker: this.address })
  }
}

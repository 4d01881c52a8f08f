/**
 * Apache Pulsar, through the project's own client of the binary protocol
 * (`./pulsar/`), laid out as TrustGraph's Pulsar backend lays it out
 * (trustgraph-base 2.11.1, `trustgraph/base/async_pulsar_backend.py`):
 *
 * - `request:tg:joke` is `non-persistent://tg/request/joke`, `flow:` queues
 *   are persistent (shared/queues.ts); Pulsar URIs are used as given;
 * - `consume()` is a Shared subscription named by the caller (the bridge
 *   passes TrustGraph's `<service-id>-request`), initial position Latest;
 * - `subscribe()` is an Exclusive, non-durable subscription of its own
 *   (TrustGraph's response consumers are Exclusive), so nothing is left
 *   behind on a persistent topic;
 * - a message is the body bytes as given (TrustGraph's BytesSchema: no
 *   registered schema) with the properties as Pulsar properties.
 *
 * Flow control: request and response classes are non-persistent topics,
 * where the broker silently drops a message that reaches a consumer with no
 * permits left. So every consumer keeps at least 1000 permits (TrustGraph's
 * Python client has the same receiver queue), and the bridge's back-pressure
 * (`concurrency`) is applied here, between that queue and the bridge.
 *
 * Reconnecting (topic unload, broker restart, dropped connection) is the
 * client's: producers and consumers reattach with backoff on their own, and
 * a publish made meanwhile waits (up to the send timeout, 30 s) and is sent
 * once the producer is back.
 *
 * Settings: token authentication (`--pulsar-token`, env PULSAR_TOKEN), the
 * advertised listener name (`--pulsar-listener`, TrustGraph's
 * `--pulsar-listener`), and TLS from the broker URL (url.ts). The token
 * never appears in a log line.
 */
import { randomUUID } from 'node:crypto'
import { ToolbridgeError } from '../../../shared/errors.ts'
import { parseQueueName, pulsarTopic } from '../../../shared/queues.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { BROKER_CONNECT_RETRY, createRetry, RetriesExhaustedError, type RetryOptions } from '../../support/retry.ts'
import {
  isPulsarError,
  PulsarClient,
  type ClientLogger,
  type Consumer,
  type Message,
  type Producer,
} from '../../../lib/pulsar-client/index.ts'
import { closedError, deliveryOf, handOver, redact, scrubber } from '../adapter-parts.ts'
import type { ConsumeOptions, Consumer as TransportConsumer, OnDelivery, Properties, Transport } from '../transport.ts'
import { parsePulsarUrl } from './url.ts'

/** Pulsar's default maxMessageSize (5 MiB), what TrustGraph deployments run with. */
export const PULSAR_MAX_MESSAGE_BYTES = 5 * 1024 * 1024
/** Permits per consumer: non-persistent topics drop what arrives without one. */
export const MIN_RECEIVER_QUEUE = 1000

export interface PulsarSettings {
  /** Token for Pulsar's token authentication. */
  token?: string
  /** Advertised listener name for lookups. */
  listener?: string
}

export interface PulsarTransportOptions extends PulsarSettings {
  logger?: Logger
  connectRetry?: RetryOptions
  /** Lookups, subscribing, creating producers. Default 30 s. */
  operationTimeoutMs?: number
  /** Waits between reconnection attempts. Default 100 ms doubling to 2 s. */
  backoff?: { initialMs: number; maxMs: number }
  /** Called each time a consumer is back after losing its connection (metrics). */
  onReconnect?: () => void
}

/** The client logs (message, fields); the bridge's logger takes (fields, message). */
function clientLogger(logger: Logger): ClientLogger {
  return {
    debug: (message, fields = {}) => logger.debug(fields, message),
    info: (message, fields = {}) => logger.info(fields, message),
    warn: (message, fields = {}) => logger.warn(fields, message),
    error: (message, fields = {}) => logger.error(fields, message),
  }
}

export class PulsarTransport implements Transport {
  readonly kind = 'pulsar'
  readonly address: string
  readonly maxMessageBytes = PULSAR_MAX_MESSAGE_BYTES

  private readonly client: PulsarClient
  private readonly logger: Logger
  private readonly token: string | undefined
  /** An error's text without the token. */
  private readonly scrub: (err: unknown) => string
  private readonly connectRetry: RetryOptions
  /** Producers by topic: created on first publish, kept for the transport's life. */
  private readonly producers = new Map<string, Producer>()
  private readonly creating = new Map<string, Promise<Producer>>()
  private readonly topics = new Map<string, string>()
  /** What consume() made: readiness waits on them. */
  private readonly requestConsumers = new Set<Consumer>()
  private closed = false

  constructor(broker: string, options: PulsarTransportOptions = {}) {
    const { serviceUrl, tls } = parsePulsarUrl(broker)
    this.address = redact(broker)
    this.logger = options.logger ?? silentLogger
    this.token = options.token || undefined
    this.scrub = scrubber(this.token)
    this.connectRetry = { ...BROKER_CONNECT_RETRY, ...options.connectRetry }
    this.client = new PulsarClient({
      serviceUrl,
      token: this.token,
      tls,
      listenerName: options.listener,
      operationTimeoutMs: options.operationTimeoutMs,
      backoff: options.backoff,
      logger: clientLogger(this.logger),
      onResubscribed: options.onReconnect,
    })
  }

  async connect(): Promise<void> {
    if (this.closed) throw this.closedError()
    const retry = createRetry(this.connectRetry)
    await retry(
      async (bail) => {
        try {
          await this.client.connect()
        } catch (err) {
          const error = this.toError(err, `cannot connect to Pulsar at ${this.address}`)
          if (!error.retriable || this.closed) bail(error)
          throw error
        }
      },
      {
        onRetry: (err, retryCount, retryTime) =>
          this.logger.warn(
            { broker: this.address, retry: retryCount + 1, inMs: retryTime, err: this.scrub(err) },
            'cannot connect to Pulsar; retrying',
          ),
      },
    ).catch((err: unknown) => {
      throw err instanceof RetriesExhaustedError
        ? this.toError(err.cause, `cannot connect to Pulsar at ${this.address}`)
        : err
    })
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<TransportConsumer> {
    const consumer = await this.subscribeTo(
      queue,
      {
        subscription: options.subscription,
        subscriptionType: 'Shared',
        receiverQueueSize: Math.max(MIN_RECEIVER_QUEUE, options.concurrency),
        maxUnacked: options.concurrency,
        durable: true,
        initialPosition: options.startAt === 'earliest' ? 'Earliest' : 'Latest',
      },
      onDelivery,
    )
    this.requestConsumers.add(consumer)
    return {
      close: () => {
        this.requestConsumers.delete(consumer)
        return consumer.close()
      },
    }
  }

  /** Every request consumer subscribed on a live connection (readiness). */
  get ready(): boolean {
    if (this.closed) return false
    for (const consumer of this.requestConsumers) if (!consumer.attached) return false
    return true
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<TransportConsumer> {
    const consumer = await this.subscribeTo(
      queue,
      {
        subscription: `toolbridge-${randomUUID()}`,
        subscriptionType: 'Exclusive',
        receiverQueueSize: MIN_RECEIVER_QUEUE,
        maxUnacked: MIN_RECEIVER_QUEUE,
        durable: false,
        initialPosition: 'Latest',
      },
      onDelivery,
    )
    return { close: () => consumer.close() }
  }

  async publish(queue: string, body: Uint8Array, properties: Properties): Promise<void> {
    if (body.byteLength > this.maxMessageBytes) {
      throw new ToolbridgeError(
        'too-large',
        `a message of ${body.byteLength} bytes for ${queue} is over Pulsar's limit of ${this.maxMessageBytes} bytes`,
      )
    }
    const topic = this.topicOf(queue)
    const producer = this.producers.get(topic) ?? (await this.producerFor(topic))
    try {
      await producer.send(body, { properties })
    } catch (err) {
      throw this.toError(err, `Pulsar did not take the message for ${topic}`)
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.client.close()
  }

  // ---------------------------------------------------------------- internals

  private topicOf(queue: string): string {
    let topic = this.topics.get(queue)
    if (!topic) {
      topic = pulsarTopic(parseQueueName(queue))
      this.topics.set(queue, topic)
    }
    return topic
  }

  private async subscribeTo(
    queue: string,
    options: {
      subscription: string
      subscriptionType: 'Shared' | 'Exclusive'
      receiverQueueSize: number
      maxUnacked: number
      durable: boolean
      initialPosition: 'Latest' | 'Earliest'
    },
    onDelivery: OnDelivery,
  ): Promise<Consumer> {
    if (this.closed) throw this.closedError()
    const topic = this.topicOf(queue)
    try {
      return await this.client.subscribe({
        topic,
        ...options,
        listener: (message) => this.deliver(topic, message, onDelivery),
        onError: (err) =>
          this.logger.warn({ broker: this.address, topic, err: err.message }, 'Pulsar message not delivered'),
      })
    } catch (err) {
      throw this.toError(err, `cannot subscribe ${options.subscription} on ${topic}`)
    }
  }

  private deliver(topic: string, message: Message, onDelivery: OnDelivery): void {
    const delivery = deliveryOf(
      {
        body: message.payload,
        properties: message.properties,
        redelivered: message.redeliveryCount > 0,
        timestamp: message.publishTime,
      },
      (ack) => (ack ? message.ack() : message.nack()),
    )
    handOver(onDelivery, delivery, this.logger, { broker: this.address, topic })
  }

  private producerFor(topic: string): Promise<Producer> {
    if (this.closed) return Promise.reject(this.closedError())
    let creating = this.creating.get(topic)
    if (!creating) {
      creating = this.client.createProducer({ topic }).then(
        (producer) => {
          this.producers.set(topic, producer)
          this.creating.delete(topic)
          return producer
        },
        (err: unknown) => {
          this.creating.delete(topic) // the next publish tries again
          throw this.toError(err, `cannot create a producer on ${topic}`)
        },
      )
      this.creating.set(topic, creating)
    }
    return creating
  }

  /** A ToolbridgeError saying what failed: a refused login or certificate is a config error, a too-big message too-large, the rest unavailable. */
  private toError(err: unknown, what: string): ToolbridgeError {
    if (err instanceof ToolbridgeError) return err
    const message = `${what}: ${this.scrub(err)}`
    if (isPulsarError(err)) {
      if (err.code === 'MessageTooBig') return new ToolbridgeError('too-large', message, { cause: err })
      if (err.code === 'AuthenticationError' || err.code === 'AuthorizationError')
        return new ToolbridgeError('config', message, { cause: err })
      // A certificate or service URL that does not work will not work on the next try either.
      if (err.code === 'ConnectError' && !err.retriable) return new ToolbridgeError('config', message, { cause: err })
      return new ToolbridgeError('unavailable', message, { cause: err, retriable: err.retriable })
    }
    return new ToolbridgeError('unavailable', message, { cause: err, retriable: true })
  }

  private closedError(): ToolbridgeError {
    return closedError('Pulsar', this.address)
  }
}

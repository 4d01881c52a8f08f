/**
 * Apache Kafka (@platformatic/kafka), laid out exactly as TrustGraph's Kafka
 * backend lays it out (trustgraph-base 2.11.1,
 * `trustgraph/base/async_kafka_backend.py`), so TrustGraph's clients and the
 * bridge meet on the same topics and groups:
 *
 * - every logical queue is a topic `topicspace.class.topic`
 *   (`request:tg:joke` and `non-persistent://tg/request/joke` both →
 *   `tg.request.joke`);
 * - `consume()` joins the consumer group named by the subscription
 *   (`<service-id>-request` for a tool service): replicas compete, each
 *   partition read by one member (reader.ts);
 * - `subscribe()` reads in a group of its own, seeing every message;
 * - a record is the body bytes as value (UTF-8 JSON), the properties as
 *   headers with UTF-8 values, and no key.
 *
 * Topics: TrustGraph's come from broker auto-creation with one partition.
 * A topic the bridge needs that does not exist yet is created with the URL's
 * `partitions` (default 1) and TrustGraph's retention (7 days for `flow`,
 * 5 minutes otherwise); existing topics are left as they are. So that the
 * messages of one streamed answer stay in order on a topic of several
 * partitions, records go to the partition the `id` header hashes to.
 *
 * Publishing resolves when the broker has acknowledged the record (the
 * partition leader; all in-sync replicas for `flow`, as TrustGraph). While
 * the broker is unreachable a publish keeps trying for up to
 * `waitForConnectionMs`. Records up to 10 MB, as TrustGraph's producer; a
 * broker whose `message.max.bytes` is lower refuses them, and the error says
 * so.
 *
 * Security (TLS, SASL PLAIN and SCRAM) and the partition count come from the
 * broker URL (url.ts). The password never appears in a log line or an
 * error.
 */
import { Admin, findErrorBy, ProduceAcks, Producer, stringSerializer } from '@platformatic/kafka'
import type { MessageToProduce, SASLMechanismValue } from '@platformatic/kafka'
import { isToolbridgeError, ToolbridgeError } from '../../../shared/errors.ts'
import { kafkaTopic, parseQueueName } from '../../../shared/queues.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import {
  BROKER_CONNECT_RETRY,
  BROKER_RECONNECT_RETRY,
  createRetry,
  RetriesExhaustedError,
  type Retrier,
  type RetryOptions,
} from '../../support/retry.ts'
import { describeKafkaError, isRefusal, isTooLarge, isTopicAlreadyThere, isUnknownTopic } from './errors.ts'
import { TopicReader, type ClientOptions } from './reader.ts'
import { parseKafkaUrl, type KafkaConnection } from './url.ts'
import { asBuffer, closedError, redact, scrubber } from '../adapter-parts.ts'
import type { ConsumeOptions, Consumer, OnDelivery, Properties, Transport } from '../transport.ts'

/** What TrustGraph's producer sends at most (aiokafka `max_request_size`). */
export const KAFKA_MAX_MESSAGE_BYTES = 10 * 1024 * 1024
export const DEFAULT_WAIT_FOR_CONNECTION_MS = 30_000
/** TrustGraph's `create_topic` retention: 7 days for `flow`, 5 minutes for the rest. */
const RETENTION_MS = { flow: 7 * 24 * 60 * 60 * 1000, other: 5 * 60 * 1000 }
const PUBLISH_RETRY_MS = 250
/** A created topic must show up in the metadata within this long. */
const TOPIC_VISIBLE_TIMEOUT_MS = 10_000

export interface KafkaTransportOptions {
  logger?: Logger
  connectRetry?: RetryOptions
  reconnectRetry?: RetryOptions
  /** How long a publish keeps trying while the broker is unreachable. */
  waitForConnectionMs?: number
  /** Client id the broker sees (logs, quotas). */
  clientId?: string
  /** Called each time a consumer is back after losing its connection (metrics). */
  onReconnect?: () => void
}

/** A small, stable hash of the `id` header: every record of one answer lands on the same partition. */
function partitionOf(id: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Route {
  topic: string
  acks: number
  retentionMs: number
}

export class KafkaTransport implements Transport {
  readonly kind = 'kafka'
  readonly address: string
  readonly maxMessageBytes = KAFKA_MAX_MESSAGE_BYTES
  /** Partitions of each topic this transport has to create. */
  readonly partitions: number

  private readonly connection: KafkaConnection
  /** An error's text (nested causes included) without the password. */
  private readonly scrub: (err: unknown) => string
  private readonly client: ClientOptions
  private readonly logger: Logger
  private readonly onReconnect: (() => void) | undefined
  private readonly connectRetry: Retrier
  private readonly reconnectRetry: Retrier
  private readonly waitForConnectionMs: number
  private producer: Producer<Buffer, Buffer, string, string> | undefined
  private admin: Admin | undefined
  private connected = false
  private closed = false
  private readonly readers = new Set<TopicReader>()
  private readonly routes = new Map<string, Route>()
  /** Topics known to exist, or being created. */
  private readonly topics = new Map<string, Promise<void>>()
  private roundRobin = 0

  constructor(broker: string, options: KafkaTransportOptions = {}) {
    this.connection = parseKafkaUrl(broker)
    this.partitions = this.connection.partitions
    this.scrub = scrubber(this.connection.sasl?.password, describeKafkaError)
    this.address = redact(broker)
    this.logger = options.logger ?? silentLogger
    this.onReconnect = options.onReconnect
    this.connectRetry = createRetry({ ...BROKER_CONNECT_RETRY, ...options.connectRetry })
    this.reconnectRetry = createRetry({ ...BROKER_RECONNECT_RETRY, ...options.reconnectRetry })
    this.waitForConnectionMs = options.waitForConnectionMs ?? DEFAULT_WAIT_FOR_CONNECTION_MS
    const { brokers, sasl, tls } = this.connection
    this.client = {
      clientId: options.clientId ?? 'toolbridge',
      bootstrapBrokers: brokers,
      ...(sasl
        ? {
            sasl: { mechanism: sasl.mechanism as SASLMechanismValue, username: sasl.username, password: sasl.password },
          }
        : {}),
      ...(tls ? { tls } : {}),
      connectTimeout: 5_000,
      // Each operation retries a few times quickly; beyond that the transport's own retries take over.
      retries: 3,
      retryDelay: 250,
    }
  }

  /** Connected, with every consumer in its group (readiness). */
  get ready(): boolean {
    if (!this.connected || this.closed) return false
    for (const reader of this.readers) if (!reader.attached) return false
    return true
  }

  async connect(): Promise<void> {
    if (this.closed) throw this.closedError()
    if (this.connected) return
    const admin = new Admin(this.client)
    admin.on('error', () => {}) // failures reach the caller of each operation
    try {
      await this.connectRetry(
        async (bail) => {
          if (this.closed) bail(this.closedError())
          try {
            await admin.metadata({ topics: [] })
          } catch (err) {
            if (isRefusal(err))
              bail(
                new ToolbridgeError('config', `${this.address}: the broker refused the connection: ${this.scrub(err)}`),
              )
            throw err
          }
        },
        {
          onRetry: (err, retryCount, retryTime) =>
            this.logger.warn(
              { broker: this.address, retry: retryCount + 1, inMs: retryTime, err: this.scrub(err) },
              'cannot connect to Kafka; retrying',
            ),
        },
      )
    } catch (err) {
      await admin.close().catch(() => {})
      if (isToolbridgeError(err) && !(err instanceof RetriesExhaustedError)) throw err
      const cause = err instanceof RetriesExhaustedError ? err.cause : err
      throw new ToolbridgeError('unavailable', `cannot connect to Kafka at ${this.address}: ${this.scrub(cause)}`, {
        cause,
        retriable: true,
      })
    }
    this.admin = admin
    const producer = new Producer<Buffer, Buffer, string, string>({
      ...this.client,
      serializers: { headerKey: stringSerializer, headerValue: stringSerializer },
      // Up to 64 requests in flight at once share the connection.
      maxInflights: 64,
      partitioner: (message) => {
        const id = (message.headers as Properties | undefined)?.id
        return id === undefined ? this.roundRobin++ & 0x7fffffff : partitionOf(id)
      },
    })
    producer.on('error', () => {}) // failures reach the caller of each send
    this.producer = producer
    this.connected = true
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer> {
    return this.read(queue, options.subscription, 'competing', options.concurrency, onDelivery, options.startAt)
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer> {
    // A group of its own, as TrustGraph's `<subscription>-<uuid>` response groups.
    return this.read(
      queue,
      `toolbridge-response-${crypto.randomUUID()}`,
      'subscriber',
      Number.POSITIVE_INFINITY,
      onDelivery,
    )
  }

  async publish(queue: string, body: Uint8Array, properties: Properties): Promise<void> {
    const producer = this.producer
    if (!producer || this.closed)
      throw this.closed
        ? this.closedError()
        : new ToolbridgeError('unavailable', `${this.address}: not connected`, { retriable: true })
    if (body.byteLength > this.maxMessageBytes) {
      throw new ToolbridgeError(
        'too-large',
        `message of ${body.byteLength} bytes is over Kafka's limit of ${this.maxMessageBytes} (TrustGraph's producer limit)`,
      )
    }
    const route = this.route(queue)
    const ensured = this.topics.get(route.topic)
    await (ensured ?? this.ensureTopic(route))
    const message: MessageToProduce<Buffer, Buffer, string, string> = {
      topic: route.topic,
      value: asBuffer(body),
      headers: properties,
    }
    const deadline = Date.now() + this.waitForConnectionMs
    for (;;) {
      try {
        await producer.send({ messages: [message], acks: route.acks })
        return
      } catch (err) {
        const error = this.publishError(route.topic, body.byteLength, err)
        if (!error.retriable || this.closed || Date.now() + PUBLISH_RETRY_MS > deadline) throw error
        await sleep(PUBLISH_RETRY_MS)
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.readers].map((reader) => reader.shutdown()))
    this.readers.clear()
    await Promise.all([this.producer?.close().catch(() => {}), this.admin?.close().catch(() => {})])
  }

  // --- topics -----------------------------------------------------------------

  private route(queue: string): Route {
    let route = this.routes.get(queue)
    if (!route) {
      const name = parseQueueName(queue)
      const flow = name.cls === 'flow'
      route = {
        topic: kafkaTopic(name),
        acks: flow ? ProduceAcks.ALL : ProduceAcks.LEADER,
        retentionMs: flow ? RETENTION_MS.flow : RETENTION_MS.other,
      }
      this.routes.set(queue, route)
    }
    return route
  }

  /** Creates the topic if it does not exist, with the configured partitions; once per topic per transport. */
  private ensureTopic(route: Route): Promise<void> {
    let ensured = this.topics.get(route.topic)
    if (!ensured) {
      ensured = this.createIfMissing(route)
      this.topics.set(route.topic, ensured)
      ensured.catch(() => this.topics.delete(route.topic))
    }
    return ensured
  }

  private async createIfMissing(route: Route): Promise<void> {
    const admin = this.admin
    if (!admin) throw new ToolbridgeError('unavailable', `${this.address}: not connected`, { retriable: true })
    const { topic } = route
    if (await this.topicExists(admin, topic)) return
    try {
      await admin.createTopics({
        topics: [topic],
        partitions: this.partitions,
        replicas: -1, // the broker's default.replication.factor
        configs: [{ name: 'retention.ms', value: String(route.retentionMs) }],
      })
      this.logger.info({ broker: this.address, topic, partitions: this.partitions }, 'created Kafka topic')
    } catch (err) {
      if (!isTopicAlreadyThere(err)) {
        throw new ToolbridgeError('unavailable', `cannot create Kafka topic ${topic}: ${this.scrub(err)}`, {
          cause: err,
          retriable: !isRefusal(err),
        })
      }
    }
    const deadline = Date.now() + TOPIC_VISIBLE_TIMEOUT_MS
    while (!(await this.topicExists(admin, topic))) {
      if (Date.now() > deadline)
        throw new ToolbridgeError('unavailable', `Kafka topic ${topic} was created but is not visible`, {
          retriable: true,
        })
      await sleep(100)
    }
  }

  private async topicExists(admin: Admin, topic: string): Promise<boolean> {
    try {
      const metadata = await admin.metadata({ topics: [topic], forceUpdate: true })
      return metadata.topics.get(topic)?.partitions.every((p) => p.leader >= 0) ?? false
    } catch (err) {
      if (isUnknownTopic(err) || findErrorBy(err as Error, 'apiId', 'LEADER_NOT_AVAILABLE')) return false
      throw new ToolbridgeError('unavailable', `cannot look up Kafka topic ${topic}: ${this.scrub(err)}`, {
        cause: err,
        retriable: !isRefusal(err),
      })
    }
  }

  // --- consuming --------------------------------------------------------------

  private async read(
    queue: string,
    groupId: string,
    role: 'competing' | 'subscriber',
    concurrency: number,
    onDelivery: OnDelivery,
    startAt: ConsumeOptions['startAt'] = 'latest',
  ): Promise<Consumer> {
    if (this.closed) throw this.closedError()
    if (!this.connected) throw new ToolbridgeError('unavailable', `${this.address}: not connected`, { retriable: true })
    const route = this.route(queue)
    await this.ensureTopic(route)
    const reader = new TopicReader({
      topic: route.topic,
      groupId,
      role,
      concurrency,
      startAt,
      onDelivery,
      client: this.client,
      reconnectRetry: this.reconnectRetry,
      logger: this.logger,
      address: this.address,
      onReconnect: this.onReconnect,
    })
    try {
      await reader.start()
    } catch (err) {
      await reader.shutdown()
      throw new ToolbridgeError(
        'unavailable',
        `cannot consume Kafka topic ${route.topic} in group ${groupId}: ${this.scrub(err)}`,
        {
          cause: err,
          retriable: !isRefusal(err),
        },
      )
    }
    if (this.closed) {
      await reader.shutdown()
      throw this.closedError()
    }
    this.readers.add(reader)
    return {
      close: async () => {
        await reader.close()
      },
    }
  }

  // --- errors -----------------------------------------------------------------

  private publishError(topic: string, bytes: number, err: unknown): ToolbridgeError {
    const message = this.scrub(err)
    if (isTooLarge(err)) {
      return new ToolbridgeError(
        'too-large',
        `Kafka refused the ${bytes}-byte message for ${topic}: ${message}. ` +
          `The broker's message.max.bytes (or the topic's max.message.bytes) must allow ${KAFKA_MAX_MESSAGE_BYTES} bytes, as TrustGraph's producer sends`,
        { cause: err },
      )
    }
    return new ToolbridgeError('unavailable', `Kafka did not take the message for ${topic}: ${message}`, {
      cause: err,
      retriable: !isRefusal(err) && !/^PLT_KFK_USER$/.test((err as { code?: string })?.code ?? ''),
    })
  }

  private closedError(): ToolbridgeError {
    return closedError('Kafka', this.address)
  }
}

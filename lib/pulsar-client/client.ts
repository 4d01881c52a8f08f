/**
 * The client: options, one connection per broker (pooled), topic lookup, and
 * the factory for producers and consumers.
 *
 * Lookup follows the binary protocol: ask the service URL; a `Redirect`
 * answer means ask the named broker (authoritatively, if it says so); a
 * `Connect` answer names the broker that owns the topic. With
 * `proxy_through_service_url` the socket goes to the service URL (a Pulsar
 * proxy) and CONNECT names the broker in `proxy_to_broker_url`.
 */
import { readFileSync } from 'node:fs'
import { attachWithRetry, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.ts'
import type { ClientContext, ClientLogger, ClientResource } from './client-context.ts'
import { Connection, type Authentication, type TlsSettings } from './connection.ts'
import { Consumer, type ConsumerOptions } from './consumer.ts'
import { PulsarError, PulsarServerError } from './errors.ts'
import { Producer, type ProducerOptions } from './producer.ts'
import { LookupType } from './proto.ts'

export interface ClientOptions {
  /** `pulsar://host:6650` or `pulsar+ssl://host:6651`. */
  serviceUrl: string
  /** Token authentication: the token, or a function that reads the current one. */
  token?: string | (() => string | Promise<string>)
  /** Any other authentication method (its name and data). */
  authentication?: Authentication
  /** For `pulsar+ssl://`. */
  tls?: { caFile?: string; ca?: string | Buffer; validateHostname?: boolean; allowInsecure?: boolean }
  /** The advertised listener to ask lookups for (brokers with several `advertisedListeners`). */
  listenerName?: string
  /** Lookups, producer and consumer creation, closes. Default 30 s. */
  operationTimeoutMs?: number
  /** TCP + TLS + CONNECT. Default 10 s. */
  connectTimeoutMs?: number
  /** Ping when quiet this long; close when a ping goes unanswered as long. Default 30 s. */
  keepAliveMs?: number
  /** Waits between reconnection attempts. Default 100 ms doubling to 2 s. */
  backoff?: BackoffOptions
  logger?: ClientLogger
  /** Called each time a consumer has resubscribed after losing its connection. */
  onResubscribed?: () => void
}

const silent: ClientLogger = { debug() {}, info() {}, warn() {}, error() {} }
const MAX_REDIRECTS = 20

export class PulsarClient implements ClientContext {
  readonly serviceUrl: string
  readonly logger: ClientLogger
  readonly operationTimeoutMs: number
  readonly backoff: BackoffOptions
  closed = false

  private readonly tls: TlsSettings | undefined
  private readonly auth: Authentication | undefined
  private readonly listenerName: string | undefined
  private readonly connectTimeoutMs: number
  private readonly onResubscribed: (() => void) | undefined
  private readonly keepAliveMs: number
  private readonly pool = new Map<string, Promise<Connection>>()
  private readonly resources = new Set<ClientResource>()
  private readonly checkedTopics = new Set<string>()
  private nextProducerId = 1
  private nextConsumerId = 1

  constructor(options: ClientOptions) {
    const url = new URL(options.serviceUrl)
    if (url.protocol !== 'pulsar:' && url.protocol !== 'pulsar+ssl:') {
      throw new PulsarError(
        'ConnectError',
        `service URL "${options.serviceUrl}" must start with pulsar:// or pulsar+ssl://`,
        { retriable: false },
      )
    }
    this.serviceUrl = `${url.protocol}//${url.host}`
    this.logger = options.logger ?? silent
    this.onResubscribed = options.onResubscribed
    this.operationTimeoutMs = options.operationTimeoutMs ?? 30_000
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    this.keepAliveMs = options.keepAliveMs ?? 30_000
    this.backoff = options.backoff ?? DEFAULT_BACKOFF
    this.listenerName = options.listenerName || undefined
    const token = options.token
    this.auth =
      options.authentication ??
      (token === undefined || token === ''
        ? undefined
        : { method: 'token', data: typeof token === 'function' ? token : () => token })
    if (url.protocol === 'pulsar+ssl:') {
      const t = options.tls ?? {}
      this.tls = {
        ca: t.ca ?? (t.caFile ? readFileSync(t.caFile) : undefined),
        validateHostname: t.validateHostname ?? false,
        allowInsecure: t.allowInsecure ?? false,
      }
    }
  }

  /** Connects to the service URL once, so a wrong address or token shows at once. */
  async connect(): Promise<void> {
    await this.connection(this.serviceUrl, this.serviceUrl)
  }

  async createProducer(options: ProducerOptions): Promise<Producer> {
    this.assertOpen()
    await this.checkNotPartitioned(options.topic)
    const producer = new Producer(this, this.nextProducerId++, options)
    this.resources.add(producer)
    try {
      await producer.start()
    } catch (err) {
      this.resources.delete(producer)
      throw err
    }
    return producer
  }

  async subscribe(options: ConsumerOptions): Promise<Consumer> {
    this.assertOpen()
    await this.checkNotPartitioned(options.topic)
    const consumer = new Consumer(this, this.nextConsumerId++, options)
    this.resources.add(consumer)
    try {
      await consumer.start()
    } catch (err) {
      this.resources.delete(consumer)
      throw err
    }
    return consumer
  }

  /** Closes every producer and consumer (pending sends fail with AlreadyClosed), then every connection. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.resources].map((r) => r.close().catch(() => {})))
    const connections = await Promise.allSettled([...this.pool.values()])
    this.pool.clear()
    for (const c of connections) if (c.status === 'fulfilled') c.value.close()
  }

  forget(resource: ClientResource): void {
    this.resources.delete(resource)
  }

  resubscribed(): void {
    this.onResubscribed?.()
  }

  async connectionFor(topic: string): Promise<Connection> {
    const { logical, physical } = await this.lookup(topic)
    return this.connection(logical, physical)
  }

  /** The broker that serves `topic`: where to connect, and through which address. */
  async lookup(topic: string): Promise<{ logical: string; physical: string }> {
    let logical = this.serviceUrl
    let physical = this.serviceUrl
    let authoritative = false
    for (let hop = 0; hop < MAX_REDIRECTS; hop++) {
      const connection = await this.connection(logical, physical)
      const answer = await connection.request(
        'lookup',
        { topic, authoritative, advertised_listener_name: this.listenerName },
        `lookup of ${topic}`,
      )
      if (answer.type !== 'lookup_response')
        throw new PulsarError('ProtocolError', `lookup of ${topic}: unexpected ${answer.type}`, { retriable: true })
      const r = answer.body
      if (r.response === LookupType.Failed || r.response === undefined) {
        throw new PulsarServerError(r.error ?? 0, `lookup of ${topic}: ${r.message ?? 'failed'}`)
      }
      const broker = this.tls ? r.brokerServiceUrlTls : r.brokerServiceUrl
      if (!broker) {
        throw new PulsarError(
          'ProtocolError',
          `lookup of ${topic}: the broker gave no ${this.tls ? 'TLS ' : ''}service URL${this.listenerName ? ` for listener "${this.listenerName}"` : ''}`,
          { retriable: false },
        )
      }
      logical = broker
      physical = r.proxy_through_service_url ? this.serviceUrl : broker
      if (r.response === LookupType.Connect) return { logical, physical }
      authoritative = r.authoritative ?? false
    }
    throw new PulsarError('TooManyRedirects', `lookup of ${topic}: more than ${MAX_REDIRECTS} redirects`, {
      retriable: true,
    })
  }

  /** This client speaks to non-partitioned topics only (TrustGraph's kind); a partitioned one is refused clearly. */
  private async checkNotPartitioned(topic: string): Promise<void> {
    if (this.checkedTopics.has(topic)) return
    // Retried like attaching: the broker may be restarting, or a pooled connection dead but not yet noticed.
    await attachWithRetry(() => this.askPartitions(topic), {
      backoff: this.backoff,
      deadline: Date.now() + this.operationTimeoutMs,
      stopped: () => this.closed,
      onRetry: (err, attempt, waitMs) =>
        this.logger.debug('pulsar: partition metadata not available yet; retrying', {
          topic,
          attempt,
          waitMs,
          err: (err as Error).message,
        }),
    })
  }

  private async askPartitions(topic: string): Promise<void> {
    const connection = await this.connection(this.serviceUrl, this.serviceUrl)
    const answer = await connection.request('partitioned_metadata', { topic }, `partition metadata of ${topic}`)
    if (answer.type === 'partitioned_metadata_response') {
      const r = answer.body
      if (r.response === 1)
        throw new PulsarServerError(r.error ?? 0, `partition metadata of ${topic}: ${r.message ?? 'failed'}`)
      if ((r.partitions ?? 0) > 0) {
        throw new PulsarError(
          'Unsupported',
          `${topic} is partitioned (${r.partitions} partitions): this client serves non-partitioned topics`,
          { retriable: false },
        )
      }
    }
    this.checkedTopics.add(topic)
  }

  private async connection(logical: string, physical: string): Promise<Connection> {
    this.assertOpen()
    const key = `${logical} ${physical}`
    const existing = this.pool.get(key)
    if (existing) {
      const connection = await existing.catch(() => undefined)
      if (connection && !connection.closed) return connection
      if (this.pool.get(key) === existing) this.pool.delete(key)
      return this.connection(logical, physical)
    }
    const opening = Connection.open({
      logicalAddress: logical,
      physicalAddress: physical,
      tls: this.tls,
      auth: this.auth,
      connectTimeoutMs: this.connectTimeoutMs,
      operationTimeoutMs: this.operationTimeoutMs,
      keepAliveMs: this.keepAliveMs,
      logger: this.logger,
    })
    this.pool.set(key, opening)
    opening.then(
      (connection) => {
        this.logger.debug('pulsar: connected', { broker: logical, via: physical, server: connection.serverVersion })
        connection.onClose((reason) => {
          if (this.pool.get(key) === opening) this.pool.delete(key)
          if (!this.closed) this.logger.debug('pulsar: connection closed', { broker: logical, reason: reason.message })
        })
        if (this.closed) connection.close()
      },
      () => {
        if (this.pool.get(key) === opening) this.pool.delete(key)
      },
    )
    return opening
  }

  private assertOpen(): void {
    if (this.closed) throw new PulsarError('AlreadyClosed', 'the Pulsar client is closed', { retriable: false })
  }
}

/**
 * RabbitMQ (AMQP 0-9-1, amqplib), laid out exactly as TrustGraph's aio-pika
 * backend lays it out (trustgraph-base 2.11.1,
 * `trustgraph/base/async_rabbitmq_backend.py`), so the bridge and TrustGraph
 * declare the same things and neither gets PRECONDITION_FAILED:
 *
 * - every logical queue is a fanout exchange `topicspace.class.topic`
 *   (`request:tg:joke` → `tg.request.joke`): durable, not auto-delete, not
 *   internal, no arguments — for every class;
 * - `consume()` (competing consumers) declares the named queue
 *   `<exchange>.<subscription>` with durable = (class is `flow`),
 *   exclusive = false, auto-delete = false, no arguments, and binds it;
 * - `subscribe()` declares an anonymous exclusive auto-delete non-durable
 *   queue per subscriber (TrustGraph's response/notify consumers) and binds it;
 * - a message is the body bytes as given, `content-type: application/json`,
 *   delivery mode 2 (persistent) for `flow` and 1 otherwise, and the
 *   properties as an AMQP headers table of strings (none when empty).
 *
 * Flow control: each consumer has its own channel with prefetch =
 * `concurrency`; publishes go through one confirm channel per connection and
 * resolve when the broker confirms. An ack or nack for a delivery whose
 * channel has closed since is a no-op: the broker has already requeued it.
 *
 * Connection: `noDelay` (without it a round trip costs ~45 ms), heartbeats
 * every 10 s. When the connection drops (broker restart, network), it
 * reconnects with backoff (`bridge/support/retry.ts`), then redeclares and rebinds
 * every exchange, queue, consumer and subscriber before it counts as
 * connected again. Publishes, consume() and subscribe() made meanwhile wait
 * for that, up to `waitForConnectionMs`. amqplib 2 has a `recovery` option of
 * its own; it is not used because the bridge needs what it does not give:
 * a wrong password must fail at once rather than be retried forever, callers
 * must wait a bounded time, and a publish cut off before its confirm must be
 * sent again on the next connection.
 *
 * TLS (`amqps://`): settings come from the URL query, spelt like RabbitMQ's
 * own URI query parameters (https://www.rabbitmq.com/docs/uri-query-parameters):
 * `cacertfile`, `certfile`, `keyfile` (PEM file paths, read once when the
 * transport is created), `verify=verify_none` to skip certificate checks
 * (default `verify_peer`), `server_name_indication=<host>` to override SNI
 * and the name checked. Without `cacertfile`, Node's own CA list is used.
 * `heartbeat=<seconds>` in the query overrides the default of 10.
 *
 * The password never appears in a log line or an error: `address` is
 * redacted, and error texts are scrubbed of it.
 */
import { readFileSync } from 'node:fs'
import { connect as amqpConnect } from 'amqplib'
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options, SocketOptions } from 'amqplib'
import { ConfigError, isRecord, messageOf, ToolbridgeError } from '../../../shared/errors.ts'
import { parseQueueName, rabbitExchange, rabbitQueue } from '../../../shared/queues.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { BROKER_CONNECT_RETRY, BROKER_RECONNECT_RETRY, createRetry, RetriesExhaustedError, type Retrier, type RetryOptions } from '../../support/retry.ts'
import { asBuffer, closedError, deliveryOf, handOver, redact, scrubber } from '../edge.ts'
import type { ConsumeOptions, Consumer, OnDelivery, Properties, Transport } from '../transport.ts'
import { coalesceWrites } from './coalesce-writes.ts'

/** RabbitMQ's default `max_message_size` (3.8+): 128 MiB (SPEC §5). */
export const RABBITMQ_MAX_MESSAGE_BYTES = 128 * 1024 * 1024

export const DEFAULT_HEARTBEAT_SECONDS = 10
export const DEFAULT_WAIT_FOR_CONNECTION_MS = 30_000
const CONNECT_TIMEOUT_MS = 10_000
/** Response subscribers ack at once; this only bounds what the broker pushes ahead. */
const SUBSCRIBER_PREFETCH = 1024


export interface RabbitTransportOptions {
  logger?: Logger
  /** Backoff for the first connection (connect()). */
  connectRetry?: RetryOptions
  /** Backoff for reconnecting after the connection dropped. */
  reconnectRetry?: RetryOptions
  /** How long publish(), consume() and subscribe() wait for a connection while reconnecting. */
  waitForConnectionMs?: number
  /** Called each time a lost connection is back, consumers restored (metrics). */
  onReconnect?: () => void
}

// What TrustGraph's aio-pika backend declares (see the top comment).
const EXCHANGE_OPTIONS: Options.AssertExchange = { durable: true, autoDelete: false, internal: false }
const SUBSCRIBER_QUEUE_OPTIONS: Options.AssertQueue = { durable: false, exclusive: true, autoDelete: true }
const CONTENT_TYPE = 'application/json'

/** One live AMQP connection and what was set up on it. */
class Session {
  readonly model: ChannelModel
  alive = true
  publisher: ConfirmChannel | undefined
  publisherOpening: Promise<ConfirmChannel> | undefined
  /** Exchanges being declared for publishing on this connection. */
  readonly exchanges = new Map<string, Promise<void>>()
  /** Those already declared: publishing to them needs no await (the per-message path). */
  readonly declared = new Set<string>()

  constructor(model: ChannelModel) {
    this.model = model
  }
}

/** A consumer's channel on one connection. */
class Attachment {
  readonly channel: Channel
  open = true
  /** No more deliveries will come: close the channel once the last one is settled. */
  cancelled = false
  outstanding = 0
  consumerTag: string | undefined

  constructor(channel: Channel) {
    this.channel = channel
  }

  closeIfIdle(): void {
    if (this.open && this.cancelled && this.outstanding === 0) {
      this.open = false
      this.channel.close().catch(() => {})
    }
  }
}

/** A consumer or subscriber as asked for: kept across reconnects and re-attached on each new connection. */
class Binding {
  readonly exchange: string
  /** The named queue of competing consumers; undefined for a subscriber's anonymous queue. */
  readonly queue: { name: string; durable: boolean } | undefined
  readonly prefetch: number
  readonly onDelivery: OnDelivery
  closed = false
  /** The connection it is attached (or being attached) to, and that attempt. */
  session: Session | undefined
  attaching: Promise<void> | undefined
  attachment: Attachment | undefined

  constructor(exchange: string, queue: Binding['queue'], prefetch: number, onDelivery: OnDelivery) {
    this.exchange = exchange
    this.queue = queue
    this.prefetch = prefetch
    this.onDelivery = onDelivery
  }

  get description(): string {
    return this.queue ? `queue ${this.queue.name}` : `a private queue on ${this.exchange}`
  }
}

interface Waiter {
  resolve(session: Session): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

interface Route {
  exchange: string
  options: Options.Publish
}

const TLS_PARAMS = ['cacertfile', 'certfile', 'keyfile', 'verify', 'server_name_indication'] as const

/** Splits the broker URL into what amqplib takes and TLS socket options (see the top comment). */
function parseBrokerUrl(broker: string): { url: string; tls: SocketOptions; password: string } {
  const url = new URL(broker)
  const query = url.searchParams
  const tls: SocketOptions = {}
  const file = (param: string): Buffer | undefined => {
    const path = query.get(param)
    if (path === null) return undefined
    try {
      return readFileSync(path)
    } catch (err) {
      throw new ConfigError('--broker', `${param}: cannot read "${path}": ${(err as NodeJS.ErrnoException).code ?? messageOf(err)}`)
    }
  }
  if (url.protocol === 'amqps:') {
    const ca = file('cacertfile')
    const cert = file('certfile')
    const key = file('keyfile')
    if (ca) tls.ca = ca
    if (cert) tls.cert = cert
    if (key) tls.key = key
    const verify = query.get('verify')
    if (verify !== null && verify !== 'verify_peer' && verify !== 'verify_none') {
      throw new ConfigError('--broker', `verify: "${verify}" must be verify_peer or verify_none`)
    }
    if (verify === 'verify_none') tls.rejectUnauthorized = false
    const sni = query.get('server_name_indication')
    if (sni) tls.servername = sni
  } else if (TLS_PARAMS.some((p) => query.has(p))) {
    throw new ConfigError('--broker', `TLS settings (${TLS_PARAMS.join(', ')}) need an amqps:// URL`)
  }
  for (const param of TLS_PARAMS) query.delete(param)
  if (!query.has('heartbeat')) query.set('heartbeat', String(DEFAULT_HEARTBEAT_SECONDS))
  return { url: url.toString(), tls, password: decodeURIComponent(url.password) }
}

/** A wrong password or vhost, or a certificate that does not check out: retrying cannot help. */
function refusal(err: unknown, message: string): string | undefined {
  if (/ACCESS[-_]REFUSED|NOT[-_]ALLOWED|\b403\b|\b530\b/.test(message)) return 'the broker refused the login'
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? ''
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) return 'the broker\'s TLS certificate was not accepted'
  return undefined
}

const utf8 = new TextDecoder()

/** AMQP header values as strings: TrustGraph sends strings; anything else is rendered. */
function headerText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (value instanceof Uint8Array) return utf8.decode(value)
  if (isRecord(value) && typeof value['!'] === 'string' && 'value' in value) {
    return typeof value.value === 'object' ? JSON.stringify(value.value) : String(value.value) // timestamp, decimal
  }
  return JSON.stringify(value)
}

function toProperties(headers: Record<string, unknown> | undefined): Properties {
  const properties: Properties = {}
  if (!headers) return properties
  for (const key of Object.keys(headers)) {
    const text = headerText(headers[key])
    if (text !== undefined) properties[key] = text
  }
  return properties
}

function hasAny(properties: Properties): boolean {
  for (const _ in properties) return true
  return false
}

/** Why the broker closed a channel, for the publishes that were waiting on it. */
const channelErrors = new WeakMap<Channel, Error>()

export class RabbitTransport implements Transport {
  readonly kind = 'rabbitmq'
  readonly address: string
  readonly maxMessageBytes = RABBITMQ_MAX_MESSAGE_BYTES

  private readonly url: string
  private readonly socketOptions: SocketOptions
  /** An error's text without the password. */
  private readonly scrub: (err: unknown) => string
  private readonly logger: Logger
  private readonly onReconnect: (() => void) | undefined
  private readonly connectRetry: Retrier
  private readonly reconnectRetry: Retrier
  private readonly waitForConnectionMs: number
  private readonly aborter = new AbortController()

  private session: Session | undefined
  /** The first connection or a reconnection, while under way. */
  private establishing: Promise<Session> | undefined
  private closed = false
  private readonly bindings = new Set<Binding>()
  private readonly waiters = new Set<Waiter>()
  private readonly routes = new Map<string, Route>()

  constructor(broker: string, options: RabbitTransportOptions = {}) {
    const parsed = parseBrokerUrl(broker)
    this.url = parsed.url
    this.scrub = scrubber(parsed.password)
    this.address = redact(broker)
    this.socketOptions = {
      ...parsed.tls,
      noDelay: true,
      timeout: CONNECT_TIMEOUT_MS,
      clientProperties: { connection_name: 'toolbridge' },
    }
    this.logger = options.logger ?? silentLogger
    this.onReconnect = options.onReconnect
    this.connectRetry = createRetry({ ...BROKER_CONNECT_RETRY, ...options.connectRetry })
    this.reconnectRetry = createRetry({ ...BROKER_RECONNECT_RETRY, ...options.reconnectRetry })
    this.waitForConnectionMs = options.waitForConnectionMs ?? DEFAULT_WAIT_FOR_CONNECTION_MS
  }

  async connect(): Promise<void> {
    if (this.closed) throw this.closedError()
    if (this.session) return
    if (!this.establishing) this.establish(true)
    await this.establishing
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer> {
    const name = parseQueueName(queue)
    const exchange = rabbitExchange(name)
    return this.bind(new Binding(exchange, rabbitQueue(name, options.subscription), options.concurrency, onDelivery))
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer> {
    return this.bind(new Binding(rabbitExchange(parseQueueName(queue)), undefined, SUBSCRIBER_PREFETCH, onDelivery))
  }

  async publish(queue: string, body: Uint8Array, properties: Properties): Promise<void> {
    const route = this.route(queue)
    if (body.byteLength > this.maxMessageBytes) {
      throw new ToolbridgeError(
        'too-large',
        `message of ${body.byteLength} bytes is over RabbitMQ's default max_message_size of ${this.maxMessageBytes} bytes`,
      )
    }
    const content = asBuffer(body)
    // No headers table when there are no properties, as TrustGraph sends it.
    const options = hasAny(properties) ? { ...route.options, headers: properties } : route.options
    let deadline: number | undefined
    for (;;) {
      const session = this.session ?? (await this.waitForSession((deadline ??= Date.now() + this.waitForConnectionMs)))
      try {
        return await this.publishOn(session, route.exchange, content, options)
      } catch (err) {
        if (this.closed) throw this.closedError()
        // The connection is up, so the broker refused this message or the channel: a new connection would not help.
        if (session.alive) throw this.publishError(route.exchange, err)
        // The connection went before the broker confirmed: send it again on the next one. The broker may have
        // routed the first copy; a duplicate answer is harmless, clients keep the first (SPEC §5).
        deadline ??= Date.now() + this.waitForConnectionMs
        if (Date.now() > deadline) {
          throw new ToolbridgeError('unavailable', `RabbitMQ at ${this.address} kept dropping the connection: ${this.scrub(err)}`, {
            cause: err,
            retriable: true,
          })
        }
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.aborter.abort(this.closedError())
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.reject(this.closedError())
    }
    this.waiters.clear()
    for (const binding of this.bindings) binding.closed = true
    this.bindings.clear()
    const session = this.session
    this.session = undefined
    if (session) {
      session.alive = false
      // Unacked deliveries go back to their queues when the connection closes.
      await session.model.close().catch(() => {})
    }
  }

  /** Connected, with every consumer restored (a session becomes current only then). */
  get ready(): boolean {
    return this.session !== undefined && this.session.alive
  }

  // --- connection -----------------------------------------------------------

  /** Connects (first time) or reconnects, with backoff, then makes the new session current. */
  private establish(initial: boolean): void {
    const started = Date.now()
    const retry = initial ? this.connectRetry : this.reconnectRetry
    const attempt = retry(
      async (bail) => {
        if (this.closed) bail(this.closedError())
        try {
          return await this.open()
        } catch (err) {
          const message = this.scrub(err)
          const refused = initial ? refusal(err, message) : undefined
          if (refused) bail(new ToolbridgeError('config', `${this.address}: ${refused}: ${message}`))
          throw err
        }
      },
      {
        signal: this.aborter.signal,
        onRetry: (err, retryCount, retryTime) =>
          this.logger.warn(
            { broker: this.address, retry: retryCount + 1, inMs: retryTime, err: this.scrub(err) },
            initial ? 'cannot connect to RabbitMQ; retrying' : 'cannot reconnect to RabbitMQ; retrying',
          ),
      },
    )
    this.establishing = attempt.then(
      (session) => {
        this.establishing = undefined
        if (this.closed) {
          session.model.close().catch(() => {})
          throw this.closedError()
        }
        if (!session.alive) {
          // It closed between open() and here, while not yet current, so nobody else noticed: go again.
          this.establish(false)
          return this.establishing!
        }
        this.session = session
        for (const waiter of this.waiters) {
          clearTimeout(waiter.timer)
          waiter.resolve(session)
        }
        this.waiters.clear()
        if (!initial) {
          this.logger.info({ broker: this.address, afterMs: Date.now() - started }, 'reconnected to RabbitMQ')
          this.onReconnect?.()
        }
        return session
      },
      (err: unknown) => {
        this.establishing = undefined
        const error =
          err instanceof ToolbridgeError && !(err instanceof RetriesExhaustedError)
            ? err
            : new ToolbridgeError('unavailable', `cannot connect to RabbitMQ at ${this.address}: ${this.scrub(err)}`, {
                retriable: true,
              })
        for (const waiter of this.waiters) {
          clearTimeout(waiter.timer)
          waiter.reject(error)
        }
        this.waiters.clear()
        if (!this.closed && !initial) this.logger.error({ broker: this.address, err: error.message }, 'gave up reconnecting to RabbitMQ')
        throw error
      },
    )
    if (!initial) this.establishing.catch(() => {}) // reported above; waiters got the error
  }

  /** One connection attempt: connect, open the confirm channel, re-attach every consumer. */
  private async open(): Promise<Session> {
    const model = await amqpConnect(this.url, this.socketOptions)
    coalesceWrites(model)
    const session = new Session(model)
    model.on('error', (err: Error) => this.logger.warn({ broker: this.address, err: this.scrub(err) }, 'RabbitMQ connection error'))
    model.on('close', () => this.lost(session))
    model.on('blocked', (reason: string) => this.logger.warn({ broker: this.address, reason }, 'RabbitMQ blocked publishing'))
    model.on('unblocked', () => this.logger.info({ broker: this.address }, 'RabbitMQ unblocked publishing'))
    try {
      await this.publisher(session)
      // Bindings added while this runs are picked up by the next pass.
      for (;;) {
        const pending = [...this.bindings].filter((binding) => binding.session !== session)
        if (pending.length === 0) break
        await Promise.all(
          pending.map((binding) =>
            this.attach(binding, session).catch((err: unknown) => {
              if (!session.alive) throw err
              this.logger.error({ broker: this.address, err: this.scrub(err) }, `cannot restore the consumer of ${binding.description}`)
            }),
          ),
        )
      }
      if (!session.alive) throw new Error('the connection closed while consumers were being restored')
      if (this.closed) throw this.closedError()
      return session
    } catch (err) {
      session.alive = false
      await model.close().catch(() => {})
      throw err
    }
  }

  /** The connection closed: unless we closed it, reconnect. */
  private lost(session: Session): void {
    session.alive = false
    if (this.session !== session) return // not yet current: open() fails and its retrier tries again
    this.session = undefined
    if (this.closed) return
    this.logger.warn({ broker: this.address }, 'lost the RabbitMQ connection; reconnecting')
    this.establish(false)
  }

  /** The current session, or the next one within the deadline. */
  private waitForSession(deadline: number): Promise<Session> {
    if (this.session) return Promise.resolve(this.session)
    if (this.closed) return Promise.reject(this.closedError())
    if (!this.establishing) {
      return Promise.reject(new ToolbridgeError('unavailable', `${this.address}: not connected`, { retriable: true }))
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter)
          reject(
            new ToolbridgeError('unavailable', `no connection to RabbitMQ at ${this.address} within ${this.waitForConnectionMs} ms`, {
              retriable: true,
            }),
          )
        }, Math.max(0, deadline - Date.now())),
      }
      this.waiters.add(waiter)
    })
  }

  private closedError(): ToolbridgeError {
    return closedError('RabbitMQ', this.address)
  }

  // --- publishing -----------------------------------------------------------

  private route(queue: string): Route {
    let route = this.routes.get(queue)
    if (!route) {
      const name = parseQueueName(queue)
      const durable = rabbitQueue(name, '').durable
      route = { exchange: rabbitExchange(name), options: { contentType: CONTENT_TYPE, deliveryMode: durable ? 2 : 1 } }
      this.routes.set(queue, route)
    }
    return route
  }

  private publisher(session: Session): Promise<ConfirmChannel> {
    if (session.publisher) return Promise.resolve(session.publisher)
    session.publisherOpening ??= (async () => {
      try {
        const channel = await session.model.createConfirmChannel()
        channel.on('error', (err: Error) => {
          channelErrors.set(channel, err)
          this.logger.warn({ broker: this.address, err: this.scrub(err) }, 'RabbitMQ closed the publishing channel')
        })
        channel.on('close', () => {
          if (session.publisher === channel) session.publisher = undefined
        })
        session.publisher = channel
        return channel
      } finally {
        session.publisherOpening = undefined
      }
    })()
    return session.publisherOpening
  }

  /** Declares a fanout exchange once per connection, on a channel of its own so a refusal closes only that. */
  private declareExchange(session: Session, exchange: string): Promise<void> {
    let declared = session.exchanges.get(exchange)
    if (!declared) {
      declared = (async () => {
        const channel = await session.model.createChannel()
        channel.on('error', () => {}) // reported by the rejection below
        try {
          await channel.assertExchange(exchange, 'fanout', EXCHANGE_OPTIONS)
          session.declared.add(exchange)
        } finally {
          channel.close().catch(() => {})
        }
      })()
      session.exchanges.set(exchange, declared)
      declared.catch(() => session.exchanges.delete(exchange))
    }
    return declared
  }

  private async publishOn(session: Session, exchange: string, content: Buffer, options: Options.Publish): Promise<void> {
    const channel = session.publisher ?? (await this.publisher(session))
    if (!session.declared.has(exchange)) await this.declareExchange(session, exchange)
    await new Promise<void>((resolve, reject) => {
      // A channel the broker closed fails its pending confirms with "channel closed": report the broker's reason.
      const fail = (err: unknown) => reject(channelErrors.get(channel) ?? err)
      try {
        channel.publish(exchange, '', content, options, (err: unknown) => (err ? fail(err) : resolve()))
      } catch (err) {
        fail(err) // the channel closed just now
      }
    })
  }

  private publishError(exchange: string, err: unknown): ToolbridgeError {
    const cause = err
    const message = this.scrub(cause)
    if (/larger than configured max size/.test(message)) {
      return new ToolbridgeError('too-large', `RabbitMQ refused the message for ${exchange}: ${message}`, { cause })
    }
    return new ToolbridgeError('unavailable', `RabbitMQ did not take the message for ${exchange}: ${message}`, {
      cause,
      retriable: true,
    })
  }

  // --- consuming ------------------------------------------------------------

  /** Registers a consumer and resolves once its queue is bound on a live connection. */
  private async bind(binding: Binding): Promise<Consumer> {
    if (this.closed) throw this.closedError()
    this.bindings.add(binding)
    const deadline = Date.now() + this.waitForConnectionMs
    try {
      await this.attachSomewhere(binding, deadline)
    } catch (err) {
      this.bindings.delete(binding)
      binding.closed = true
      throw err
    }
    return { close: () => this.unbind(binding) }
  }

  private async attachSomewhere(binding: Binding, deadline: number): Promise<void> {
    for (;;) {
      const session = this.session ?? (await this.waitForSession(deadline))
      try {
        return await this.attach(binding, session)
      } catch (err) {
        if (this.closed) throw this.closedError()
        if (session.alive) throw err
        // The connection went while attaching: the next connection attaches it (open()); wait for that.
      }
    }
  }

  private attach(binding: Binding, session: Session): Promise<void> {
    if (binding.session === session && binding.attaching) return binding.attaching
    binding.session = session
    binding.attaching = this.declareAndConsume(binding, session)
    binding.attaching.catch(() => {}) // whoever awaits it reports it
    return binding.attaching
  }

  private async declareAndConsume(binding: Binding, session: Session): Promise<void> {
    let channel: Channel
    try {
      channel = await session.model.createChannel()
    } catch (err) {
      throw new ToolbridgeError('unavailable', `cannot open a channel: ${this.scrub(err)}`, { cause: err, retriable: true })
    }
    const attachment = new Attachment(channel)
    let channelError: Error | undefined
    channel.on('error', (err: Error) => {
      channelError = err
      this.logger.warn({ broker: this.address, err: this.scrub(err) }, `RabbitMQ closed the channel of ${binding.description}`)
    })
    channel.on('close', () => {
      attachment.open = false
      // Connection-wide closes emit the connection's 'close' right after: look once that has run.
      queueMicrotask(() => this.attachmentClosed(binding, attachment, session))
    })
    try {
      await channel.assertExchange(binding.exchange, 'fanout', EXCHANGE_OPTIONS)
      let queue: string
      if (binding.queue) {
        await channel.assertQueue(binding.queue.name, { durable: binding.queue.durable, exclusive: false, autoDelete: false })
        queue = binding.queue.name
      } else {
        queue = (await channel.assertQueue('', SUBSCRIBER_QUEUE_OPTIONS)).queue
      }
      await channel.bindQueue(queue, binding.exchange, '')
      await channel.prefetch(binding.prefetch)
      binding.attachment = attachment
      const { consumerTag } = await channel.consume(queue, (message) => this.deliver(binding, attachment, message), {
        noAck: false,
      })
      attachment.consumerTag = consumerTag
    } catch (err) {
      channel.close().catch(() => {})
      if (binding.attachment === attachment) binding.attachment = undefined
      const cause = channelError ?? err
      const message = this.scrub(cause)
      throw new ToolbridgeError('unavailable', `cannot consume from ${binding.description} (exchange ${binding.exchange}): ${message}`, {
        cause,
        retriable: !/PRECONDITION[-_]FAILED|ACCESS[-_]REFUSED/.test(message),
      })
    }
    if (binding.closed) await this.cancel(attachment)
  }

  private deliver(binding: Binding, attachment: Attachment, message: ConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled the consumer (its queue was deleted): attach again.
      attachment.cancelled = true
      attachment.closeIfIdle()
      if (binding.closed || binding.attachment !== attachment) return
      this.logger.warn({ broker: this.address }, `RabbitMQ cancelled the consumer of ${binding.description}; consuming again`)
      this.reattach(binding)
      return
    }
    attachment.outstanding++
    const delivery = deliveryOf(
      {
        body: message.content,
        properties: toProperties(message.properties.headers as Record<string, unknown> | undefined),
        redelivered: message.fields.redelivered,
      },
      (ack) => {
        attachment.outstanding--
        if (attachment.open) {
          try {
            if (ack) attachment.channel.ack(message)
            else attachment.channel.nack(message, false, true)
          } catch {
            // The channel closed under us; the broker has requeued the message already.
          }
        }
        attachment.closeIfIdle()
      },
    )
    handOver(binding.onDelivery, delivery, this.logger, { broker: this.address }, `delivery handler of ${binding.description} threw`)
  }

  /** A consumer's channel closed while its connection stayed up (a channel error): consume again. */
  private attachmentClosed(binding: Binding, attachment: Attachment, session: Session): void {
    if (binding.closed || binding.attachment !== attachment || !session.alive || this.session !== session) return
    this.reattach(binding)
  }

  private reattach(binding: Binding): void {
    binding.session = undefined
    binding.attachment = undefined
    this.attachSomewhere(binding, Date.now() + this.waitForConnectionMs).catch((err: unknown) =>
      this.logger.error({ broker: this.address, err: this.scrub(err) }, `cannot consume from ${binding.description} again`),
    )
  }

  private async unbind(binding: Binding): Promise<void> {
    if (binding.closed) return
    binding.closed = true
    this.bindings.delete(binding)
    const attachment = binding.attachment
    if (attachment) await this.cancel(attachment)
  }

  /** No new deliveries; those handed out can still be settled, then the channel closes. */
  private async cancel(attachment: Attachment): Promise<void> {
    if (!attachment.open || attachment.cancelled) return
    attachment.cancelled = true
    if (attachment.consumerTag) await attachment.channel.cancel(attachment.consumerTag).catch(() => {})
    attachment.closeIfIdle()
  }
}

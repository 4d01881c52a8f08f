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
 * The parts: url.ts reads the broker URL (TLS settings in its query),
 * connection.ts keeps one connection up and reconnects, bindings.ts keeps
 * the consumers and subscribers and attaches them to each new connection,
 * and this file publishes: through one confirm channel per connection,
 * resolving when the broker confirms. Each consumer has its own channel with
 * prefetch = `concurrency`. Publishes, consume() and subscribe() made while
 * reconnecting wait for the connection, up to `waitForConnectionMs`, and a
 * publish cut off before its confirm is sent again on the next connection.
 *
 * The password never appears in a log line or an error: `address` is
 * redacted, and error texts are scrubbed of it.
 */
import type { Channel, ConfirmChannel, Options } from 'amqplib'
import { ToolbridgeError } from '../../../shared/errors.ts'
import { parseQueueName, rabbitExchange, rabbitQueue } from '../../../shared/queues.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { BROKER_CONNECT_RETRY, BROKER_RECONNECT_RETRY, createRetry, type RetryOptions } from '../../support/retry.ts'
import { asBuffer, redact, scrubber } from '../adapter-parts.ts'
import type { ConsumeOptions, Consumer, OnDelivery, Properties, Transport } from '../transport.ts'
import { Binding, Bindings, EXCHANGE_OPTIONS } from './bindings.ts'
import { RabbitConnection, type Session } from './connection.ts'
import { parseRabbitUrl } from './url.ts'

/** RabbitMQ's default `max_message_size` (3.8+): 128 MiB. */
export const RABBITMQ_MAX_MESSAGE_BYTES = 128 * 1024 * 1024

export const DEFAULT_WAIT_FOR_CONNECTION_MS = 30_000
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

const CONTENT_TYPE = 'application/json'

interface Route {
  exchange: string
  options: Options.Publish
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

  /** An error's text without the password. */
  private readonly scrub: (err: unknown) => string
  private readonly logger: Logger
  private readonly waitForConnectionMs: number
  private readonly connection: RabbitConnection
  private readonly bindings: Bindings
  private readonly routes = new Map<string, Route>()

  constructor(broker: string, options: RabbitTransportOptions = {}) {
    const parsed = parseRabbitUrl(broker)
    this.address = redact(broker)
    this.scrub = scrubber(parsed.password)
    this.logger = options.logger ?? silentLogger
    this.waitForConnectionMs = options.waitForConnectionMs ?? DEFAULT_WAIT_FOR_CONNECTION_MS
    this.connection = new RabbitConnection({
      url: parsed.url,
      tls: parsed.tls,
      address: this.address,
      scrub: this.scrub,
      logger: this.logger,
      connectRetry: createRetry({ ...BROKER_CONNECT_RETRY, ...options.connectRetry }),
      reconnectRetry: createRetry({ ...BROKER_RECONNECT_RETRY, ...options.reconnectRetry }),
      waitForConnectionMs: this.waitForConnectionMs,
      onReconnect: options.onReconnect,
      prepare: async (session) => {
        await this.publisher(session)
        await this.bindings.restore(session)
      },
    })
    this.bindings = new Bindings({
      connection: this.connection,
      address: this.address,
      scrub: this.scrub,
      logger: this.logger,
      waitForConnectionMs: this.waitForConnectionMs,
    })
  }

  connect(): Promise<void> {
    return this.connection.connect()
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer> {
    const name = parseQueueName(queue)
    const exchange = rabbitExchange(name)
    return this.bindings.bind(
      new Binding(exchange, rabbitQueue(name, options.subscription), options.concurrency, onDelivery),
    )
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer> {
    return this.bindings.bind(
      new Binding(rabbitExchange(parseQueueName(queue)), undefined, SUBSCRIBER_PREFETCH, onDelivery),
    )
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
    // The AMQP timestamp (seconds) is what a consumer judges a request's age by (maxAge).
    const stamped = { ...route.options, timestamp: Math.floor(Date.now() / 1000) }
    const options = hasAny(properties) ? { ...stamped, headers: properties } : stamped
    let deadline: number | undefined
    for (;;) {
      const session =
        this.connection.session ??
        (await this.connection.waitForSession((deadline ??= Date.now() + this.waitForConnectionMs)))
      try {
        return await this.publishOn(session, route.exchange, content, options)
      } catch (err) {
        if (this.connection.closed) throw this.connection.closedError()
        // The connection is up, so the broker refused this message or the channel: a new connection would not help.
        if (session.alive) throw this.publishError(route.exchange, err)
        // The connection went before the broker confirmed: send it again on the next one. The broker may have
        // routed the first copy; a duplicate answer is harmless, clients keep the first
        // (docs/wire-contract.md#acknowledgement-and-delivery).
        deadline ??= Date.now() + this.waitForConnectionMs
        if (Date.now() > deadline) {
          throw new ToolbridgeError(
            'unavailable',
            `RabbitMQ at ${this.address} kept dropping the connection: ${this.scrub(err)}`,
            {
              cause: err,
              retriable: true,
            },
          )
        }
      }
    }
  }

  async close(): Promise<void> {
    if (this.connection.closed) return
    this.bindings.closeAll()
    await this.connection.close()
  }

  /** Connected, with every consumer restored. */
  get ready(): boolean {
    return this.connection.ready
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

  private async publishOn(
    session: Session,
    exchange: string,
    content: Buffer,
    options: Options.Publish,
  ): Promise<void> {
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
}

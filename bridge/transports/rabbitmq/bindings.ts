/**
 * The RabbitMQ transport's consumers and subscribers, as TrustGraph's
 * aio-pika backend declares them (see rabbitmq-transport.ts): each one is
 * kept as asked for (a `Binding`) and attached to every new connection, on a
 * channel of its own with prefetch = its concurrency. An ack or nack for a
 * delivery whose channel has closed since is a no-op: the broker has already
 * requeued it. A channel the broker closes, or a consumer it cancels, is
 * attached again while the connection stays up.
 */
import type { Channel, ConsumeMessage, Options } from 'amqplib'
import { isRecord, ToolbridgeError } from '../../../shared/errors.ts'
import type { Logger } from '../../support/logger.ts'
import { deliveryOf, handOver } from '../adapter-parts.ts'
import type { Consumer, OnDelivery, Properties } from '../transport.ts'
import type { RabbitConnection, Session } from './connection.ts'

// What TrustGraph's aio-pika backend declares (see rabbitmq-transport.ts).
export const EXCHANGE_OPTIONS: Options.AssertExchange = { durable: true, autoDelete: false, internal: false }
const SUBSCRIBER_QUEUE_OPTIONS: Options.AssertQueue = { durable: false, exclusive: true, autoDelete: true }

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
export class Binding {
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

/**
 * When the message entered the broker: the `timestamp_in_ms` header that
 * RabbitMQ's set_header_timestamp interceptor adds (ms), else the AMQP
 * `timestamp` property a producer set (seconds). TrustGraph's RabbitMQ
 * backend sets neither; the bridge then counts from when it first saw it.
 */
function brokerTimestamp(message: ConsumeMessage): number | undefined {
  const inMs = Number(message.properties.headers?.timestamp_in_ms)
  if (Number.isFinite(inMs)) return inMs
  const seconds: unknown = message.properties.timestamp
  return typeof seconds === 'number' ? seconds * 1000 : undefined
}

export class Bindings {
  private readonly connection: RabbitConnection
  private readonly address: string
  private readonly scrub: (err: unknown) => string
  private readonly logger: Logger
  private readonly waitForConnectionMs: number
  private readonly bindings = new Set<Binding>()

  constructor(options: {
    connection: RabbitConnection
    address: string
    scrub: (err: unknown) => string
    logger: Logger
    waitForConnectionMs: number
  }) {
    this.connection = options.connection
    this.address = options.address
    this.scrub = options.scrub
    this.logger = options.logger
    this.waitForConnectionMs = options.waitForConnectionMs
  }

  /** Registers a consumer and resolves once its queue is bound on a live connection. */
  async bind(binding: Binding): Promise<Consumer> {
    if (this.connection.closed) throw this.connection.closedError()
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

  /** Attaches every binding to a new connection; bindings added while this runs are picked up by the next pass. */
  async restore(session: Session): Promise<void> {
    for (;;) {
      const pending = [...this.bindings].filter((binding) => binding.session !== session)
      if (pending.length === 0) break
      await Promise.all(
        pending.map((binding) =>
          this.attach(binding, session).catch((err: unknown) => {
            if (!session.alive) throw err
            this.logger.error(
              { broker: this.address, err: this.scrub(err) },
              `cannot restore the consumer of ${binding.description}`,
            )
          }),
        ),
      )
    }
  }

  /** The transport is closing: no binding is attached again. */
  closeAll(): void {
    for (const binding of this.bindings) binding.closed = true
    this.bindings.clear()
  }

  private async attachSomewhere(binding: Binding, deadline: number): Promise<void> {
    for (;;) {
      const session = this.connection.session ?? (await this.connection.waitForSession(deadline))
      try {
        return await this.attach(binding, session)
      } catch (err) {
        if (this.connection.closed) throw this.connection.closedError()
        if (session.alive) throw err
        // The connection went while attaching: the next connection attaches it (restore()); wait for that.
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
      throw new ToolbridgeError('unavailable', `cannot open a channel: ${this.scrub(err)}`, {
        cause: err,
        retriable: true,
      })
    }
    const attachment = new Attachment(channel)
    let channelError: Error | undefined
    channel.on('error', (err: Error) => {
      channelError = err
      this.logger.warn(
        { broker: this.address, err: this.scrub(err) },
        `RabbitMQ closed the channel of ${binding.description}`,
      )
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
        await channel.assertQueue(binding.queue.name, {
          durable: binding.queue.durable,
          exclusive: false,
          autoDelete: false,
        })
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
      throw new ToolbridgeError(
        'unavailable',
        `cannot consume from ${binding.description} (exchange ${binding.exchange}): ${message}`,
        {
          cause,
          retriable: !/PRECONDITION[-_]FAILED|ACCESS[-_]REFUSED/.test(message),
        },
      )
    }
    if (binding.closed) await this.cancel(attachment)
  }

  private deliver(binding: Binding, attachment: Attachment, message: ConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled the consumer (its queue was deleted): attach again.
      attachment.cancelled = true
      attachment.closeIfIdle()
      if (binding.closed || binding.attachment !== attachment) return
      this.logger.warn(
        { broker: this.address },
        `RabbitMQ cancelled the consumer of ${binding.description}; consuming again`,
      )
      this.reattach(binding)
      return
    }
    attachment.outstanding++
    const delivery = deliveryOf(
      {
        body: message.content,
        properties: toProperties(message.properties.headers as Record<string, unknown> | undefined),
        redelivered: message.fields.redelivered,
        timestamp: brokerTimestamp(message),
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
    handOver(
      binding.onDelivery,
      delivery,
      this.logger,
      { broker: this.address },
      `delivery handler of ${binding.description} threw`,
    )
  }

  /** A consumer's channel closed while its connection stayed up (a channel error): consume again. */
  private attachmentClosed(binding: Binding, attachment: Attachment, session: Session): void {
    if (binding.closed || binding.attachment !== attachment || !session.alive || this.connection.session !== session)
      return
    this.reattach(binding)
  }

  private reattach(binding: Binding): void {
    binding.session = undefined
    binding.attachment = undefined
    this.attachSomewhere(binding, Date.now() + this.waitForConnectionMs).catch((err: unknown) =>
      this.logger.error(
        { broker: this.address, err: this.scrub(err) },
        `cannot consume from ${binding.description} again`,
      ),
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

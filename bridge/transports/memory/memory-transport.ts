/**
 * The embedded broker: no install, same semantics as the real ones, so tests
 * on it mean something.
 *
 * Each logical queue is a fanout point (like a RabbitMQ fanout exchange or a
 * Pulsar topic). Each subscription on it is a queue of its own that gets a
 * copy of every message: consumers sharing a subscription compete for its
 * messages (request queues); `subscribe()` makes a private one (response
 * queues). Nothing published before a subscription exists reaches it, as on
 * TrustGraph's non-persistent queues. Unacked messages of a closed consumer
 * and nacked ones are redelivered.
 */
import { ToolbridgeError } from '../../../shared/errors.ts'
import { logicalName, parseQueueName } from '../../../shared/queues.ts'
import { LinkedList } from '../../support/linked-list.ts'
import { deliveryOf } from '../adapter-parts.ts'
import type { ConsumeOptions, Consumer, OnDelivery, Properties, Transport } from '../transport.ts'

/** The largest default among real brokers that TrustGraph shares with us (Pulsar: 5 MB). */
export const MEMORY_MAX_MESSAGE_BYTES = 5 * 1024 * 1024

/**
 * What one subscription may hold undelivered before publishing to it is
 * refused (`unavailable`, retriable): the broker lives in the bridge's
 * memory, so a queue that nobody drains must not grow without end.
 */
export interface BacklogLimits {
  maxMessages: number
  maxBytes: number
}

export const MEMORY_BACKLOG_LIMITS: BacklogLimits = { maxMessages: 100_000, maxBytes: 256 * 1024 * 1024 }

interface Message {
  body: Uint8Array
  properties: Properties
  redelivered: boolean
  /** When it was published (Date.now()), as a broker stamps its messages. */
  timestamp: number
}

class MemoryConsumer implements Consumer {
  unacked = 0
  /** Bumped when held messages are taken back, so late acks of them are ignored. */
  epoch = 0
  /** Delivered and not settled yet. */
  readonly outstanding = new LinkedList<Message>()
  readonly subscription: Subscription
  readonly concurrency: number
  readonly onDelivery: OnDelivery

  constructor(subscription: Subscription, concurrency: number, onDelivery: OnDelivery) {
    this.subscription = subscription
    this.concurrency = concurrency
    this.onDelivery = onDelivery
  }

  /** No new deliveries; those handed out can still be acked or nacked. */
  async close(): Promise<void> {
    this.subscription.detach(this)
  }

  /** The connection is closing: hand over what already arrived, then give back what was not acked. */
  giveBack(): void {
    this.subscription.dispatch() // a real broker would have delivered it by now
    this.subscription.detach(this)
    this.subscription.requeue(this)
  }
}

/** One queue bound to a fanout point, with the consumers sharing it. */
class Subscription {
  readonly backlog: Message[] = []
  backlogBytes = 0
  consumers: MemoryConsumer[] = []
  private next = 0
  private scheduled = false
  /** Private subscriptions disappear with their only consumer. */
  private readonly exclusive: boolean
  private readonly onEmpty: () => void

  constructor(exclusive: boolean, onEmpty: () => void) {
    this.exclusive = exclusive
    this.onEmpty = onEmpty
  }

  enqueue(message: Message, front = false): void {
    this.backlogBytes += message.body.byteLength
    if (front) this.backlog.unshift(message)
    else this.backlog.push(message)
    this.schedule()
  }

  detach(consumer: MemoryConsumer): void {
    this.consumers = this.consumers.filter((c) => c !== consumer)
    if (this.exclusive && this.consumers.length === 0) this.onEmpty()
  }

  /** What a consumer held goes back, marked redelivered, ahead of newer messages. */
  requeue(consumer: MemoryConsumer): void {
    const held = consumer.outstanding.drain().reverse()
    consumer.epoch++
    consumer.unacked = 0
    for (const message of held) this.enqueue({ ...message, redelivered: true }, true)
  }

  /** Dispatch on a later tick: no handler runs inside publish(), as with a real broker. */
  schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.dispatch()
    })
  }

  dispatch(): void {
    while (this.backlog.length > 0) {
      const consumer = this.pickConsumer()
      if (!consumer) return
      const message = this.backlog.shift()!
      this.backlogBytes -= message.body.byteLength
      this.deliver(consumer, message)
    }
  }

  /** Round robin over consumers with free permits. */
  private pickConsumer(): MemoryConsumer | undefined {
    const n = this.consumers.length
    for (let i = 0; i < n; i++) {
      const consumer = this.consumers[(this.next + i) % n]!
      if (consumer.unacked < consumer.concurrency) {
        this.next = (this.next + i + 1) % n
        return consumer
      }
    }
    return undefined
  }

  private deliver(consumer: MemoryConsumer, message: Message): void {
    consumer.unacked++
    const epoch = consumer.epoch
    const node = consumer.outstanding.push(message)
    const delivery = deliveryOf(message, (ack) => {
      // After a requeue (epoch changed) the message is no longer this consumer's to settle.
      if (consumer.epoch !== epoch) return
      consumer.outstanding.remove(node)
      consumer.unacked--
      this.schedule()
      if (!ack) this.enqueue({ ...message, redelivered: true }, true)
    })
    consumer.onDelivery(delivery)
  }
}

/** The broker's state; several transports (bridge replicas, clients) may share one. */
export class MemoryBroker {
  private readonly queues = new Map<string, Map<string, Subscription>>()
  /** Queue name as given -> its logical name: parsed once, not on every publish. */
  private readonly keys = new Map<string, string>()
  private privateCount = 0
  private readonly limits: BacklogLimits

  constructor(limits: BacklogLimits = MEMORY_BACKLOG_LIMITS) {
    this.limits = limits
  }

  private key(queue: string): string {
    let key = this.keys.get(queue)
    if (key === undefined) {
      key = logicalName(parseQueueName(queue))
      this.keys.set(queue, key)
    }
    return key
  }

  subscription(queue: string, name: string | undefined): Subscription {
    const key = this.key(queue)
    let subscriptions = this.queues.get(key)
    if (!subscriptions) this.queues.set(key, (subscriptions = new Map()))
    const exclusive = name === undefined
    const subscriptionName = name ?? `private-${++this.privateCount}`
    let subscription = subscriptions.get(subscriptionName)
    if (!subscription) {
      subscription = new Subscription(exclusive, () => subscriptions.delete(subscriptionName))
      subscriptions.set(subscriptionName, subscription)
    }
    return subscription
  }

  publish(queue: string, body: Uint8Array, properties: Properties): void {
    const subscriptions = this.queues.get(this.key(queue))
    if (!subscriptions) return
    for (const [name, subscription] of subscriptions) {
      if (
        subscription.backlog.length >= this.limits.maxMessages ||
        subscription.backlogBytes + body.byteLength > this.limits.maxBytes
      ) {
        throw new ToolbridgeError(
          'unavailable',
          `embedded broker: ${queue} (${name}) already holds ${subscription.backlog.length} messages, ${subscription.backlogBytes} bytes, undelivered; try again later`,
          { retriable: true },
        )
      }
    }
    const timestamp = Date.now()
    for (const subscription of subscriptions.values()) {
      subscription.enqueue({ body, properties, redelivered: false, timestamp })
    }
  }
}

export class MemoryTransport implements Transport {
  readonly kind = 'memory'
  readonly address = 'memory://'
  readonly maxMessageBytes = MEMORY_MAX_MESSAGE_BYTES
  private readonly consumers = new Set<MemoryConsumer>()
  private connected = false
  readonly broker: MemoryBroker

  constructor(broker: MemoryBroker = new MemoryBroker()) {
    this.broker = broker
  }

  async connect(): Promise<void> {
    this.connected = true
  }

  async consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer> {
    return this.attach(this.broker.subscription(queue, options.subscription), options.concurrency, onDelivery)
  }

  async subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer> {
    return this.attach(this.broker.subscription(queue, undefined), Number.POSITIVE_INFINITY, onDelivery)
  }

  async publish(queue: string, body: Uint8Array, properties: Properties): Promise<void> {
    this.assertConnected()
    if (body.byteLength > this.maxMessageBytes) {
      throw new ToolbridgeError(
        'too-large',
        `message of ${body.byteLength} bytes is over the embedded broker's limit of ${this.maxMessageBytes}`,
      )
    }
    this.broker.publish(queue, body, properties)
  }

  async close(): Promise<void> {
    for (const consumer of this.consumers) consumer.giveBack()
    this.consumers.clear()
    this.connected = false
  }

  private attach(subscription: Subscription, concurrency: number, onDelivery: OnDelivery): Consumer {
    this.assertConnected()
    const consumer = new MemoryConsumer(subscription, concurrency, onDelivery)
    subscription.consumers.push(consumer)
    subscription.schedule()
    this.consumers.add(consumer)
    return consumer
  }

  private assertConnected(): void {
    if (!this.connected) throw new ToolbridgeError('unavailable', 'embedded broker: not connected', { retriable: true })
  }
}

/**
 * What the bridge needs from a broker, and nothing more. A transport knows
 * queues and bytes, never tool requests: decoding is the bridge's job.
 *
 * Queue names come in either spelling (docs/wire-contract.md#queue-names); each transport maps them with
 * `shared/queues.ts` the way TrustGraph's backend for that broker does.
 */

/** Message properties: Pulsar properties, AMQP headers, Kafka headers. */
export type Properties = Record<string, string>

export interface Delivery {
  readonly body: Uint8Array
  readonly properties: Properties
  /** True when the broker has handed this message out before. */
  readonly redelivered: boolean
  /**
   * When the message entered the broker, in ms since the epoch, by the
   * broker's or the producer's clock: the AMQP `timestamp` property
   * (RabbitMQ's `timestamp_in_ms` header where its interceptor sets one), the
   * Kafka record timestamp, the Pulsar publish time, the embedded broker's
   * publish time. Absent when the message carries none. Judged by the bridge
   * for `maxAge` (bridge/core/request-age.ts), which distrusts nonsense.
   */
  readonly timestamp?: number | undefined
  /** Done with it: the broker forgets it. */
  ack(): void
  /** Give it back: the broker redelivers it (to this or another consumer). */
  nack(): void
}

export type OnDelivery = (delivery: Delivery) => void

export interface ConsumeOptions {
  /** Consumers with the same subscription on one queue share its messages. */
  subscription: string
  /** At most this many unacknowledged deliveries at a time (prefetch / permits). */
  concurrency: number
  /**
   * Where a subscription the broker does not know yet starts: at the end
   * (default: what is published from now on), or at the earliest message the
   * broker still holds (Kafka, Pulsar; a RabbitMQ queue and a subscription of
   * the embedded broker hold messages only from their creation on, so there it
   * is the same as the end).
   */
  startAt?: 'latest' | 'earliest'
}

export interface Consumer {
  /**
   * Stops new deliveries. Those already handed out can still be acked or
   * nacked until the transport closes; then whatever is unacked goes back to
   * the queue for another consumer.
   */
  close(): Promise<void>
}

export interface Transport {
  /** Short name for logs: `memory`, `rabbitmq`, ... */
  readonly kind: string
  /** Where it is connected, with any password removed. */
  readonly address: string
  /** Largest message body the broker accepts by default. */
  readonly maxMessageBytes: number
  /**
   * Connected now, with every consumer attached (readiness). Absent on
   * transports that cannot lose their connection (the embedded broker).
   */
  readonly ready?: boolean
  connect(): Promise<void>
  /** Competing consumer on a request queue. Resolves once messages can arrive. */
  consume(queue: string, options: ConsumeOptions, onDelivery: OnDelivery): Promise<Consumer>
  /** A subscriber of its own that sees every message (response queues). Resolves once bound. */
  subscribe(queue: string, onDelivery: OnDelivery): Promise<Consumer>
  /** Resolves once the broker has taken the message. */
  publish(queue: string, body: Uint8Array, properties: Properties): Promise<void>
  close(): Promise<void>
}

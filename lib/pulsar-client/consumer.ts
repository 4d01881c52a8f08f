/**
 * A consumer on one topic and subscription, push style: messages go to
 * `listener` in arrival order, never more than `maxUnacked` at a time
 * (handed out and not yet acked or nacked); the rest wait in a local queue of
 * up to `receiverQueueSize`. Permits go back to the broker as messages are
 * handed out, in steps of half the queue, as Pulsar's own clients do.
 *
 * On a non-persistent topic the broker drops what it cannot deliver at once
 * to a consumer without permits, so the queue must be ample (≥ 1000); the
 * back-pressure is `maxUnacked`, which the broker never sees.
 *
 * Batches are unpacked, compressed payloads decompressed, checksums checked.
 * A batch is acked on the wire once all its messages are. A message that
 * cannot be read (bad checksum, undecodable) is acked with a validation error,
 * as Pulsar's clients do, and reported to `onError`. Encrypted and chunked
 * messages are not supported: reported, never acked, so another client may take them.
 *
 * When the broker closes the consumer or the connection drops, it
 * resubscribes with backoff; on a persistent topic the broker redelivers
 * what was not acked, so queued messages are dropped, while on a
 * non-persistent one they are kept (the broker will not send them again).
 */
import { attachWithRetry } from './backoff.ts'
import { unpackBatch } from './batch.ts'
import type { ClientContext } from './client-context.ts'
import { decompress } from './compression.ts'
import type { Connection, ConsumerListener } from './connection.ts'
import { PulsarError } from './errors.ts'
import type { MessagePart } from './frame.ts'
import {
  AckType,
  InitialPosition,
  SubType,
  ValidationError,
  type Incoming,
  type KeyValue,
  type MessageIdData,
} from './proto.ts'
import type { MessageId } from './producer.ts'

export type SubscriptionType = 'Exclusive' | 'Shared' | 'Failover'

export interface ConsumerOptions {
  topic: string
  subscription: string
  /** Default Exclusive, as in Pulsar's clients. */
  subscriptionType?: SubscriptionType
  /** Where a new subscription starts. Default Latest. */
  initialPosition?: 'Latest' | 'Earliest'
  /** Permits: how many messages the broker may push ahead. Default 1000. */
  receiverQueueSize?: number
  /** At most this many messages with the listener, not yet acked or nacked. Default: receiverQueueSize. */
  maxUnacked?: number
  consumerName?: string
  /** False: a non-durable subscription that leaves nothing behind on a persistent topic. Default true. */
  durable?: boolean
  /** On close(), remove the subscription rather than only detach. */
  unsubscribeOnClose?: boolean
  listener(message: Message): void
  /** A message that was dropped or could not be handed out. */
  onError?(error: PulsarError): void
}

export interface Message {
  readonly topic: string
  readonly id: MessageId
  readonly payload: Uint8Array
  readonly properties: Record<string, string>
  /** How often the broker has handed this message out before (0 the first time). */
  readonly redeliveryCount: number
  readonly publishTime: number
  readonly eventTime: number | undefined
  readonly producerName: string
  readonly sequenceId: number | undefined
  readonly partitionKey: string | undefined
  /** Done with it. A second settle is ignored. */
  ack(): void
  /** Give it back: the broker hands it out again (persistent topics; non-persistent ones drop it). */
  nack(): void
}

function propertiesOf(list: KeyValue[] | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (list) for (const { key, value } of list) out[key] = value
  return out
}

/** Acks of one batch: the entry is acked on the wire when the last of its messages is. */
interface BatchAcks {
  remaining: number
}

export class Consumer implements ConsumerListener {
  readonly topic: string
  readonly subscription: string
  readonly id: number
  private readonly client: ClientContext
  private readonly options: ConsumerOptions
  private readonly subType: number
  private readonly receiverQueueSize: number
  private readonly maxUnacked: number
  private readonly persistent: boolean
  private connection: Connection | undefined
  private queue: Message[] = []
  private head = 0
  private unacked = 0
  private permitsToReturn = 0
  private closed = false
  private reconnecting = false
  private pumping = false

  constructor(client: ClientContext, id: number, options: ConsumerOptions) {
    this.client = client
    this.id = id
    this.options = options
    this.topic = options.topic
    this.subscription = options.subscription
    this.subType = SubType[options.subscriptionType ?? 'Exclusive']
    this.receiverQueueSize = Math.max(1, options.receiverQueueSize ?? 1000)
    this.maxUnacked = Math.max(1, options.maxUnacked ?? this.receiverQueueSize)
    this.persistent = !options.topic.startsWith('non-persistent://')
  }

  async start(): Promise<void> {
    await attachWithRetry(() => this.attach(), {
      backoff: this.client.backoff,
      deadline: Date.now() + this.client.operationTimeoutMs,
      stopped: () => this.closed,
      onRetry: (err, attempt, waitMs) =>
        this.client.logger.debug('pulsar: not subscribed yet; retrying', {
          topic: this.topic,
          attempt,
          waitMs,
          err: (err as Error).message,
        }),
    })
  }

  /** Subscribed on a live connection: false while it resubscribes after losing one. */
  get attached(): boolean {
    return !this.reconnecting && !this.closed
  }

  /** Messages received and not yet handed to the listener. */
  get queued(): number {
    return this.queue.length - this.head
  }

  /** Asks the broker to hand out again everything this consumer holds unacked; the local queue is dropped. */
  redeliverUnacknowledgedMessages(): void {
    const dropped = this.queued
    this.queue = []
    this.head = 0
    const connection = this.connection
    if (!connection) return
    connection.write('redeliver', { consumer_id: this.id })
    this.returnPermits(dropped, true)
  }

  /** Stops deliveries and detaches (or unsubscribes). Messages already handed out may still be settled. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.client.forget(this)
    this.queue = []
    this.head = 0
    const connection = this.connection
    this.connection = undefined
    if (connection && !connection.closed) {
      connection.removeConsumer(this.id)
      const how = this.options.unsubscribeOnClose ? 'unsubscribe' : 'close_consumer'
      await connection
        .request(how, { consumer_id: this.id }, `${how} ${this.subscription} on ${this.topic}`)
        .catch(() => {})
    }
  }

  // ---------------------------------------------------------------- from the connection

  message(command: Incoming['message'], part: MessagePart): void {
    if (this.closed) return
    const id = command.message_id
    const { metadata } = part
    const count = metadata.num_messages_in_batch ?? 1
    if (!part.checksumOk)
      return this.discard(id, count, ValidationError.ChecksumMismatch, 'its checksum does not match')
    if ((metadata.encryption_keys?.length ?? 0) > 0 || (metadata.num_chunks_from_msg ?? 1) > 1) {
      const what = metadata.encryption_keys?.length ? 'encrypted' : 'chunked'
      this.returnPermits(count, false)
      this.options.onError?.(
        new PulsarError(
          'Unsupported',
          `a message on ${this.topic} is ${what}, which this client does not support; left unacked`,
          { retriable: false },
        ),
      )
      return
    }
    let payload: Uint8Array
    try {
      payload = decompress(metadata.compression ?? 0, part.payload, metadata.uncompressed_size ?? 0)
    } catch (err) {
      return this.discard(id, count, ValidationError.DecompressionError, (err as Error).message)
    }
    const redeliveryCount = command.redelivery_count ?? 0
    const base = {
      topic: this.topic,
      publishTime: metadata.publish_time,
      producerName: metadata.producer_name,
    }
    if (metadata.num_messages_in_batch === undefined) {
      this.queue.push(
        this.makeMessage(
          {
            ...base,
            id: { ledgerId: id.ledgerId, entryId: id.entryId, partition: id.partition ?? -1, batchIndex: -1 },
            payload,
            properties: propertiesOf(metadata.properties),
            redeliveryCount,
            eventTime: metadata.event_time || undefined,
            sequenceId: metadata.sequence_id,
            partitionKey: metadata.partition_key,
          },
          undefined,
        ),
      )
    } else {
      let entries: ReturnType<typeof unpackBatch>
      try {
        entries = unpackBatch(payload, count)
      } catch (err) {
        return this.discard(id, count, ValidationError.BatchDeSerializeError, (err as Error).message)
      }
      const acks: BatchAcks = { remaining: 0 }
      entries.forEach((entry, index) => {
        if (entry.metadata.compacted_out) return
        acks.remaining++
        this.queue.push(
          this.makeMessage(
            {
              ...base,
              id: { ledgerId: id.ledgerId, entryId: id.entryId, partition: id.partition ?? -1, batchIndex: index },
              payload: entry.payload,
              properties: propertiesOf(entry.metadata.properties),
              redeliveryCount,
              eventTime: entry.metadata.event_time || undefined,
              sequenceId: entry.metadata.sequence_id,
              partitionKey: entry.metadata.partition_key,
            },
            acks,
          ),
        )
      })
      const skipped = count - acks.remaining
      if (skipped > 0) this.returnPermits(skipped, false)
      if (acks.remaining === 0) this.sendAck(id)
    }
    this.pump()
  }

  closedByBroker(): void {
    this.detached()
  }

  connectionLost(): void {
    this.detached()
  }

  // ---------------------------------------------------------------- delivery

  private makeMessage(fields: Omit<Message, 'ack' | 'nack'>, batch: BatchAcks | undefined): Message {
    let settled = false
    const settle = (ack: boolean) => {
      if (settled) return
      settled = true
      this.unacked--
      // Acks go by position, so one for a message received before a reattach still counts.
      if (this.connection) {
        const wireId: MessageIdData = { ledgerId: fields.id.ledgerId, entryId: fields.id.entryId }
        if (ack) {
          if (!batch || --batch.remaining === 0) this.sendAck(wireId)
        } else if (this.subType === SubType.Shared) {
          this.connection.write('redeliver', { consumer_id: this.id, message_ids: [wireId] })
        } else {
          this.connection.write('redeliver', { consumer_id: this.id })
        }
      }
      this.pump()
    }
    return { ...fields, ack: () => settle(true), nack: () => settle(false) }
  }

  /** Hands out what the limit allows. Not re-entered: an ack inside the listener lets the running loop go on, in order. */
  private pump(): void {
    if (this.pumping) return
    this.pumping = true
    try {
      this.handOut()
    } finally {
      this.pumping = false
    }
  }

  private handOut(): void {
    while (this.head < this.queue.length && this.unacked < this.maxUnacked && !this.closed) {
      const message = this.queue[this.head]!
      this.queue[this.head++] = undefined as unknown as Message
      this.unacked++
      this.returnPermits(1, false)
      try {
        this.options.listener(message)
      } catch (err) {
        this.options.onError?.(
          new PulsarError('ProtocolError', `the listener threw: ${(err as Error).message}`, {
            retriable: false,
            cause: err,
          }),
        )
      }
    }
    if (this.head === this.queue.length) {
      this.queue = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
  }

  private returnPermits(n: number, now: boolean): void {
    this.permitsToReturn += n
    const connection = this.connection
    if (!connection || this.permitsToReturn === 0) return
    if (now || this.permitsToReturn >= Math.max(1, this.receiverQueueSize >> 1)) {
      connection.write('flow', { consumer_id: this.id, messagePermits: this.permitsToReturn })
      this.permitsToReturn = 0
    }
  }

  private sendAck(id: MessageIdData, validationError?: number): void {
    this.connection?.write('ack', {
      consumer_id: this.id,
      ack_type: AckType.Individual,
      message_id: [{ ledgerId: id.ledgerId, entryId: id.entryId }],
      validation_error: validationError,
    })
  }

  private discard(id: MessageIdData, count: number, validationError: number, why: string): void {
    this.sendAck(id, validationError)
    this.returnPermits(count, false)
    this.options.onError?.(
      new PulsarError('ProtocolError', `dropped a message on ${this.topic}: ${why}`, { retriable: false }),
    )
  }

  // ---------------------------------------------------------------- attaching

  private detached(): void {
    this.connection = undefined
    if (this.persistent) {
      // The broker hands these out again after the reattach.
      this.queue = []
      this.head = 0
    }
    this.reconnect()
  }

  private reconnect(): void {
    if (this.closed || this.reconnecting || this.client.closed) return
    this.reconnecting = true
    const started = Date.now()
    attachWithRetry(() => this.attach(), {
      backoff: this.client.backoff,
      deadline: undefined,
      stopped: () => this.closed || this.client.closed,
      onRetry: (err, attempt, waitMs) => {
        if (attempt === 1 || attempt % 10 === 0)
          this.client.logger.warn('pulsar: cannot resubscribe yet; retrying', {
            topic: this.topic,
            subscription: this.subscription,
            attempt,
            waitMs,
            err: (err as Error).message,
          })
      },
    }).then(
      () => {
        this.reconnecting = false
        this.client.logger.info('pulsar: resubscribed', {
          topic: this.topic,
          subscription: this.subscription,
          afterMs: Date.now() - started,
        })
        this.client.resubscribed()
      },
      () => {
        this.reconnecting = false // closed meanwhile
      },
    )
  }

  private async attach(): Promise<void> {
    const connection = await this.client.connectionFor(this.topic)
    connection.addConsumer(this.id, this)
    try {
      await connection.request(
        'subscribe',
        {
          topic: this.topic,
          subscription: this.subscription,
          subType: this.subType,
          consumer_id: this.id,
          consumer_name: this.options.consumerName,
          durable: this.options.durable ?? true,
          initialPosition: InitialPosition[this.options.initialPosition ?? 'Latest'],
        },
        `subscribe ${this.subscription} on ${this.topic}`,
      )
    } catch (err) {
      connection.removeConsumer(this.id)
      throw err
    }
    if (this.closed) {
      connection.removeConsumer(this.id)
      connection.write('close_consumer', { consumer_id: this.id, request_id: 0 })
      return
    }
    this.connection = connection
    // A new subscription on the broker starts with no permits: all but what is still queued here.
    this.permitsToReturn = 0
    this.returnPermits(this.receiverQueueSize - this.queued, true)
  }
}

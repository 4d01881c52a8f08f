/**
 * A producer on one topic, batching off: every send() is one message with
 * its own sequence id, resolved by the broker's receipt for that id. Sends
 * wait in order while the producer (re)attaches and are sent again after a
 * reconnect, so a topic unload or broker restart costs time, not messages;
 * each fails after `sendTimeoutMs` without a receipt.
 */
import { attachWithRetry } from './backoff.ts'
import type { ClientContext } from './client-context.ts'
import type { Connection, ProducerListener } from './connection.ts'
import { PulsarError, PulsarServerError } from './errors.ts'
import { payloadFrame } from './frame.ts'
import { encodeCommand, type Incoming, type KeyValue, type MessageIdData } from './proto.ts'

export interface ProducerOptions {
  topic: string
  /** Default: a name the broker picks (kept across reconnects). */
  producerName?: string
  /** A send without a receipt within this fails with Timeout. Default 30 s; 0: never. */
  sendTimeoutMs?: number
}

export interface SendOptions {
  properties?: Record<string, string>
  partitionKey?: string
  eventTime?: number
}

export interface MessageId {
  ledgerId: bigint
  entryId: bigint
  partition: number
  batchIndex: number
}

interface PendingSend {
  sequenceId: number
  payload: Uint8Array
  properties: KeyValue[]
  publishTime: number
  options: SendOptions
  resolve(id: MessageId): void
  reject(error: Error): void
  timer: NodeJS.Timeout | undefined
}

export const toMessageId = (id: MessageIdData | undefined): MessageId => ({
  ledgerId: id?.ledgerId ?? -1n,
  entryId: id?.entryId ?? -1n,
  partition: id?.partition ?? -1,
  batchIndex: id?.batch_index ?? -1,
})

export class Producer implements ProducerListener {
  readonly topic: string
  readonly id: number
  /** The broker-assigned (or given) name, once attached. */
  name: string | undefined
  private readonly client: ClientContext
  private readonly sendTimeoutMs: number
  private readonly userNamed: boolean
  private connection: Connection | undefined
  private readonly pending = new Map<number, PendingSend>()
  private nextSequenceId = 0
  private epoch = 0
  private closed = false
  private reconnecting = false

  constructor(client: ClientContext, id: number, options: ProducerOptions) {
    this.client = client
    this.id = id
    this.topic = options.topic
    this.name = options.producerName
    this.userNamed = options.producerName !== undefined
    this.sendTimeoutMs = options.sendTimeoutMs ?? 30_000
  }

  /** First attach: retried until the operation timeout, or a refusal that will not change. */
  async start(): Promise<void> {
    await attachWithRetry(() => this.attach(), {
      backoff: this.client.backoff,
      deadline: Date.now() + this.client.operationTimeoutMs,
      stopped: () => this.closed,
      onRetry: (err, attempt, waitMs) =>
        this.client.logger.debug('pulsar: producer not attached yet; retrying', {
          topic: this.topic,
          attempt,
          waitMs,
          err: (err as Error).message,
        }),
    })
  }

  /** Resolves with the message id once the broker has stored (or, non-persistent, taken) the message. */
  send(payload: Uint8Array, options: SendOptions = {}): Promise<MessageId> {
    if (this.closed)
      return Promise.reject(
        new PulsarError('AlreadyClosed', `producer on ${this.topic} is closed`, { retriable: false }),
      )
    const limit = this.connection?.maxMessageSize
    if (limit !== undefined && payload.length > limit) {
      return Promise.reject(
        new PulsarError(
          'MessageTooBig',
          `a message of ${payload.length} bytes is over the broker's limit of ${limit} bytes`,
          { retriable: false },
        ),
      )
    }
    const properties: KeyValue[] = []
    if (options.properties)
      for (const key of Object.keys(options.properties)) properties.push({ key, value: options.properties[key]! })
    return new Promise<MessageId>((resolve, reject) => {
      const entry: PendingSend = {
        sequenceId: this.nextSequenceId++,
        payload,
        properties,
        publishTime: Date.now(),
        options,
        resolve,
        reject,
        timer: undefined,
      }
      if (this.sendTimeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(entry.sequenceId)
          reject(
            new PulsarError(
              'Timeout',
              `no receipt from the broker for a message on ${this.topic} within ${this.sendTimeoutMs} ms`,
              { retriable: true },
            ),
          )
        }, this.sendTimeoutMs)
      }
      this.pending.set(entry.sequenceId, entry)
      if (this.connection) this.transmit(this.connection, entry)
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.client.forget(this)
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer)
      entry.reject(
        new PulsarError('AlreadyClosed', `producer on ${this.topic} closed before the broker took the message`, {
          retriable: false,
        }),
      )
    }
    this.pending.clear()
    const connection = this.connection
    this.connection = undefined
    if (connection && !connection.closed) {
      connection.removeProducer(this.id)
      await connection
        .request('close_producer', { producer_id: this.id }, `close producer on ${this.topic}`)
        .catch(() => {})
    }
  }

  // ---------------------------------------------------------------- from the connection

  receipt(command: Incoming['send_receipt']): void {
    const entry = this.pending.get(command.sequence_id)
    if (!entry) return
    this.pending.delete(command.sequence_id)
    clearTimeout(entry.timer)
    entry.resolve(toMessageId(command.message_id))
  }

  sendError(command: Incoming['send_error']): void {
    const error = new PulsarServerError(command.error, `send on ${this.topic}: ${command.message}`)
    const entry = this.pending.get(command.sequence_id)
    if (!error.retriable) {
      if (!entry) return
      this.pending.delete(command.sequence_id)
      clearTimeout(entry.timer)
      entry.reject(error)
      return
    }
    // A passing failure (storage, throttling): reattach, and everything pending goes again.
    this.client.logger.warn('pulsar: the broker could not store a message; reattaching the producer', {
      topic: this.topic,
      err: error.message,
    })
    const connection = this.connection
    this.connection = undefined
    if (connection) {
      connection.removeProducer(this.id)
      connection.write('close_producer', { producer_id: this.id, request_id: 0 })
    }
    this.reconnect()
  }

  closedByBroker(): void {
    this.connection = undefined
    this.reconnect()
  }

  connectionLost(): void {
    this.connection = undefined
    this.reconnect()
  }

  // ---------------------------------------------------------------- attaching

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
          this.client.logger.warn('pulsar: cannot reattach a producer yet; retrying', {
            topic: this.topic,
            attempt,
            waitMs,
            err: (err as Error).message,
          })
      },
    }).then(
      () => {
        this.reconnecting = false
        this.client.logger.info('pulsar: producer reattached', {
          topic: this.topic,
          afterMs: Date.now() - started,
          resent: this.pending.size,
        })
      },
      () => {
        this.reconnecting = false // closed meanwhile
      },
    )
  }

  private async attach(): Promise<void> {
    const connection = await this.client.connectionFor(this.topic)
    const answer = await connection.request(
      'producer',
      {
        topic: this.topic,
        producer_id: this.id,
        producer_name: this.name,
        epoch: this.epoch,
        user_provided_producer_name: this.userNamed,
      },
      `create producer on ${this.topic}`,
    )
    if (answer.type !== 'producer_success')
      throw new PulsarError('ProtocolError', `create producer: unexpected ${answer.type}`, { retriable: true })
    if (this.closed) {
      connection.write('close_producer', { producer_id: this.id, request_id: 0 })
      return
    }
    if (connection.closed)
      throw new PulsarError(
        'ConnectionClosed',
        `the connection for ${this.topic} closed while the producer was created`,
        { retriable: true },
      )
    this.name = answer.body.producer_name
    this.epoch++
    connection.addProducer(this.id, this)
    this.connection = connection
    for (const entry of this.pending.values()) this.transmit(connection, entry)
  }

  private transmit(connection: Connection, entry: PendingSend): void {
    const command = encodeCommand('send', { producer_id: this.id, sequence_id: entry.sequenceId, num_messages: 1 })
    const frame = payloadFrame(
      command,
      {
        producer_name: this.name!,
        sequence_id: entry.sequenceId,
        publish_time: entry.publishTime,
        properties: entry.properties,
        partition_key: entry.options.partitionKey,
        event_time: entry.options.eventTime,
      },
      entry.payload,
    )
    connection.writeFrame(frame)
  }
}

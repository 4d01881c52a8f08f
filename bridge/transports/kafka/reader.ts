/**
 * Reads one Kafka topic for one consumer group and hands its records out as
 * Deliveries: a request queue's competing consumer (the group TrustGraph
 * names `<service-id>-request`) or a response queue's subscriber (a group of
 * its own).
 *
 * Competing consumers: the group's committed offset is where reading starts
 * (a new group starts at the end, as TrustGraph's `latest`). Up to
 * `concurrency` records are out at once, from any partitions assigned here;
 * when one is acked, the partition's commit point moves to the end of the run
 * of finished records at its front (kafka-offsets.ts), so nothing is
 * committed before its answer is published, whatever order answers finish
 * in. One commit per partition runs at a time; acks meanwhile only move the
 * point the next one commits. A nacked record is handed out again after
 * NACK_REDELIVERY_MS (Kafka cannot give back one record) and holds the
 * commit point until it is acked.
 *
 * A rebalance (a replica joining or leaving) starts a new generation: what is
 * still in flight from the old one finishes and is answered, but its commits
 * are dropped, and the partition's new owner, maybe this same reader, reads
 * it again from the committed offset. That is at-least-once delivery: after
 * a rebalance a request can be answered twice, and TrustGraph's client keeps
 * the first answer for an id.
 *
 * The client's stream moves each partition back to its committed offset when
 * the group is joined, but a fetch sent before the rebalance and answered
 * after it moves the position on again, past records fetched earlier that
 * are dropped here as the old generation's. So in each generation a
 * partition's first record must be the one at its committed offset (or the
 * first one after it, when the log has a gap there): a later one means the
 * stream skipped ahead, and it is dropped and the stream sent back to the
 * committed offset. Records before the stream's positions for the
 * generation are known, and records of partitions not assigned here, are
 * dropped too: the partition's owner reads them from the committed offset.
 *
 * Subscribers start at the end of the topic as it is when start() resolves
 * (TrustGraph's clients start a new group at the earliest offset, re-reading
 * the topic's history to be sure of not missing an answer on a topic that did
 * not exist yet; here the topic is created first, so the end is just as
 * safe), never commit, and after a reconnect go on exactly where they were.
 *
 * When the client loses its consumer (the broker restarted, the group could
 * not be rejoined), the reader makes a new one, retrying with backoff until
 * it works or the transport closes.
 */
import { Consumer, MessagesStreamFallbackModes, MessagesStreamModes, stringDeserializer } from '@platformatic/kafka'
import type { ConsumerOptions, Message, MessagesStream } from '@platformatic/kafka'
import type { Logger } from '../../support/logger.ts'
import type { Retrier } from '../../support/retry.ts'
import { describeKafkaError } from './errors.ts'
import { PartitionProgress, type CommitPoint, type TrackedRecord } from './offsets.ts'
import { deliveryOf, handOver } from '../adapter-parts.ts'
import type { OnDelivery, Properties } from '../transport.ts'

/** A nacked record comes back after this long. */
export const NACK_REDELIVERY_MS = 1_000
/** How long start() and each reconnect wait for a consumer to be placed in its group with its offsets known. */
const ATTACH_TIMEOUT_MS = 30_000
/** How long closing waits for commits in flight and for the group to be left. */
const CLOSE_TIMEOUT_MS = 5_000
/** A failed commit is tried again after this long, unless a newer ack commits first. */
const COMMIT_RETRY_MS = 1_000
const EMPTY = Buffer.alloc(0)

type KafkaMessage = Message<Buffer, Buffer, string, string>
type KafkaConsumer = Consumer<Buffer, Buffer, string, string>
type KafkaStream = MessagesStream<Buffer, Buffer, string, string>

/** What every client of the transport shares: brokers, security, timeouts. */
export type ClientOptions = Omit<ConsumerOptions<Buffer, Buffer, string, string>, 'groupId'>

export interface ReaderOptions {
  topic: string
  groupId: string
  /** `competing`: shares the group's partitions and commits; `subscriber`: a private group that sees everything. */
  role: 'competing' | 'subscriber'
  concurrency: number
  /** Where a group without committed offsets starts (ConsumeOptions.startAt). */
  startAt?: 'latest' | 'earliest' | undefined
  onDelivery: OnDelivery
  client: ClientOptions
  reconnectRetry: Retrier
  logger: Logger
  /** For log lines: the broker without password. */
  address: string
  /** Called each time it consumes again after losing its consumer (metrics). */
  onReconnect?: () => void
}

/** One partition's progress in one generation, and its commit under way. */
class PartitionState {
  readonly progress = new PartitionProgress()
  readonly partition: number
  /** The group's committed offset when this generation began: where its reading must start. */
  start: bigint
  /** The first record past `start` seen before any was handed out; records up to it may follow a gap at `start`. */
  skippedTo: bigint | undefined
  /** A record of this generation has been handed out. */
  started = false
  wanted: CommitPoint | undefined
  committing = false

  constructor(partition: number, start: bigint) {
    this.partition = partition
    this.start = start
  }
}

function toProperties(headers: Map<string, string | undefined>): Properties {
  const properties: Properties = {}
  for (const [key, value] of headers) if (value !== undefined) properties[key] = value
  return properties
}

/** Resolves on `event`, rejects on `error` or `close` first, or after `ms`. */
function settledBy(kafkaStream: KafkaStream, event: string, ms: number): Promise<void> {
  const stream = kafkaStream as unknown as NodeJS.EventEmitter
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer)
      stream.off(event, onEvent)
      stream.off('error', onError)
      stream.off('close', onClose)
      if (err) reject(err)
      else resolve()
    }
    const onEvent = () => done()
    const onError = (err: Error) => done(err)
    const onClose = () => done(new Error('the consumer stream closed while starting'))
    const timer = setTimeout(() => done(new Error(`not placed in its consumer group within ${ms} ms`)), ms)
    stream.once(event, onEvent)
    stream.once('error', onError)
    stream.once('close', onClose)
  })
}

function bounded(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    work.then(
      () => {},
      () => {},
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer))
}

export class TopicReader {
  private readonly options: ReaderOptions
  private readonly logger: Logger
  private consumer: KafkaConsumer | undefined
  private stream: KafkaStream | undefined
  /** Bumped on every rebalance and reconnect: deliveries of an older one no longer commit. */
  private generation = 0
  private partitions = new Map<number, PartitionState>()
  /** The stream has set this generation's positions from the committed offsets. */
  private positionsKnown = false
  /** Subscribers: the next offset to read, per partition, to resume at after a reconnect. */
  private readonly positions = new Map<number, bigint>()
  private outstanding = 0
  private paused = false
  /** close() was called: nothing new is handed out. */
  private stopped = false
  /** shut down: nothing is committed or redelivered any more. */
  private closed = false
  private shuttingDown: Promise<void> | undefined
  private readonly commits = new Set<Promise<unknown>>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly aborter = new AbortController()

  constructor(options: ReaderOptions) {
    this.options = options
    this.logger = options.logger
  }

  private get competing(): boolean {
    return this.options.role === 'competing'
  }

  /** Has a live consumer in its group (or was closed on purpose). */
  get attached(): boolean {
    return this.consumer !== undefined || this.stopped
  }

  /** Joins the group; resolves once records published from now on will be read. */
  async start(): Promise<void> {
    await this.attach()
  }

  /** No new deliveries. Competing consumers stay in the group until what they handed out is settled, so its acks still commit. */
  async close(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.stream?.pause()
    if (!this.competing || this.outstanding === 0) await this.shutdown()
  }

  /** Leaves the group: what is unacked will be read again by the group (competing) or is dropped (subscriber). */
  shutdown(): Promise<void> {
    this.shuttingDown ??= (async () => {
      this.stopped = true
      await bounded(Promise.all(this.commits), CLOSE_TIMEOUT_MS)
      this.closed = true
      this.aborter.abort()
      for (const timer of this.timers) clearTimeout(timer)
      this.timers.clear()
      const consumer = this.consumer
      this.consumer = undefined
      this.stream = undefined
      if (consumer) await bounded(consumer.close(true), CLOSE_TIMEOUT_MS)
    })()
    return this.shuttingDown
  }

  // --- joining ----------------------------------------------------------------

  private async attach(): Promise<void> {
    const { topic, groupId } = this.options
    const highWaterMark = Math.min(1024, Math.max(16, this.options.concurrency))
    const consumer: KafkaConsumer = new Consumer({
      ...this.options.client,
      groupId,
      autocommit: false,
      // TrustGraph's values: a replica that dies is noticed within 6 s.
      sessionTimeout: 6_000,
      heartbeatInterval: 1_000,
      // Answer a fetch after at most 0.5 s even when there is nothing, so a new assignment is read promptly.
      maxWaitTime: 500,
      highWaterMark,
      deserializers: { headerKey: stringDeserializer, headerValue: stringDeserializer },
    })
    consumer.on('error', (err: Error) => this.lost(consumer, err))
    consumer.on('consumer:group:join', () => {
      if (this.consumer === consumer || this.consumer === undefined) this.newGeneration()
    })
    let stream: KafkaStream
    try {
      const resume = !this.competing && this.positions.size > 0
      stream = await consumer.consume({
        topics: [topic],
        autocommit: false,
        mode: this.competing
          ? MessagesStreamModes.COMMITTED
          : resume
            ? MessagesStreamModes.MANUAL
            : MessagesStreamModes.LATEST,
        fallbackMode:
          this.options.startAt === 'earliest'
            ? MessagesStreamFallbackModes.EARLIEST
            : MessagesStreamFallbackModes.LATEST,
        offsets: resume ? [...this.positions].map(([partition, offset]) => ({ topic, partition, offset })) : undefined,
      })
      // 'offsets': the stream knows where to read each assigned partition from.
      await settledBy(stream, 'offsets', ATTACH_TIMEOUT_MS)
    } catch (err) {
      consumer.close(true).catch(() => {})
      throw err
    }
    if (this.closed) {
      consumer.close(true).catch(() => {})
      return
    }
    if (!this.competing) {
      for (const [key, offset] of stream.offsetsToFetch) {
        const partition = Number(key.slice(key.lastIndexOf(':') + 1))
        if (!this.positions.has(partition)) this.positions.set(partition, offset)
      }
    }
    this.consumer = consumer
    this.stream = stream
    this.newGeneration()
    this.positionsKnown = true
    // After each join, and after a position out of the log's range was reset.
    stream.on('offsets', () => this.positionsSet(stream))
    stream.on('data', (message: KafkaMessage) => this.receive(consumer, message))
    stream.on('error', (err: Error) =>
      this.logger.warn(
        { broker: this.options.address, topic, group: groupId, err: describeKafkaError(err) },
        'Kafka consumer stream failed',
      ),
    )
    stream.on('close', () => this.lost(consumer, new Error('the consumer stream closed')))
    if (this.stopped || this.paused) stream.pause()
  }

  private newGeneration(): void {
    this.generation++
    this.partitions = new Map()
    this.positionsKnown = false
  }

  private positionsSet(stream: KafkaStream): void {
    if (stream !== this.stream) return
    this.positionsKnown = true
    for (const state of this.partitions.values()) {
      const start = stream.offsetsCommitted.get(this.partitionKey(state.partition))
      if (state.started || start === undefined) continue
      state.start = start
      state.skippedTo = undefined
    }
  }

  private partitionKey(partition: number): string {
    return `${this.options.topic}:${partition}`
  }

  /** The consumer broke (broker gone, group not rejoined): drop it and make a new one. */
  private lost(consumer: KafkaConsumer, err: Error): void {
    if (consumer !== this.consumer || this.closed) return
    this.consumer = undefined
    this.stream = undefined
    this.newGeneration()
    consumer.close(true).catch(() => {})
    if (this.stopped) return
    const { topic, groupId, address } = this.options
    const started = Date.now()
    this.logger.warn(
      { broker: address, topic, group: groupId, err: describeKafkaError(err) },
      'lost the Kafka consumer; reconnecting',
    )
    this.options
      .reconnectRetry(
        async (bail) => {
          if (this.closed || this.stopped) bail(new Error('closed'))
          await this.attach()
        },
        {
          signal: this.aborter.signal,
          onRetry: (error, retryCount, retryTime) =>
            this.logger.warn(
              {
                broker: address,
                topic,
                group: groupId,
                retry: retryCount + 1,
                inMs: retryTime,
                err: describeKafkaError(error),
              },
              'cannot consume from Kafka yet; retrying',
            ),
        },
      )
      .then(
        () => {
          this.logger.info(
            { broker: address, topic, group: groupId, afterMs: Date.now() - started },
            'consuming from Kafka again',
          )
          this.options.onReconnect?.()
        },
        (error: unknown) => {
          if (!this.closed && !this.stopped) {
            this.logger.error(
              { broker: address, topic, group: groupId, err: describeKafkaError(error) },
              'gave up consuming from Kafka',
            )
          }
        },
      )
  }

  // --- handing out ------------------------------------------------------------

  private receive(consumer: KafkaConsumer, message: KafkaMessage): void {
    if (consumer !== this.consumer || this.stopped) return // read again later by whoever owns the partition
    if (!this.competing) {
      this.positions.set(message.partition, message.offset + 1n)
      this.deliver(message, undefined, false)
      return
    }
    // Fetched for an assignment that has changed since: the stream reads it again from the committed offset.
    const fetchedIn = (message.metadata as { consumer?: { generationId?: number } } | undefined)?.consumer?.generationId
    if (!this.positionsKnown || (fetchedIn !== undefined && fetchedIn !== consumer.generationId)) return
    let state = this.partitions.get(message.partition)
    if (!state) {
      const start = this.stream?.offsetsCommitted.get(this.partitionKey(message.partition))
      if (start === undefined) return // not assigned here in this generation
      this.partitions.set(message.partition, (state = new PartitionState(message.partition, start)))
    }
    if (!state.started && !this.startsGeneration(state, message.offset)) return
    state.started = true
    const record = state.progress.track(message.offset, message.leaderEpoch)
    if (!record) return
    this.deliver(message, { state, record, generation: this.generation }, false)
  }

  /**
   * Whether `offset` may be a partition's first record in this generation. A
   * later one than the committed offset's, unless it is the first seen of a
   * read started again there (a gap in the log), sends the stream back.
   */
  private startsGeneration(state: PartitionState, offset: bigint): boolean {
    if (offset < state.start) return false // committed already
    if (offset === state.start || (state.skippedTo !== undefined && offset <= state.skippedTo)) return true
    state.skippedTo ??= offset
    this.stream?.offsetsToFetch.set(this.partitionKey(state.partition), state.start)
    this.logger.debug(
      {
        topic: this.options.topic,
        partition: state.partition,
        offset: String(offset),
        committed: String(state.start),
      },
      'Kafka stream read past the committed offset after a rebalance; reading again from it',
    )
    return false
  }

  private deliver(
    message: KafkaMessage,
    tracked: { state: PartitionState; record: TrackedRecord; generation: number } | undefined,
    redelivered: boolean,
  ): void {
    this.outstanding++
    if (this.outstanding >= this.options.concurrency && !this.paused) {
      this.paused = true
      this.stream?.pause()
    }
    const delivery = deliveryOf(
      {
        body: message.value ?? EMPTY,
        properties: toProperties(message.headers),
        redelivered,
        timestamp: Number(message.timestamp),
      },
      (ack) => {
        this.release()
        if (!ack) this.redeliverLater(message, tracked)
        else if (tracked) this.finished(tracked.state, tracked.record, tracked.generation)
      },
    )
    handOver(this.options.onDelivery, delivery, this.logger, {
      broker: this.options.address,
      topic: this.options.topic,
    })
  }

  private release(): void {
    this.outstanding--
    if (this.paused && this.outstanding < this.options.concurrency && !this.stopped) {
      this.paused = false
      this.stream?.resume()
    }
    if (this.stopped && this.competing && this.outstanding === 0) void this.shutdown()
  }

  /** Kafka cannot give one record back: hand it out again here, unless its partition has moved on. */
  private redeliverLater(
    message: KafkaMessage,
    tracked: { state: PartitionState; record: TrackedRecord; generation: number } | undefined,
  ): void {
    if (this.closed) return
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      if (this.closed || this.stopped) return
      if (tracked && tracked.generation !== this.generation) return // the partition's owner reads it again
      this.deliver(message, tracked, true)
    }, NACK_REDELIVERY_MS)
    this.timers.add(timer)
  }

  // --- committing -------------------------------------------------------------

  private finished(state: PartitionState, record: TrackedRecord, generation: number): void {
    const point = state.progress.finish(record)
    if (!point || generation !== this.generation || this.closed) return
    state.wanted = point
    this.commit(state, generation)
  }

  private commit(state: PartitionState, generation: number): void {
    const consumer = this.consumer
    if (state.committing || !state.wanted || !consumer || generation !== this.generation) return
    const point = state.wanted
    state.wanted = undefined
    state.committing = true
    const { topic } = this.options
    const done = consumer
      .commit({
        offsets: [{ topic, partition: state.partition, offset: point.offset, leaderEpoch: point.leaderEpoch }],
      })
      .then(
        () => {
          state.committing = false
          this.commit(state, generation)
        },
        (err: unknown) => {
          state.committing = false
          if (generation !== this.generation || this.closed) return
          this.logger.warn(
            {
              broker: this.options.address,
              topic,
              partition: state.partition,
              offset: String(point.offset),
              err: describeKafkaError(err),
            },
            'Kafka offset commit failed; retrying',
          )
          state.wanted ??= point
          const timer = setTimeout(() => {
            this.timers.delete(timer)
            this.commit(state, generation)
          }, COMMIT_RETRY_MS)
          this.timers.add(timer)
        },
      )
    this.commits.add(done)
    void done.finally(() => this.commits.delete(done))
  }
}

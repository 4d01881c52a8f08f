/**
 * Which offset of one Kafka partition may be committed when its records are
 * worked on concurrently and finish out of order.
 *
 * Kafka remembers one position per partition, so committing offset N says
 * "every record before N is done". Records are tracked in delivery order
 * (always increasing, though not always by one: compaction and transaction
 * markers leave gaps); the commit point moves only past a run of finished
 * records at the front. A record that never finishes (its answer could not be
 * published) holds the commit point where it is, so after a restart or a
 * rebalance it is read again.
 */

export interface TrackedRecord {
  readonly offset: bigint
  /** The partition leader epoch the record was written in (KIP-320), sent with the commit. */
  readonly leaderEpoch: number
  finished: boolean
}

/** Where the consumer group should resume: the offset after the last record of a finished run. */
export interface CommitPoint {
  offset: bigint
  leaderEpoch: number
}

export class PartitionProgress {
  private queue: TrackedRecord[] = []
  private head = 0
  private highest = -1n

  /** Records in flight or finished behind an unfinished one. */
  get pending(): number {
    return this.queue.length - this.head
  }

  /**
   * Starts tracking a delivered record. Undefined for an offset seen before
   * (the client fetched it again, e.g. after a reconnect): it is being or has
   * been worked on already, so it must not be handed out twice.
   */
  track(offset: bigint, leaderEpoch: number): TrackedRecord | undefined {
    if (offset <= this.highest) return undefined
    this.highest = offset
    const record: TrackedRecord = { offset, leaderEpoch, finished: false }
    this.queue.push(record)
    return record
  }

  /** Marks a record finished; returns the new commit point if the finished run at the front grew. */
  finish(record: TrackedRecord): CommitPoint | undefined {
    if (record.finished) return undefined
    record.finished = true
    let last: TrackedRecord | undefined
    while (this.head < this.queue.length && this.queue[this.head]!.finished) last = this.queue[this.head++]
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
    return last && { offset: last.offset + 1n, leaderEpoch: last.leaderEpoch }
  }
}

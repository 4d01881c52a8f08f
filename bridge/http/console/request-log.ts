/**
 * The console's live request log: the last `capacity` requests the bridge
 * answered, across all tools, newest last, and who to tell of each new one.
 */

export interface LoggedRequest {
  /** Increasing from 1: a client that reconnects asks only for what it has not seen. */
  seq: number
  /** Epoch milliseconds when the answer was sent. */
  at: number
  service: string
  /** '' when the request's tool could not be told. */
  tool: string
  /** The request's correlation id: a caller that knows it finds its own request. */
  id: string
  /** `ok`, or the error type callers saw (`invalid-arguments`, `timeout`, ...). */
  outcome: string
  /** From taking the request to publishing its answer. */
  ms: number
  /** Waiting on the broker before that; undefined without a believable broker timestamp. */
  queueMs: number | undefined
  /** The function's run; undefined when refused without invoking. */
  invokeMs: number | undefined
  /** Bytes of the answer as published. */
  bytes: number
}

export interface RequestFilter {
  tool?: string
  /** `ok`, `error` (any error), or one error type. */
  outcome?: string
}

export function matches(entry: LoggedRequest, filter: RequestFilter): boolean {
  if (filter.tool && entry.tool !== filter.tool) return false
  if (!filter.outcome) return true
  if (filter.outcome === 'error') return entry.outcome !== 'ok'
  return entry.outcome === filter.outcome
}

export class RequestLog {
  readonly capacity: number
  private readonly ring: LoggedRequest[] = []
  private next = 1
  private readonly listeners = new Set<(entry: LoggedRequest) => void>()

  constructor(capacity: number) {
    if (!(Number.isInteger(capacity) && capacity > 0)) throw new RangeError(`capacity must be a positive integer`)
    this.capacity = capacity
  }

  add(entry: Omit<LoggedRequest, 'seq'>): LoggedRequest {
    const logged = { ...entry, seq: this.next++ }
    this.ring.push(logged)
    if (this.ring.length > this.capacity) this.ring.shift()
    for (const listener of this.listeners) listener(logged)
    return logged
  }

  /** The kept requests after `afterSeq` that match, oldest first. */
  entries(filter: RequestFilter = {}, afterSeq = 0): LoggedRequest[] {
    return this.ring.filter((e) => e.seq > afterSeq && matches(e, filter))
  }

  /** Calls `listener` with each request logged from now on; returns the way to stop. */
  subscribe(listener: (entry: LoggedRequest) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}

/**
 * A map that forgets: at most `maxEntries` entries and `maxWeight` in total
 * weight (bytes, say), each for at most `ttlMs`. Over a bound, the oldest
 * entries go first. Time is passed in, so that callers and tests choose the
 * clock.
 */
export interface BoundedMemoryLimits {
  maxEntries: number
  ttlMs: number
  /** Sum of the entries' weights kept at most; an entry heavier than this alone is not kept. */
  maxWeight: number
}

interface Entry<V> {
  value: V
  weight: number
  expiresAt: number
}

export class BoundedMemory<V> {
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly entries = new Map<string, Entry<V>>()
  private weight = 0
  private readonly limits: BoundedMemoryLimits

  constructor(limits: BoundedMemoryLimits) {
    this.limits = limits
  }

  get size(): number {
    return this.entries.size
  }

  get totalWeight(): number {
    return this.weight
  }

  /** The value under `key` if it is still held at `now`. */
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now) {
      this.delete(key, entry)
      return undefined
    }
    return entry.value
  }

  /** Keeps `value` under `key` from `now` for the TTL (replacing what was there); false when it is too heavy to keep. */
  set(key: string, value: V, now: number, weight = 0): boolean {
    const old = this.entries.get(key)
    if (old !== undefined) this.delete(key, old)
    if (this.limits.maxEntries < 1 || weight > this.limits.maxWeight) return false
    this.entries.set(key, { value, weight, expiresAt: now + this.limits.ttlMs })
    this.weight += weight
    this.evict(now)
    return true
  }

  /** Drops what has expired at `now`, then the oldest while over a bound. */
  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      const over = this.entries.size > this.limits.maxEntries || this.weight > this.limits.maxWeight
      if (!over && entry.expiresAt > now) return
      this.delete(key, entry)
    }
  }

  private delete(key: string, entry: Entry<V>): void {
    this.entries.delete(key)
    this.weight -= entry.weight
  }
}

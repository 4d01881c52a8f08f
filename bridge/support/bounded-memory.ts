/**
 * A map that forgets: at most `maxEntries` entries and `maxWeight` in total
 * weight (bytes, say), each for at most `ttlMs`. Over a bound, the oldest
 * entries go first. Time is passed in, so that callers and tests choose the
 * clock.
 */
import { LinkedList, type ListNode } from './linked-list.ts'

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
  /** Its place in the age order. */
  node: ListNode<string>
}

export class BoundedMemory<V> {
  private readonly entries = new Map<string, Entry<V>>()
  /**
   * Keys, oldest first. Not the Map's own order: iterating a Map from its
   * start walks over the slots of every entry deleted since its last rehash,
   * which made each eviction cost ~25 µs in a full memory of 10000 (measured).
   */
  private readonly order = new LinkedList<string>()
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
    this.entries.set(key, { value, weight, expiresAt: now + this.limits.ttlMs, node: this.order.push(key) })
    this.weight += weight
    this.evict(now)
    return true
  }

  /** Drops what has expired at `now`, then the oldest while over a bound. */
  private evict(now: number): void {
    for (let oldest = this.order.first; oldest !== undefined; oldest = this.order.first) {
      const entry = this.entries.get(oldest.value)!
      const over = this.entries.size > this.limits.maxEntries || this.weight > this.limits.maxWeight
      if (!over && entry.expiresAt > now) return
      this.delete(oldest.value, entry)
    }
  }

  private delete(key: string, entry: Entry<V>): void {
    this.entries.delete(key)
    this.order.remove(entry.node)
    this.weight -= entry.weight
  }
}

/**
 * Per tool, per minute: requests, errors and latency percentiles over the
 * last `minutes`, for the console's charts. It is fed the same observations
 * as the /metrics histogram and counters (each answered request), and keeps
 * at most `samplesPerMinute` latencies a minute (every later one replaces an
 * earlier at a rotating place, so a busy minute stays bounded).
 */

export interface MinuteStats {
  /** Start of the minute, epoch ms. */
  minute: number
  requests: number
  errors: number
  /** Milliseconds; undefined for a minute without requests. */
  p50: number | undefined
  p99: number | undefined
}

interface Bucket {
  minute: number
  requests: number
  errors: number
  samples: number[]
}

const MINUTE_MS = 60_000

/** The nearest-rank percentile of sorted values (q in 0..1]. */
export function percentile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined
  const rank = Math.ceil(q * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]
}

export class ToolStats {
  private readonly byTool = new Map<string, Bucket[]>()
  private readonly minutes: number
  private readonly samplesPerMinute: number

  constructor(options: { minutes: number; samplesPerMinute: number }) {
    this.minutes = options.minutes
    this.samplesPerMinute = options.samplesPerMinute
  }

  observe(tool: string, ok: boolean, ms: number, now: number): void {
    const minute = now - (now % MINUTE_MS)
    let buckets = this.byTool.get(tool)
    if (!buckets) {
      buckets = []
      this.byTool.set(tool, buckets)
    }
    let bucket = buckets.at(-1)
    if (!bucket || bucket.minute !== minute) {
      bucket = { minute, requests: 0, errors: 0, samples: [] }
      buckets.push(bucket)
      while (buckets.length > 0 && buckets[0]!.minute <= minute - this.minutes * MINUTE_MS) buckets.shift()
    }
    bucket.requests++
    if (!ok) bucket.errors++
    if (bucket.samples.length < this.samplesPerMinute) bucket.samples.push(ms)
    else bucket.samples[bucket.requests % this.samplesPerMinute] = ms
  }

  /** Every minute of the window for each tool seen, oldest first; minutes without requests count zero. */
  series(now: number): Record<string, MinuteStats[]> {
    const current = now - (now % MINUTE_MS)
    const first = current - (this.minutes - 1) * MINUTE_MS
    const result: Record<string, MinuteStats[]> = {}
    for (const [tool, buckets] of this.byTool) {
      const byMinute = new Map(buckets.map((b) => [b.minute, b]))
      const row: MinuteStats[] = []
      for (let minute = first; minute <= current; minute += MINUTE_MS) {
        const b = byMinute.get(minute)
        const sorted = b ? [...b.samples].sort((x, y) => x - y) : []
        row.push({
          minute,
          requests: b?.requests ?? 0,
          errors: b?.errors ?? 0,
          p50: percentile(sorted, 0.5),
          p99: percentile(sorted, 0.99),
        })
      }
      result[tool] = row
    }
    return result
  }
}

/**
 * The closed-loop load generator the benches measure with, in their own
 * process or in a load client: N callers each calling again as soon as their
 * call settles, a warm-up and then the measured loop, which reports its
 * throughput, latency percentiles and how far the given probes (CPU clocks)
 * moved over it.
 */
import { performance } from 'node:perf_hooks'
import { median, percentile } from './statistics.ts'

/** Latencies in ms, in a growable Float64Array (millions of samples for a fast call). */
class Samples {
  private data = new Float64Array(1 << 16)
  length = 0

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2)
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.length++] = value
  }

  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort()
  }
}

export type Call = () => Promise<unknown>

/**
 * A reading taken just before and just after a loop, such as the CPU
 * microseconds a process has used so far: the loop reports how far it moved.
 */
export type Probe = () => number

/** `items` in the order of a round: each round starts one further on, so that none always runs first, after the same neighbour. */
export function inRotation<T>(items: readonly T[], round: number): T[] {
  return items.map((_, i) => items[(i + round) % items.length]!)
}

/** A setup's closed loops over the rounds at one in-flight level: medians, and the range of req/s. */
export interface RoundsStats {
  rounds: number
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  meanMs: number
}

/** RoundsStats of a setup's loops at one in-flight level, one loop a round. */
export function roundsStats(
  loops: Pick<LoopStats, 'reqPerSec' | 'p50Ms' | 'p90Ms' | 'p99Ms' | 'meanMs'>[],
): RoundsStats {
  const reqs = loops.map((loop) => loop.reqPerSec)
  return {
    rounds: loops.length,
    reqPerSec: median(reqs),
    reqPerSecMin: Math.min(...reqs),
    reqPerSecMax: Math.max(...reqs),
    p50Ms: median(loops.map((loop) => loop.p50Ms)),
    p90Ms: median(loops.map((loop) => loop.p90Ms)),
    p99Ms: median(loops.map((loop) => loop.p99Ms)),
    meanMs: median(loops.map((loop) => loop.meanMs)),
  }
}

/** What a closed loop measured; latencies in ms over the answered requests. */
export interface LoopStats {
  /** Calls answered. */
  requests: number
  /** Calls that failed (not in `requests` nor in the latencies). */
  errors: number
  seconds: number
  reqPerSec: number
  meanMs: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  p999Ms: number
  maxMs: number
}

/** LoopStats and, per probe, how far its reading moved over the loop. */
export type Measured<P extends string> = LoopStats & { used: Record<P, number> }

export interface LoopOptions<P extends string> {
  /** Measured seconds. */
  seconds: number
  /** Seconds of the same loop, not measured, before. */
  warmupSeconds: number
  /** Readings taken around the measured loop, by name. */
  probes: Record<P, Probe>
  /** Asked before every call: true ends the loop early. */
  stopWhen?: () => boolean
}

/**
 * `inFlight` callers, each calling again as soon as its call settles, until
 * `seconds` have passed since the start. A call is timed from just before it
 * is made to just after it is answered.
 */
async function closedLoop<P extends string>(
  call: Call,
  inFlight: number,
  seconds: number,
  record: boolean,
  options: LoopOptions<P>,
): Promise<Measured<P>> {
  const samples = new Samples()
  let errors = 0
  let firstError: unknown
  const names = Object.keys(options.probes) as P[]
  const before = names.map((name) => options.probes[name]())
  const start = performance.now()
  const deadline = start + seconds * 1000
  const caller = async () => {
    for (;;) {
      const t0 = performance.now()
      if (t0 >= deadline || options.stopWhen?.()) return
      try {
        await call()
        if (record) samples.push(performance.now() - t0)
      } catch (err) {
        errors++
        firstError ??= err
      }
    }
  }
  await Promise.all(Array.from({ length: inFlight }, caller))
  const elapsedMs = performance.now() - start
  const used = Object.fromEntries(names.map((name, i) => [name, options.probes[name]() - before[i]!])) as Record<
    P,
    number
  >
  if (errors > 0)
    console.error(`  ${errors} call(s) failed; first: ${(firstError as Error)?.message ?? String(firstError)}`)
  const sorted = samples.sorted()
  let sum = 0
  for (let i = 0; i < sorted.length; i++) sum += sorted[i]!
  return {
    requests: sorted.length,
    errors,
    seconds: elapsedMs / 1000,
    reqPerSec: sorted.length / (elapsedMs / 1000),
    meanMs: sorted.length ? sum / sorted.length : Number.NaN,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    p999Ms: percentile(sorted, 99.9),
    maxMs: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    used,
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** One cell: the warm-up, a short pause, then the measured closed loop. */
export async function measure<P extends string>(
  call: Call,
  inFlight: number,
  options: LoopOptions<P>,
): Promise<Measured<P>> {
  if (options.warmupSeconds > 0) await closedLoop(call, inFlight, options.warmupSeconds, false, options)
  await pause(50) // let stragglers (timers, GC, late acks) settle between warm-up and measurement
  return closedLoop(call, inFlight, options.seconds, true, options)
}

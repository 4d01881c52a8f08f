/**
 * What one hop to a worker thread and back costs, with nothing else in the
 * way: the first measurement behind the thread-hop designs. Three ways to
 * wake a worker and hear from it:
 *
 * - `message`: postMessage both ways, as the worker-threads invoker does today;
 * - `shared`: a sequence number in shared memory, Atomics.notify to wake, each
 *   side parked with Atomics.waitAsync (its event loop free);
 * - `shared+spin`: the same, the worker checking for the next number for
 *   THREAD_HOP_SPIN_US (default 50) before it parks.
 *
 * Each is measured back to back (the worker busy: the next hop as soon as the
 * last returns) and with 1 ms between hops (the worker gone idle, as between
 * calls at 1 in flight). Reports the round trip's p50/p90 and the process's
 * CPU (all threads) per hop; rounds rotate the modes, medians.
 *
 *   npm run bench:thread-hop      BENCH_ROUNDS (3), THREAD_HOP_SPIN_US (50)
 */
import { Worker } from 'node:worker_threads'
import { inRotation } from './closed-loop.ts'
import { numberEnv } from './env-settings.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { runBench } from './run-bench.ts'
import { median, percentile } from './statistics.ts'
import type { HopSetup } from './thread-hop-worker.ts'

const ROUNDS = Math.floor(numberEnv('BENCH_ROUNDS', 3, 1))
const SPIN_US = numberEnv('THREAD_HOP_SPIN_US', 50, 0)
const MODES = [
  { name: 'message', mode: 'message', spinUs: 0 },
  { name: 'shared', mode: 'shared', spinUs: 0 },
  { name: 'shared+spin', mode: 'shared', spinUs: SPIN_US },
] as const
const PACES = [
  { name: 'back to back', gapMs: 0, hops: 20_000 },
  { name: '1 ms apart', gapMs: 1, hops: 1_000 },
] as const

interface Hopper {
  hop(seq: number): Promise<void>
  close(): Promise<void>
}

async function startHopper(mode: HopSetup['mode'], spinUs: number): Promise<Hopper> {
  const flags = new SharedArrayBuffer(8)
  const view = new Int32Array(flags)
  const worker = new Worker(new URL('./thread-hop-worker.ts', import.meta.url), {
    workerData: { mode, flags, spinUs } satisfies HopSetup,
  })
  await new Promise((resolve) => worker.once('online', resolve))
  const close = async () => {
    Atomics.store(view, 0, -1)
    Atomics.notify(view, 0)
    await worker.terminate()
  }
  if (mode === 'message')
    return {
      hop: (seq) =>
        new Promise<void>((resolve) => {
          worker.once('message', () => resolve())
          worker.postMessage(seq)
        }),
      close,
    }
  return {
    async hop(seq) {
      Atomics.store(view, 0, seq)
      Atomics.notify(view, 0)
      const waiting = Atomics.waitAsync(view, 1, seq - 1)
      if (waiting.async) await waiting.value
    },
    close,
  }
}

interface Measured {
  p50: number
  p90: number
  cpuUs: number
}

async function measure(hopper: Hopper, gapMs: number, hops: number): Promise<Measured> {
  const times = new Float64Array(hops)
  const cpuBefore = process.cpuUsage()
  for (let seq = 1; seq <= hops; seq++) {
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
    const started = performance.now()
    await hopper.hop(seq)
    times[seq - 1] = (performance.now() - started) * 1000
  }
  const cpu = process.cpuUsage(cpuBefore)
  times.sort()
  return { p50: percentile(times, 50), p90: percentile(times, 90), cpuUs: (cpu.user + cpu.system) / hops }
}

async function main(): Promise<void> {
  const loadBefore = loadAverage()
  console.log(describeMachine(machineInfo({})))
  console.log(`load average before: ${loadBefore.join(' / ')}; ${ROUNDS} round(s), modes rotated; spin ${SPIN_US} µs`)
  const results = new Map<string, Measured[]>()
  // Atomics.waitAsync holds no handle: without one, the process would end while the main thread waits.
  const keepAlive = setInterval(() => {}, 2 ** 30)
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, mode, spinUs } of inRotation(MODES, round)) {
      const hopper = await startHopper(mode, spinUs)
      try {
        await measure(hopper, 0, 2_000) // warm-up
        for (const pace of PACES) {
          const key = `${name}|${pace.name}`
          results.set(key, [...(results.get(key) ?? []), await measure(hopper, pace.gapMs, pace.hops)])
        }
      } finally {
        await hopper.close()
      }
    }
  }
  clearInterval(keepAlive)
  console.log('')
  console.log('mode          pace           p50 µs   p90 µs   CPU µs/hop (all threads; with 1 ms apart, the timer too)')
  for (const pace of PACES)
    for (const { name } of MODES) {
      const rounds = results.get(`${name}|${pace.name}`)!
      const cell = (pick: (m: Measured) => number) => median(rounds.map(pick)).toFixed(1).padStart(8)
      console.log(
        `${name.padEnd(13)} ${pace.name.padEnd(13)} ${cell((m) => m.p50)} ${cell((m) => m.p90)} ${cell((m) => m.cpuUs)}`,
      )
    }
  console.log(`load average after: ${loadAverage().join(' / ')}`)
}

await runBench(main)

/**
 * The invokers alone, without a broker or the bridge around them: what a
 * call through worker threads costs against the same call in process,
 * measured in the same run.
 *
 *   node bench/invokers.bench.ts
 *
 * serverless.yml's joke-service function (tell-joke, the event the bridge
 * hands it) called through `invoker.invoke()` by a closed loop of N callers,
 * for each in-flight level: `in-process` (the handler in this thread), then
 * `worker threads` (the default `worker-threads` invoker, concurrency = the in-flight
 * level, no warm worker: the pool grows as it does in the bridge). Each cell
 * has its warm-up, then a fixed duration, in rounds whose order alternates.
 * Recorded per cell: calls/s, p50, process CPU per call (all threads) and
 * that of the main thread, and the worker threads the function had at the
 * end. A broker's cost comes on top of these; the broker benches measure it.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 1)
 *   BENCH_ROUNDS           rounds (default 3)
 *   BENCH_INFLIGHT         in-flight levels (default 1,16,64)
 *   BENCH_OUT              default bench/results/invokers.json (git-ignored)
 */
import { InProcessInvoker } from '../bridge/invokers/in-process-invoker.ts'
import type { FunctionTarget, Invoker } from '../bridge/invokers/invoker.ts'
import { WorkerThreadInvoker } from '../bridge/invokers/worker-threads/worker-thread-invoker.ts'
import type { HandlerLocation } from '../bridge/project/tool-services.ts'
import { measure } from './closed-loop.ts'
import { processCpuUs, threadCpuUs } from './cpu-and-memory.ts'
import { roundsSettings } from './env-settings.ts'
import { loadJokeTool } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtInt, printHeader, printRow } from './tables.ts'

const RUN = roundsSettings('invokers', { seconds: 3, warmupSeconds: 1, rounds: 3, inFlight: '1,16,64' })

const SETUPS = ['in-process', 'worker threads'] as const
type Setup = (typeof SETUPS)[number]

interface Row {
  setup: Setup
  inFlight: number
  rounds: number
  callsPerSec: number
  callsPerSecMin: number
  callsPerSecMax: number
  p50Ms: number
  cpuUsPerCall: number
  mainThreadCpuUsPerCall: number
  /** Worker threads the function had at the end of each round. */
  threads: number[]
  ratioToInProcess: number
  cpuRatioToInProcess: number
}

const COLUMNS: Column<Row>[] = [
  { title: 'setup', width: 14, align: 'left', cell: (r) => r.setup },
  { title: 'in-flight', width: 9, cell: (r) => String(r.inFlight) },
  { title: 'calls/s', width: 9, cell: (r) => fmtInt(r.callsPerSec) },
  { title: 'min-max', width: 15, cell: (r) => `${fmtInt(r.callsPerSecMin)}-${fmtInt(r.callsPerSecMax)}` },
  { title: 'p50 ms', width: 7, cell: (r) => fmt(r.p50Ms, 3) },
  { title: 'cpu us/call', width: 11, cell: (r) => fmt(r.cpuUsPerCall, 1) },
  { title: 'main us/call', width: 12, cell: (r) => fmt(r.mainThreadCpuUsPerCall, 1) },
  { title: 'threads', width: 7, cell: (r) => r.threads.join('/') },
  { title: 'x in-process', width: 12, cell: (r) => fmt(r.ratioToInProcess, 2) },
  { title: 'cpu x in-process', width: 16, cell: (r) => fmt(r.cpuRatioToInProcess, 2) },
]

async function main(): Promise<void> {
  const { spec, event } = loadJokeTool()
  const machine = machineInfo({ node: process.version })
  console.log(describeMachine(machine))
  console.log(`load average before: ${loadAverage().join(' / ')}`)
  console.log(
    `function ${spec.functionName} through invoker.invoke(); ${RUN.warmupSeconds}s warm-up + ${RUN.seconds}s measured per cell, ${RUN.rounds} round(s), order alternating`,
  )
  console.log(
    "cpu = process CPU (all threads) per call; main = the main thread's; threads = worker threads at the end of each round\n",
  )
  printHeader(COLUMNS)

  const rows: Row[] = []
  for (const inFlight of RUN.inFlight) {
    const target = {
      ...spec,
      location: spec.location as HandlerLocation,
      concurrency: inFlight,
    } satisfies FunctionTarget<HandlerLocation>
    const cells = new Map<Setup, { callsPerSec: number; p50Ms: number; cpu: number; main: number; threads: number }[]>()
    for (let round = 0; round < RUN.rounds; round++) {
      const order = round % 2 === 0 ? SETUPS : [...SETUPS].reverse()
      for (const setup of order) {
        const workers = setup === 'worker threads' ? new WorkerThreadInvoker(ROOT) : undefined
        const invoker: Invoker<HandlerLocation> = workers ?? new InProcessInvoker(ROOT)
        const loadError = await invoker.prepare(target)
        if (loadError) throw new Error(loadError)
        const call = async () => {
          const outcome = await invoker.invoke({ target, event, onChunk: () => {} })
          if (!outcome.ok) throw new Error(outcome.message)
        }
        const cell = await measure(call, inFlight, {
          seconds: RUN.seconds,
          warmupSeconds: RUN.warmupSeconds,
          probes: { cpu: processCpuUs, main: threadCpuUs },
        })
        const threads = workers?.environments(spec.functionName) ?? 0
        await invoker.close()
        const list = cells.get(setup) ?? []
        list.push({
          callsPerSec: cell.reqPerSec,
          p50Ms: cell.p50Ms,
          cpu: cell.used.cpu / cell.requests,
          main: cell.used.main / cell.requests,
          threads,
        })
        cells.set(setup, list)
      }
    }
    const summary = (setup: Setup) => {
      const list = cells.get(setup)!
      const rates = list.map((c) => c.callsPerSec)
      return {
        callsPerSec: median(rates),
        callsPerSecMin: Math.min(...rates),
        callsPerSecMax: Math.max(...rates),
        p50Ms: median(list.map((c) => c.p50Ms)),
        cpuUsPerCall: median(list.map((c) => c.cpu)),
        mainThreadCpuUsPerCall: median(list.map((c) => c.main)),
        threads: list.map((c) => c.threads),
      }
    }
    const base = summary('in-process')
    for (const setup of SETUPS) {
      const s = summary(setup)
      const row: Row = {
        setup,
        inFlight,
        rounds: RUN.rounds,
        ...s,
        ratioToInProcess: s.callsPerSec / base.callsPerSec,
        cpuRatioToInProcess: s.cpuUsPerCall / base.cpuUsPerCall,
      }
      rows.push(row)
      printRow(COLUMNS, row)
    }
  }
  console.log(`\nload average after: ${loadAverage().join(' / ')}`)
  writeResults(RUN.out, {
    bench: 'invokers',
    date: new Date().toISOString(),
    machine,
    settings: { seconds: RUN.seconds, warmupSeconds: RUN.warmupSeconds, rounds: RUN.rounds, inFlight: RUN.inFlight },
    aggregation: 'median over rounds; rounds alternate the order of setups',
    rows,
  })
}

await runBench(main)

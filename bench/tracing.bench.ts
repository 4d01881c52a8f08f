/**
 * What tracing costs a request, on the embedded broker.
 *
 *   npm run bench:tracing
 *   BENCH_BASELINE_DIR=/tmp/before npm run bench:tracing   # also: the bridge before tracing existed
 *
 * Setups, each a runtime of its own calling joke-service's `tell-joke`
 * through RequestClient -> MemoryBroker -> bridge -> invoker -> handler:
 *   off     this bridge, no OTEL_* variables: tracing off (the SDK not even loaded)
 *   on      this bridge, OTLP to BENCH_OTLP_ENDPOINT with always_on: every request traced
 *           (a process, an invocation and a send span) and exported
 *   before  (with BENCH_BASELINE_DIR) the same, from another checkout of the
 *           project: e.g. `git worktree add /tmp/before <commit>` and a
 *           node_modules link; the comparison "off vs before" is the cost of
 *           the tracing hooks when tracing is off
 *
 * A shared machine is noisy: every setup runs in every round, in a rotated
 * order, each cell a fresh runtime with a warm-up; the table gives each
 * setup's median over the rounds and the range, and the ratios are medians
 * of the per-round ratios (same round, so same noise).
 *
 * Environment:
 *   BENCH_ROUNDS          rounds (default 5)
 *   BENCH_SECONDS         measured seconds per cell (default 2)
 *   BENCH_WARMUP_SECONDS  warm-up seconds per cell (default 1)
 *   BENCH_INFLIGHT        in-flight levels (default 1,16)
 *   BENCH_INVOKERS        invokers (default in-process)
 *   BENCH_OTLP_ENDPOINT   where `on` exports (default http://127.0.0.1:4318: scripts/jaeger.sh start)
 *   BENCH_BASELINE_DIR    another checkout to compare with, as `before`
 *   BENCH_OUT             default bench/results/tracing.json (git-ignored)
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { InvokerKind } from '../bridge/project/settings.ts'
import { inRotation, measure } from './closed-loop.ts'
import { processCpuUs } from './cpu-and-memory.ts'
import { invokersEnv, roundsSettings } from './env-settings.ts'
import { loadJokeTool } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeBenchResults } from './results-file.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtInt, printHeader, printRow } from './tables.ts'

const RUN = roundsSettings('tracing', { seconds: 2, warmupSeconds: 1, rounds: 5, inFlight: '1,16' })
const INVOKER_KINDS = invokersEnv('BENCH_INVOKERS', 'in-process')
const OTLP_ENDPOINT = process.env.BENCH_OTLP_ENDPOINT || 'http://127.0.0.1:4318'
const BASELINE_DIR = process.env.BENCH_BASELINE_DIR ? resolve(process.env.BENCH_BASELINE_DIR) : undefined

type SetupName = 'before' | 'off' | 'on'

/** The parts of a checkout the bench drives: the same modules, from this checkout or another. */
interface Checkout {
  startRuntime: typeof import('../bridge/runtime.ts').startRuntime
  resolveSettings: typeof import('../bridge/project/settings.ts').resolveSettings
  RequestClient: typeof import('../bridge/trustgraph/request-client.ts').RequestClient
  MemoryBroker: typeof import('../bridge/transports/memory/memory-transport.ts').MemoryBroker
}

async function loadCheckout(root: string): Promise<Checkout> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href)
  const [runtime, settings, client, memory] = await Promise.all([
    load('bridge/runtime.ts'),
    load('bridge/project/settings.ts'),
    load('bridge/trustgraph/request-client.ts'),
    load('bridge/transports/memory/memory-transport.ts'),
  ])
  return {
    startRuntime: runtime.startRuntime,
    resolveSettings: settings.resolveSettings,
    RequestClient: client.RequestClient,
    MemoryBroker: memory.MemoryBroker,
  }
}

interface Cell {
  reqPerSec: number
  p50Us: number
  cpuUsPerRequest: number
}

/** One setup at one in-flight level: a fresh runtime, a warm-up, the measured loop, stopped (spans flushed). */
async function runCell(
  checkout: Checkout,
  setup: SetupName,
  kind: InvokerKind,
  inFlight: number,
  serviceName: string,
): Promise<Cell> {
  const { project, spec, request } = loadJokeTool()
  const served = { ...project, services: [{ ...spec, concurrency: 64 }] }
  const env: Record<string, string> =
    setup === 'on'
      ? {
          OTEL_EXPORTER_OTLP_ENDPOINT: OTLP_ENDPOINT,
          OTEL_TRACES_SAMPLER: 'always_on',
          OTEL_SERVICE_NAME: serviceName,
        }
      : {}
  const runtime = await checkout.startRuntime(served, checkout.resolveSettings({ invoker: kind, port: '' }, {}), {
    memoryBroker: new checkout.MemoryBroker(),
    env,
  } as Parameters<Checkout['startRuntime']>[2])
  const client = new checkout.RequestClient(await runtime.connectClient(), spec)
  await client.start()
  try {
    const call = () => client.call(request)
    const { used, ...stats } = await measure(call, inFlight, {
      seconds: RUN.seconds,
      warmupSeconds: RUN.warmupSeconds,
      probes: { process: processCpuUs },
    })
    return { reqPerSec: stats.reqPerSec, p50Us: stats.p50Ms * 1000, cpuUsPerRequest: used.process / stats.requests }
  } finally {
    await client.close()
    await runtime.stop()
  }
}

interface Row {
  invoker: InvokerKind
  inFlight: number
  setup: SetupName
  reqPerSec: number[]
  p50Us: number[]
  cpuUsPerRequest: number[]
}

const range = (values: number[], digits: number, f = fmt) =>
  `${f(Math.min(...values), digits)}–${f(Math.max(...values), digits)}`

const COLUMNS: Column<Row>[] = [
  { title: 'invoker', width: 10, align: 'left', cell: (r) => r.invoker },
  { title: 'in-flight', width: 9, cell: (r) => String(r.inFlight) },
  { title: 'setup', width: 6, align: 'left', cell: (r) => r.setup },
  { title: 'req/s median', width: 12, cell: (r) => fmtInt(median(r.reqPerSec)) },
  { title: 'req/s range', width: 15, cell: (r) => range(r.reqPerSec, 0, (n) => fmtInt(n)) },
  { title: 'p50 µs', width: 8, cell: (r) => fmt(median(r.p50Us), 1) },
  { title: 'cpu µs/req', width: 10, cell: (r) => fmt(median(r.cpuUsPerRequest), 1) },
  { title: 'cpu range', width: 13, cell: (r) => range(r.cpuUsPerRequest, 1) },
]

async function main(): Promise<void> {
  const machine = machineInfo({ v8: process.versions.v8 })
  console.log(describeMachine(machine))
  const loadBefore = loadAverage()
  console.log(`load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min)`)
  const here = await loadCheckout(ROOT)
  const checkouts: Partial<Record<SetupName, Checkout>> = { off: here, on: here }
  if (BASELINE_DIR) checkouts.before = await loadCheckout(BASELINE_DIR)
  const setups = (Object.keys(checkouts) as SetupName[]).sort()
  console.log(
    `setups: ${setups.join(', ')}${BASELINE_DIR ? ` (before = ${BASELINE_DIR})` : ''}; on exports to ${OTLP_ENDPOINT}`,
  )
  console.log(
    `${RUN.rounds} rounds × (${RUN.warmupSeconds}s warm-up + ${RUN.seconds}s measured) per cell, in-flight ${RUN.inFlight.join(', ')}\n`,
  )

  const rows: Row[] = []
  const serviceName = `toolbridge-bench-${Date.now()}`
  for (const kind of INVOKER_KINDS) {
    for (const inFlight of RUN.inFlight) {
      const bySetup = new Map<SetupName, Row>(
        setups.map((setup) => [
          setup,
          { invoker: kind, inFlight, setup, reqPerSec: [], p50Us: [], cpuUsPerRequest: [] },
        ]),
      )
      for (let round = 0; round < RUN.rounds; round++) {
        // Rotated: no setup always runs first (a fresh process) or last (a warm, fragmented heap).
        const order = inRotation(setups, round)
        for (const setup of order) {
          const cell = await runCell(checkouts[setup]!, setup, kind, inFlight, serviceName)
          const row = bySetup.get(setup)!
          row.reqPerSec.push(cell.reqPerSec)
          row.p50Us.push(cell.p50Us)
          row.cpuUsPerRequest.push(cell.cpuUsPerRequest)
        }
      }
      rows.push(...bySetup.values())
    }
  }

  printHeader(COLUMNS)
  for (const row of rows) printRow(COLUMNS, row)

  // Ratios and differences per round (same round, same noise), then their median and range.
  const comparisons: Record<string, unknown>[] = []
  console.log('')
  for (const kind of INVOKER_KINDS) {
    for (const inFlight of RUN.inFlight) {
      const of = (setup: SetupName) =>
        rows.find((r) => r.invoker === kind && r.inFlight === inFlight && r.setup === setup)
      const off = of('off')!
      const on = of('on')!
      const before = of('before')
      const perRound = (f: (i: number) => number) => Array.from({ length: RUN.rounds }, (_, i) => f(i))
      const cpuOn = perRound((i) => on.cpuUsPerRequest[i]! - off.cpuUsPerRequest[i]!)
      const p50On = perRound((i) => on.p50Us[i]! - off.p50Us[i]!)
      const rateOn = perRound((i) => on.reqPerSec[i]! / off.reqPerSec[i]!)
      const line = [
        `${kind}, in-flight ${inFlight}:`,
        `on vs off: req/s ×${fmt(median(rateOn), 3)} (${range(rateOn, 3)}),`,
        `CPU +${fmt(median(cpuOn), 1)} µs/req (${range(cpuOn, 1)}), p50 +${fmt(median(p50On), 1)} µs (${range(p50On, 1)})`,
      ]
      const comparison: Record<string, unknown> = { invoker: kind, inFlight, onVsOff: { rateOn, cpuOn, p50On } }
      if (before) {
        const rateOff = perRound((i) => off.reqPerSec[i]! / before.reqPerSec[i]!)
        const cpuOff = perRound((i) => off.cpuUsPerRequest[i]! - before.cpuUsPerRequest[i]!)
        line.push(
          `\n  off vs before: req/s ×${fmt(median(rateOff), 3)} (${range(rateOff, 3)}), CPU ${fmt(median(cpuOff), 1)} µs/req (${range(cpuOff, 1)})`,
        )
        comparison.offVsBefore = { rateOff, cpuOff }
      }
      comparisons.push(comparison)
      console.log(line.join(' '))
    }
  }
  console.log('')
  writeBenchResults(
    RUN.out,
    'tracing',
    machine,
    loadBefore,
    {
      settings: {
        rounds: RUN.rounds,
        seconds: RUN.seconds,
        warmupSeconds: RUN.warmupSeconds,
        inFlight: RUN.inFlight,
        invokers: INVOKER_KINDS,
        otlpEndpoint: OTLP_ENDPOINT,
        baseline: BASELINE_DIR ?? null,
      },
      rows,
      comparisons,
    },
    ' (includes this bench)',
  )
}

await main()

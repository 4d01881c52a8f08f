/**
 * Bridge throughput and latency on the embedded broker.
 *
 *   npm run bench
 *
 * For each invoker (`in-process`, `worker-threads`) and each number
 * of requests in flight, a closed-loop load generator (N callers, each
 * sending its next request as soon as the previous answer arrives) calls
 * joke-service's `tell-joke` (topic "programming") through
 * RequestClient -> MemoryBroker -> bridge -> invoker -> handler and back.
 * Two baselines, measured in the same run: the same loop around a direct
 * `handler(event, context)` call of functions/joke/handler.ts with the event
 * the bridge hands the function (`direct`), and a raw echo service on the
 * same embedded broker and client that answers every request with the bytes
 * the bridge sends for it (`echo`: what a hand-written service costs).
 *
 * Each cell: a warm-up, then a fixed duration; latency is performance.now()
 * around every call, percentiles from the sorted samples (exact). Also
 * recorded: process CPU time per request (all threads), which moves less
 * than req/s when other work shares the machine, and the process's RSS after
 * the cell (one process for every setup: it includes the ones before).
 *
 * The p50 overhead target is judged at in-flight 1: with more in flight a
 * closed loop's latency is mostly queueing (in-flight / throughput).
 *
 * Environment:
 *   BENCH_SECONDS            measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS     warm-up seconds per cell (default 1)
 *   BENCH_INFLIGHT           in-flight levels, comma separated (default 1,16,64)
 *   BENCH_INVOKERS           setups to run (default in-process,worker-threads,worker-threads-shared: worker threads with
 *                            invocationsPerWorker BENCH_PER_WORKER, default 64)
 *   BENCH_CONCURRENCY        joke-service `concurrency` override: the bridge's prefetch and,
 *                            for `worker-threads`, the worker pool size (default 64; serverless.yml says 8)
 *   BENCH_LOCAL_CONCURRENCY  override of the above for the `worker-threads` invoker only
 *   BENCH_OUT                where to write the JSON (default bench/results/bridge.json)
 *
 * Results are written to bench/results/bridge.json (git-ignored).
 */
import { resolve } from 'node:path'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { MemoryBroker, MemoryTransport } from '../bridge/transports/memory/memory-transport.ts'
import { handler } from '../functions/joke/handler.ts'
import { encodeResponse, finalResponse, ID_PROPERTY, resultText, UNKNOWN_ID } from '../shared/protocol.ts'
import { type Call, type LoopStats, measure } from './closed-loop.ts'
import { processCpuUs, threadCpuUs } from './cpu-and-memory.ts'
import { type BridgeSetup, inFlightEnv, numberEnv, setupInvoker, setupsEnv } from './env-settings.ts'
import { ARGUMENTS, loadJokeTool, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeBenchResults } from './results-file.ts'
import { type Column, fmt, fmtInt, printHeader, printRow } from './tables.ts'

// ---------------------------------------------------------------- settings

const SECONDS = numberEnv('BENCH_SECONDS', 3, 0.1)
const WARMUP_SECONDS = numberEnv('BENCH_WARMUP_SECONDS', 1, 0)
const IN_FLIGHT = inFlightEnv('BENCH_INFLIGHT', '1,16,64')
const INVOKER_KINDS = setupsEnv('BENCH_INVOKERS', 'in-process,worker-threads,worker-threads-shared')
const CONCURRENCY = Math.floor(numberEnv('BENCH_CONCURRENCY', 64, 1))
const LOCAL_CONCURRENCY = Math.floor(numberEnv('BENCH_LOCAL_CONCURRENCY', CONCURRENCY, 1))
const concurrencyFor = (kind: BridgeSetup) =>
  kind === 'in-process' || kind === 'lambda' ? CONCURRENCY : LOCAL_CONCURRENCY
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/bridge.json')

const TARGETS = {
  inProcessReqPerSec: 20_000,
  localReqPerSec: 8_000,
  p50OverheadMs: 0.3,
}

// ---------------------------------------------------------------- one cell

interface CellStats extends LoopStats {
  /** CPU time of the whole process (all threads) per request, in microseconds. */
  cpuUsPerRequest: number
  /** CPU time of the main thread (broker, bridge, client) per request, in microseconds. */
  mainThreadCpuUsPerRequest: number
  /** RSS of the bench process after the cell, MiB. */
  rssMiB: number
}

async function measureCell(call: Call, inFlight: number): Promise<CellStats> {
  const probes = { process: processCpuUs, mainThread: threadCpuUs }
  const { used, ...stats } = await measure(call, inFlight, { seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, probes })
  return {
    ...stats,
    cpuUsPerRequest: used.process / stats.requests,
    mainThreadCpuUsPerRequest: used.mainThread / stats.requests,
    rssMiB: process.memoryUsage.rss() / 2 ** 20,
  }
}

/** A hand-written service on the embedded broker: answers every request with fixed bytes, under its id. */
async function startEchoService(
  broker: MemoryBroker,
  spec: { requestQueue: string; responseQueue: string },
  concurrency: number,
  body: Uint8Array,
) {
  const transport = new MemoryTransport(broker)
  await transport.connect()
  await transport.consume(spec.requestQueue, { subscription: 'bench-echo', concurrency }, (delivery) => {
    const id = delivery.properties[ID_PROPERTY] ?? UNKNOWN_ID
    void transport.publish(spec.responseQueue, body, { [ID_PROPERTY]: id }).then(() => delivery.ack())
  })
  return transport
}

// ---------------------------------------------------------------- the bench

interface Row extends CellStats {
  invoker: 'direct' | 'echo' | BridgeSetup
  inFlight: number
  concurrency: number | null
  ratioToBaseline: number
  /** req/s over the raw echo service's at the same in-flight level. */
  ratioToEcho: number | null
  p50OverheadMs: number
}

const COLUMNS: Column<Row>[] = [
  { title: 'invoker', width: 10, align: 'left', cell: (r) => r.invoker },
  { title: 'in-flight', width: 9, cell: (r) => String(r.inFlight) },
  { title: 'concurrency', width: 11, cell: (r) => String(r.concurrency ?? '-') },
  { title: 'req/s', width: 10, cell: (r) => fmtInt(r.reqPerSec) },
  { title: 'p50 ms', width: 8, cell: (r) => fmt(r.p50Ms, 3) },
  { title: 'p99 ms', width: 8, cell: (r) => fmt(r.p99Ms, 3) },
  { title: 'vs direct', width: 11, cell: (r) => `${fmt(r.ratioToBaseline, 3)}x` },
  { title: 'p50 +ms', width: 14, cell: (r) => fmt(r.p50OverheadMs, 3) },
  { title: 'cpu us/req', width: 11, cell: (r) => fmt(r.cpuUsPerRequest, 1) },
  { title: 'vs echo', width: 8, cell: (r) => (r.ratioToEcho === null ? '-' : `${fmt(r.ratioToEcho, 2)}x`) },
  { title: 'RSS MiB', width: 8, cell: (r) => fmt(r.rssMiB, 0) },
]

async function main(): Promise<void> {
  const machine = machineInfo({ v8: process.versions.v8 })
  console.log(describeMachine(machine))
  console.log(`node ${machine.node} (V8 ${machine.v8}), ${machine.platform}`)
  // Other work on the machine skews every number below: the load average says how busy it was.
  const loadBefore = loadAverage()
  console.log(`load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min)`)

  // The project as served; only joke-service, with its concurrency overridden. `event` is what the bridge
  // hands the function for this request, so the baseline calls it with the same.
  const { project, spec, request, event } = loadJokeTool()
  const configuredConcurrency = spec.concurrency
  // Built once: the bridge builds one per call, which is part of what it costs.
  const context = lambdaContext(spec.functionName, 'bench-direct', spec.timeoutMs)
  const expected = resultText(await handler(event, context))

  console.log(
    `service: ${SERVICE_ID} (tool ${TOOL_NAME}, topic "${ARGUMENTS.topic}"), concurrency in serverless.yml ${configuredConcurrency}, ` +
      `bench uses ${INVOKER_KINDS.map((k) => `${k}=${concurrencyFor(k)}`).join(', ')}`,
  )
  console.log(`event: ${JSON.stringify(event)}`)
  console.log(
    `cells: ${WARMUP_SECONDS}s warm-up + ${SECONDS}s measured, in-flight ${IN_FLIGHT.join(', ')}, closed loop`,
  )
  console.log(
    "vs direct = req/s over the direct call's; p50 +ms = p50 minus the direct call's; cpu us/req = process CPU (all threads) per request",
  )
  console.log(
    "vs echo = req/s over the raw echo service's on the same broker and client; RSS = the bench process after the cell",
  )
  console.log('')
  printHeader(COLUMNS)

  const rows: Row[] = []
  const baseline = new Map<number, CellStats>()

  // Baseline: the same loop around a direct call.
  const direct: Call = () => handler(event, context)
  for (const inFlight of IN_FLIGHT) {
    const stats = await measureCell(direct, inFlight)
    baseline.set(inFlight, stats)
    const row: Row = {
      invoker: 'direct',
      inFlight,
      concurrency: null,
      ...stats,
      ratioToBaseline: 1,
      ratioToEcho: null,
      p50OverheadMs: 0,
    }
    rows.push(row)
    printRow(COLUMNS, row)
  }

  /** A row measured after the direct call's at its in-flight level, against it; printed as it comes. */
  const addRow = (
    invoker: Row['invoker'],
    inFlight: number,
    concurrency: number,
    stats: CellStats,
    ratioToEcho: number,
  ) => {
    const base = baseline.get(inFlight)!
    const row: Row = {
      invoker,
      inFlight,
      concurrency,
      ...stats,
      ratioToBaseline: stats.reqPerSec / base.reqPerSec,
      ratioToEcho,
      p50OverheadMs: stats.p50Ms - base.p50Ms,
    }
    rows.push(row)
    printRow(COLUMNS, row)
  }

  // Baseline: a raw echo service on the embedded broker, driven by the same client.
  const echoes = new Map<number, CellStats>()
  {
    const broker = new MemoryBroker()
    const echo = await startEchoService(broker, spec, CONCURRENCY, encodeResponse(finalResponse(expected)))
    const transport = new MemoryTransport(broker)
    await transport.connect()
    const client = new RequestClient(transport, spec)
    await client.start()
    try {
      if ((await client.call(request, { timeoutMs: 30_000 })) !== expected) throw new Error('echo: unexpected answer')
      const call: Call = () => client.call(request)
      for (const inFlight of IN_FLIGHT) {
        const stats = await measureCell(call, inFlight)
        echoes.set(inFlight, stats)
        addRow('echo', inFlight, CONCURRENCY, stats, 1)
      }
    } finally {
      await client.close()
      await transport.close()
      await echo.close()
    }
  }

  for (const kind of INVOKER_KINDS) {
    const concurrency = concurrencyFor(kind)
    const { invoker, invocationsPerWorker } = setupInvoker(kind)
    const served = { ...project, services: [{ ...spec, concurrency, invocationsPerWorker }] }
    // Embedded broker, HTTP gateway off (port ''), nothing from TOOLBRIDGE_* in the environment.
    const runtime = await startRuntime(served, resolveSettings({ invoker, port: '' }, {}), {
      memoryBroker: new MemoryBroker(),
    })
    const client = new RequestClient(await runtime.connectClient(), spec)
    await client.start()
    try {
      const answer = await client.call(request, { timeoutMs: 30_000 })
      if (answer !== expected) throw new Error(`${kind}: unexpected answer ${JSON.stringify(answer)}`)
      const call: Call = () => client.call(request)
      // Bring every execution environment up (worker threads start lazily) before timing anything.
      for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: concurrency }, call))
      for (const inFlight of IN_FLIGHT) {
        const stats = await measureCell(call, inFlight)
        addRow(kind, inFlight, concurrency, stats, stats.reqPerSec / echoes.get(inFlight)!.reqPerSec)
      }
    } finally {
      await client.close()
      await runtime.stop()
    }
  }

  // Targets: the best throughput over the in-flight levels; the overhead at in-flight 1.
  const best = (kind: BridgeSetup) => {
    const mine = rows.filter((r) => r.invoker === kind)
    return mine.length ? mine.reduce((a, b) => (b.reqPerSec > a.reqPerSec ? b : a)) : undefined
  }
  const lowest = Math.min(...IN_FLIGHT)
  const targets: { target: string; goal: string; reached: string; met: boolean | null }[] = []
  const bestInProcess = best('in-process')
  const bestLocal = best('worker-threads')
  targets.push({
    target: 'in-process throughput',
    goal: `>= ${TARGETS.inProcessReqPerSec} req/s`,
    reached: bestInProcess
      ? `${fmtInt(bestInProcess.reqPerSec)} req/s (in-flight ${bestInProcess.inFlight})`
      : 'not run',
    met: bestInProcess ? bestInProcess.reqPerSec >= TARGETS.inProcessReqPerSec : null,
  })
  targets.push({
    target: 'worker-thread throughput',
    goal: `>= ${TARGETS.localReqPerSec} req/s`,
    reached: bestLocal ? `${fmtInt(bestLocal.reqPerSec)} req/s (in-flight ${bestLocal.inFlight})` : 'not run',
    met: bestLocal ? bestLocal.reqPerSec >= TARGETS.localReqPerSec : null,
  })
  for (const kind of INVOKER_KINDS) {
    const row = rows.find((r) => r.invoker === kind && r.inFlight === lowest)
    if (!row) continue
    targets.push({
      target: `${kind} p50 overhead over the direct call (in-flight ${lowest})`,
      goal: `<= ${TARGETS.p50OverheadMs} ms`,
      reached: `${fmt(row.p50OverheadMs, 3)} ms`,
      met: row.p50OverheadMs <= TARGETS.p50OverheadMs,
    })
  }
  console.log('')
  console.log(
    `targets (throughput: best in-flight level; p50 overhead: at in-flight ${lowest}, where latency is not queueing):`,
  )
  for (const t of targets) {
    const verdict = t.met === null ? 'n/a ' : t.met ? 'MET ' : 'MISS'
    console.log(`  ${verdict}  ${t.target}: ${t.reached} (goal ${t.goal})`)
  }

  console.log('')
  writeBenchResults(
    OUT,
    'bridge',
    machine,
    loadBefore,
    {
      settings: {
        service: SERVICE_ID,
        tool: TOOL_NAME,
        arguments: ARGUMENTS,
        event,
        transport: 'memory (MemoryBroker / MemoryTransport)',
        configuredConcurrency,
        concurrency: Object.fromEntries(INVOKER_KINDS.map((k) => [k, concurrencyFor(k)])),
        inFlight: IN_FLIGHT,
        warmupSeconds: WARMUP_SECONDS,
        seconds: SECONDS,
        loadGenerator: 'closed loop: each of in-flight callers sends its next request when the previous settles',
        baseline: 'direct await handler(event, context) of functions/joke/handler.ts, same loop, same run',
        echo: "a raw echo service on the same MemoryBroker answering the bridge's bytes for this request, same client, same run",
      },
      rows,
      targets,
    },
    ' (includes this bench)',
  )
}

await main()

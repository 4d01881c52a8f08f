/**
 * Bridge throughput and latency on the embedded broker.
 *
 *   npm run bench
 *
 * For each invoker (`in-process`, `local` = worker threads) and each number
 * of requests in flight, a closed-loop load generator (N callers, each
 * sending its next request as soon as the previous answer arrives) calls
 * joke-service's `tell-joke` (topic "programming") through
 * RequestClient -> MemoryBroker -> bridge -> invoker -> handler and back.
 * The baseline is the same loop around a direct `handler(event, context)`
 * call of functions/joke/handler.ts with the event the bridge hands the
 * function, measured in the same run.
 *
 * Each cell: a warm-up, then a fixed duration; latency is performance.now()
 * around every call, percentiles from the sorted samples (exact). Also
 * recorded: process CPU time per request (all threads), which moves less
 * than req/s when other work shares the machine.
 *
 * The p50 overhead target is judged at in-flight 1: with more in flight a
 * closed loop's latency is mostly queueing (in-flight / throughput).
 *
 * Environment:
 *   BENCH_SECONDS            measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS     warm-up seconds per cell (default 1)
 *   BENCH_INFLIGHT           in-flight levels, comma separated (default 1,16,64)
 *   BENCH_INVOKERS           invokers to run (default in-process,local)
 *   BENCH_CONCURRENCY        joke-service `concurrency` override: the bridge's prefetch and,
 *                            for `local`, the worker pool size (default 64; serverless.yml says 8)
 *   BENCH_LOCAL_CONCURRENCY  override of the above for the `local` invoker only
 *   BENCH_OUT                where to write the JSON (default bench/results/bridge.json)
 *
 * Results are written to bench/results/bridge.json (git-ignored).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { RequestClient } from '../bridge/client.ts'
import { INVOKERS, loadProject, resolveSettings, type InvokerKind } from '../bridge/config.ts'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { MemoryBroker } from '../bridge/transports/memory.ts'
import { handler } from '../functions/joke/handler.ts'
import { decodeRequest, encodeRequest, resultText } from '../shared/protocol.ts'

// ---------------------------------------------------------------- settings

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const SERVICE_ID = 'joke-service'
const TOOL_NAME = 'tell-joke'
const ARGUMENTS = { topic: 'programming' }

function numberEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}="${raw}" must be a number >= ${min}`)
  return n
}

function listEnv(name: string, fallback: string): string[] {
  return (process.env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

const SECONDS = numberEnv('BENCH_SECONDS', 3, 0.1)
const WARMUP_SECONDS = numberEnv('BENCH_WARMUP_SECONDS', 1, 0)
const IN_FLIGHT = listEnv('BENCH_INFLIGHT', '1,16,64').map((s) => {
  const n = Number(s)
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_INFLIGHT: "${s}" is not a positive integer`)
  return n
})
const INVOKER_KINDS = listEnv('BENCH_INVOKERS', 'in-process,local').map((s) => {
  if (!(INVOKERS as readonly string[]).includes(s)) throw new Error(`BENCH_INVOKERS: "${s}" must be one of ${INVOKERS.join(', ')}`)
  return s as InvokerKind
})
const CONCURRENCY = Math.floor(numberEnv('BENCH_CONCURRENCY', 64, 1))
const LOCAL_CONCURRENCY = Math.floor(numberEnv('BENCH_LOCAL_CONCURRENCY', CONCURRENCY, 1))
const concurrencyFor = (kind: InvokerKind) => (kind === 'local' ? LOCAL_CONCURRENCY : CONCURRENCY)
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/bridge.json')

const TARGETS = {
  inProcessReqPerSec: 20_000,
  localReqPerSec: 8_000,
  p50OverheadMs: 0.3,
}

// ---------------------------------------------------------------- samples and percentiles

/** Latencies in ms, in a growable Float64Array (millions of samples for the direct call). */
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

/** Nearest-rank percentile of sorted samples. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]!
}

interface CellStats {
  requests: number
  errors: number
  seconds: number
  reqPerSec: number
  meanMs: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  p999Ms: number
  maxMs: number
  /** CPU time of the whole process (all threads) per request, in microseconds. */
  cpuUsPerRequest: number
  /** CPU time of the main thread (broker, bridge, client) per request, in microseconds. */
  mainThreadCpuUsPerRequest: number
}

// ---------------------------------------------------------------- closed-loop load generator

type Call = () => Promise<unknown>

/**
 * `inFlight` callers, each calling again as soon as its call settles, until
 * `seconds` have passed since the start. A call is timed from just before it
 * is made to just after it settles.
 */
async function closedLoop(call: Call, inFlight: number, seconds: number, record: boolean): Promise<CellStats> {
  const samples = new Samples()
  let errors = 0
  let firstError: unknown
  const cpuStart = process.cpuUsage()
  const threadStart = process.threadCpuUsage()
  const start = performance.now()
  const deadline = start + seconds * 1000
  const caller = async () => {
    for (;;) {
      const t0 = performance.now()
      if (t0 >= deadline) return
      try {
        await call()
      } catch (err) {
        errors++
        firstError ??= err
      }
      if (record) samples.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: inFlight }, caller))
  const elapsedMs = performance.now() - start
  const cpu = process.cpuUsage(cpuStart)
  const thread = process.threadCpuUsage(threadStart)
  if (errors > 0) console.error(`  ${errors} call(s) failed; first: ${(firstError as Error)?.message ?? String(firstError)}`)
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
    cpuUsPerRequest: (cpu.user + cpu.system) / sorted.length,
    mainThreadCpuUsPerRequest: (thread.user + thread.system) / sorted.length,
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function measure(call: Call, inFlight: number): Promise<CellStats> {
  if (WARMUP_SECONDS > 0) await closedLoop(call, inFlight, WARMUP_SECONDS, false)
  await pause(50) // let stragglers (timers, GC) settle between warm-up and measurement
  return closedLoop(call, inFlight, SECONDS, true)
}

// ---------------------------------------------------------------- the bench

interface Row extends CellStats {
  invoker: 'direct' | InvokerKind
  inFlight: number
  concurrency: number | null
  ratioToBaseline: number
  p50OverheadMs: number
}

const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-')

function printRow(row: Row): void {
  const cells = [
    row.invoker.padEnd(10),
    String(row.inFlight).padStart(9),
    String(row.concurrency ?? '-').padStart(11),
    fmtInt(row.reqPerSec).padStart(10),
    fmt(row.p50Ms, 3).padStart(8),
    fmt(row.p99Ms, 3).padStart(8),
    `${fmt(row.ratioToBaseline, 3)}x`.padStart(11),
    fmt(row.p50OverheadMs, 3).padStart(14),
    fmt(row.cpuUsPerRequest, 1).padStart(11),
  ]
  console.log(cells.join('  '))
}

function printHeader(): void {
  const head = ['invoker'.padEnd(10), 'in-flight'.padStart(9), 'concurrency'.padStart(11), 'req/s'.padStart(10), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'vs direct'.padStart(11), 'p50 +ms'.padStart(14), 'cpu us/req'.padStart(11)]
  console.log(head.join('  '))
  console.log('-'.repeat(head.join('  ').length))
}

async function main(): Promise<void> {
  const cpus = os.cpus()
  const machine = {
    cores: cpus.length,
    availableParallelism: os.availableParallelism(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    v8: process.versions.v8,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
  }
  console.log(`machine: ${machine.cores} cores (${machine.cpuModel}), available parallelism ${machine.availableParallelism}, ${machine.totalMemoryMiB} MiB`)
  console.log(`node ${machine.node} (V8 ${machine.v8}), ${machine.platform}`)
  // Other work on the machine skews every number below: the load average says how busy it was.
  const loadBefore = os.loadavg().map((n) => Number(n.toFixed(2)))
  console.log(`load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min)`)

  // The project as served; only joke-service, with its concurrency overridden.
  const project = loadProject(resolve(ROOT, 'serverless.yml'))
  const spec = project.services.find((s) => s.id === SERVICE_ID)
  const tool = spec?.tools.find((t) => t.name === TOOL_NAME)
  if (!spec || !tool) throw new Error(`serverless.yml has no ${SERVICE_ID} / ${TOOL_NAME}`)
  const configuredConcurrency = spec.concurrency
  const request = { config: tool.config, arguments: ARGUMENTS }

  // The event the bridge hands the function for this request, so the baseline calls it with the same.
  const decoded = decodeRequest(encodeRequest(request))
  if (!decoded.ok) throw new Error(decoded.message)
  const event = decoded.value
  // Built once: the bridge builds one per call, which is part of what it costs.
  const context = lambdaContext(spec.functionName, 'bench-direct', spec.timeoutMs)
  const expected = resultText(await handler(event, context))

  console.log(
    `service: ${SERVICE_ID} (tool ${TOOL_NAME}, topic "${ARGUMENTS.topic}"), concurrency in serverless.yml ${configuredConcurrency}, ` +
      `bench uses ${INVOKER_KINDS.map((k) => `${k}=${concurrencyFor(k)}`).join(', ')}`,
  )
  console.log(`event: ${JSON.stringify(event)}`)
  console.log(`cells: ${WARMUP_SECONDS}s warm-up + ${SECONDS}s measured, in-flight ${IN_FLIGHT.join(', ')}, closed loop`)
  console.log('vs direct = req/s over the direct call\'s; p50 +ms = p50 minus the direct call\'s; cpu us/req = process CPU (all threads) per request')
  console.log('')
  printHeader()

  const rows: Row[] = []
  const baseline = new Map<number, CellStats>()

  // Baseline: the same loop around a direct call.
  const direct: Call = () => handler(event, context)
  for (const inFlight of IN_FLIGHT) {
    const stats = await measure(direct, inFlight)
    baseline.set(inFlight, stats)
    const row: Row = { invoker: 'direct', inFlight, concurrency: null, ...stats, ratioToBaseline: 1, p50OverheadMs: 0 }
    rows.push(row)
    printRow(row)
  }

  for (const kind of INVOKER_KINDS) {
    const concurrency = concurrencyFor(kind)
    const served = { ...project, services: [{ ...spec, concurrency }] }
    // Embedded broker, HTTP gateway off (port ''), nothing from TOOLBRIDGE_* in the environment.
    const runtime = await startRuntime(served, resolveSettings({ invoker: kind, port: '' }, {}), { memoryBroker: new MemoryBroker() })
    const client = new RequestClient(await runtime.connectClient(), spec)
    await client.start()
    try {
      const answer = await client.call(request, { timeoutMs: 30_000 })
      if (answer !== expected) throw new Error(`${kind}: unexpected answer ${JSON.stringify(answer)}`)
      const call: Call = () => client.call(request)
      // Bring every execution environment up (worker threads start lazily) before timing anything.
      for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: concurrency }, call))
      for (const inFlight of IN_FLIGHT) {
        const stats = await measure(call, inFlight)
        const base = baseline.get(inFlight)!
        const row: Row = {
          invoker: kind,
          inFlight,
          concurrency,
          ...stats,
          ratioToBaseline: stats.reqPerSec / base.reqPerSec,
          p50OverheadMs: stats.p50Ms - base.p50Ms,
        }
        rows.push(row)
        printRow(row)
      }
    } finally {
      await client.close()
      await runtime.stop()
    }
  }

  // Targets: the best throughput over the in-flight levels; the overhead at in-flight 1.
  const best = (kind: InvokerKind) => {
    const mine = rows.filter((r) => r.invoker === kind)
    return mine.length ? mine.reduce((a, b) => (b.reqPerSec > a.reqPerSec ? b : a)) : undefined
  }
  const lowest = Math.min(...IN_FLIGHT)
  const targets: { target: string; goal: string; reached: string; met: boolean | null }[] = []
  const bestInProcess = best('in-process')
  const bestLocal = best('local')
  targets.push({
    target: 'in-process throughput',
    goal: `>= ${TARGETS.inProcessReqPerSec} req/s`,
    reached: bestInProcess ? `${fmtInt(bestInProcess.reqPerSec)} req/s (in-flight ${bestInProcess.inFlight})` : 'not run',
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
  console.log(`targets (throughput: best in-flight level; p50 overhead: at in-flight ${lowest}, where latency is not queueing):`)
  for (const t of targets) {
    const verdict = t.met === null ? 'n/a ' : t.met ? 'MET ' : 'MISS'
    console.log(`  ${verdict}  ${t.target}: ${t.reached} (goal ${t.goal})`)
  }

  const loadAfter = os.loadavg().map((n) => Number(n.toFixed(2)))
  console.log(`\nload average after: ${loadAfter.join(' / ')} (includes this bench)`)

  const result = {
    bench: 'bridge',
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
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
    },
    rows,
    targets,
  }
  mkdirSync(dirname(OUT), { recursive: true })
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n')
  console.log(`\nwrote ${relative(process.cwd(), OUT) || OUT}`)
}

await main()

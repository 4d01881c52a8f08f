/**
 * What the benchmarks (bench/*.bench.ts) share: settings from the
 * environment, the tool they call, the closed-loop load generator and its
 * statistics, number formatting, a table printer, the machine description
 * and the results file.
 */
import { fork, spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { enableCompileCache } from 'node:module'
import os from 'node:os'
import { dirname, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { loadProject } from '../bridge/project/project.ts'
import { INVOKERS, type InvokerKind } from '../bridge/project/settings.ts'
import { decodeRequest, encodeRequest } from '../shared/protocol.ts'

// As the toolbridge bin does (bridge/cli/toolbridge.js): worker threads then start from the compile cache.
enableCompileCache()

/** The project's root directory. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

// ---------------------------------------------------------------- settings from the environment

/** A number of at least `min`; unset or empty means `fallback`. */
export function numberEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}="${raw}" must be a number >= ${min}`)
  return n
}

/** A comma-separated list; unset or empty means `fallback`. */
export function listEnv(name: string, fallback: string): string[] {
  return (process.env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

/** Numbers of requests in flight: positive integers, comma separated. */
export function inFlightEnv(name: string, fallback: string): number[] {
  return listEnv(name, fallback).map((s) => {
    const n = Number(s)
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: "${s}" is not a positive integer`)
    return n
  })
}

/** Invoker kinds, comma separated. */
export function invokersEnv(name: string, fallback: string): InvokerKind[] {
  return listEnv(name, fallback).map((s) => {
    if (!(INVOKERS as readonly string[]).includes(s))
      throw new Error(`${name}: "${s}" must be one of ${INVOKERS.join(', ')}`)
    return s as InvokerKind
  })
}

/**
 * What a bench serves the tool with: an invoker, or `worker-threads-shared`, the
 * worker threads with several invocations per worker (`invocationsPerWorker`
 * BENCH_PER_WORKER, default 64).
 */
export const SHARED_SETUP = 'worker-threads-shared'
export type BridgeSetup = InvokerKind | typeof SHARED_SETUP
export const PER_WORKER = Math.floor(numberEnv('BENCH_PER_WORKER', 64, 1))

export function setupsEnv(name: string, fallback: string): BridgeSetup[] {
  return listEnv(name, fallback).map((s) => {
    if (s !== SHARED_SETUP && !(INVOKERS as readonly string[]).includes(s))
      throw new Error(`${name}: "${s}" must be one of ${[...INVOKERS, SHARED_SETUP].join(', ')}`)
    return s as BridgeSetup
  })
}

/** The invoker a setup runs on, and its service's `invocationsPerWorker`. */
export function setupInvoker(setup: BridgeSetup): { invoker: InvokerKind; invocationsPerWorker: number } {
  return setup === SHARED_SETUP
    ? { invoker: 'worker-threads', invocationsPerWorker: PER_WORKER }
    : { invoker: setup, invocationsPerWorker: 1 }
}

// ---------------------------------------------------------------- the tool both benches call

export const SERVICE_ID = 'joke-service'
export const TOOL_NAME = 'tell-joke'
export const ARGUMENTS = { topic: 'programming' }

/** serverless.yml's joke-service and its tell-joke tool, the request the benches send, and the event the bridge hands the function for it. */
export function loadJokeTool() {
  const project = loadProject(resolve(ROOT, 'serverless.yml'))
  const spec = project.services.find((s) => s.id === SERVICE_ID)
  const tool = spec?.tools.find((t) => t.name === TOOL_NAME)
  if (!spec || !tool) throw new Error(`serverless.yml has no ${SERVICE_ID} / ${TOOL_NAME}`)
  const request = { config: tool.config, arguments: ARGUMENTS }
  const decoded = decodeRequest(encodeRequest(request))
  if (!decoded.ok) throw new Error(decoded.message)
  return { project, spec, tool, request, event: decoded.value }
}

// ---------------------------------------------------------------- samples and percentiles

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

/** Nearest-rank percentile of sorted samples. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]!
}

/** Median of the finite values; NaN if there are none. */
export function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

// ---------------------------------------------------------------- closed-loop load generator

export type Call = () => Promise<unknown>

/**
 * A reading taken just before and just after a loop, such as the CPU
 * microseconds a process has used so far: the loop reports how far it moved.
 */
export type Probe = () => number

/** CPU microseconds this process (all threads) has used. */
export const processCpuUs: Probe = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}

/** CPU microseconds the calling (main) thread has used. */
export const threadCpuUs: Probe = () => {
  const { user, system } = process.threadCpuUsage()
  return user + system
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

// ---------------------------------------------------------------- formatting and tables

/** `digits` decimals; '-' for NaN and infinities. */
export const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
/** Rounded, with thousands separators; '-' for NaN and infinities. */
export const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-')
/** Like fmt, with a '+' before positive numbers and zero. */
export const fmtSigned = (n: number, digits: number) =>
  Number.isFinite(n) ? (n >= 0 ? '+' : '') + n.toFixed(digits) : '-'

export interface Column<R> {
  title: string
  /** Width the title and every cell are padded to. */
  width: number
  /** Default: right. */
  align?: 'left' | 'right'
  cell: (row: R) => string
}

function tableLine<R>(columns: Column<R>[], texts: string[]): string {
  return texts
    .map((text, i) =>
      columns[i]!.align === 'left' ? text.padEnd(columns[i]!.width) : text.padStart(columns[i]!.width),
    )
    .join('  ')
}

/** The column titles and a rule under them. */
export function printHeader<R>(columns: Column<R>[]): void {
  const head = tableLine(
    columns,
    columns.map((c) => c.title),
  )
  console.log(head)
  console.log('-'.repeat(head.length))
}

export function printRow<R>(columns: Column<R>[], row: R): void {
  console.log(
    tableLine(
      columns,
      columns.map((c) => c.cell(row)),
    ),
  )
}

/** The header and rows, a blank line between in-flight levels. */
export function printTableByInFlight<R extends { inFlight: number }>(columns: Column<R>[], rows: R[]): void {
  printHeader(columns)
  let last: number | undefined
  for (const row of rows) {
    if (last !== undefined && row.inFlight !== last) console.log('')
    last = row.inFlight
    printRow(columns, row)
  }
}

// ---------------------------------------------------------------- machine and results

export interface Machine {
  cores: number
  availableParallelism: number
  cpuModel: string
  totalMemoryMiB: number
  node: string
  platform: string
}

/** The machine and node; `versions` (of what else a bench depends on) follow node's. */
export function machineInfo<V extends Record<string, string>>(versions: V): Machine & V {
  const cpus = os.cpus()
  return {
    cores: cpus.length,
    availableParallelism: os.availableParallelism(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    ...versions,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
  }
}

export function describeMachine(machine: Machine): string {
  return `machine: ${machine.cores} cores (${machine.cpuModel}), available parallelism ${machine.availableParallelism}, ${machine.totalMemoryMiB} MiB`
}

/** 1, 5 and 15 minute load averages, two decimals: other work on the machine skews every number. */
export function loadAverage(): number[] {
  return os.loadavg().map((n) => Number(n.toFixed(2)))
}

/** Writes the results as JSON and says where. */
export function writeResults(path: string, result: object): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, JSON.stringify(result, null, 2) + '\n')
  console.log(`\nwrote ${relative(process.cwd(), path) || path}`)
}

/**
 * Says the load average after the run (`note` after it), then writes the
 * results: the bench's name, the date, the machine with the load average
 * before and after (other work on the machine skews every number), and `body`.
 */
export function writeBenchResults(
  path: string,
  bench: string,
  machine: Machine,
  loadBefore: number[],
  body: object,
  note = '',
): void {
  const loadAfter = loadAverage()
  console.log(`load average after: ${loadAfter.join(' / ')}${note}`)
  writeResults(path, {
    bench,
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
    ...body,
  })
}

/**
 * Runs a bench's `main` and exits: 0 when it ends, 1 with one line when it
 * throws (a broker client left open would otherwise keep the process alive).
 */
export async function runBench(main: () => Promise<void>, onFailure?: () => void): Promise<never> {
  try {
    await main()
    process.exit(0)
  } catch (err) {
    console.error(`\nbench failed: ${(err as Error).message}`)
    onFailure?.()
    process.exit(1)
  }
}

/** A `toolbridge start` in a child process, serving HTTP. */
export interface ChildBridge {
  pid: number
  /** Its HTTP address, as it printed it. */
  url: string
  /** SIGTERM, then the serverless.yml written for it is removed. */
  stop(): Promise<void>
}

/**
 * Runs `toolbridge start` as users run it (through the command, with the
 * settings it starts with) on `yml`, HTTP on a free port, in the repository,
 * without the TOOLBRIDGE_* variables of this shell; resolves once it prints
 * where it serves HTTP. `yml` is removed when it stops.
 */
export async function startChildBridge(options: {
  yml: string
  invoker: string
  /** Default: the embedded broker. */
  broker?: string
  /** Options for node before the command. */
  nodeArgs?: string[]
  /** More options of `toolbridge start`. */
  startArgs?: string[]
}): Promise<ChildBridge> {
  const { yml, invoker, broker, nodeArgs = [], startArgs = [] } = options
  const args = [
    ...nodeArgs,
    'bridge/cli/toolbridge.js',
    '-c',
    yml,
    'start',
    ...(broker === undefined ? [] : ['--broker', broker]),
    '--invoker',
    invoker,
    '--port',
    '0',
    '--log-level',
    'warn',
    ...startArgs,
  ]
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString()
      const match = /HTTP: (http:\/\/[^/\s]+)\/tools/.exec(out)
      if (match) resolveUrl(match[1]!)
    })
    child.once('exit', (code) => reject(new Error(`toolbridge start exited (${code}):\n${out}`)))
  })
  return {
    pid: child.pid!,
    url,
    stop: () =>
      new Promise<void>((done) => {
        child.once('exit', () => done())
        child.kill('SIGTERM')
      }).finally(() => rmSync(yml, { force: true })),
  }
}

/** What a load client (bench/load-client.ts) is started with. */
export interface LoadClientSetup {
  broker: string
  requestQueue: string
  responseQueue: string
  request: object
  /** The answer the first call must get. */
  expected: string
  /** Calls at once in the start-up rounds: the level about to be measured, so that every worker thread is up. */
  startupInFlight: number
  startupTimeoutMs: number
  callTimeoutMs: number
  /** Pulsar only: the client on the optional native addon (`--pulsar-client native`). */
  nativePulsar?: boolean
}

export type ToLoadClient =
  | { type: 'measure'; inFlight: number; seconds: number; warmupSeconds: number }
  | { type: 'stop' }

export type FromLoadClient =
  | { type: 'ready' }
  /** Just before or just after a loop (warm-up, then measured). */
  | { type: 'mark' }
  | { type: 'measured'; stats: LoopStats; clientCpuUs: number }

/** A cell measured through a load client: its loop, how far the probes moved over the measured loop, and the client's own CPU. */
export type MeasuredElsewhere<P extends string> = Measured<P> & { clientCpuUs: number }

export interface LoadClient {
  measure<P extends string>(
    inFlight: number,
    options: { seconds: number; warmupSeconds: number; probes: Record<P, Probe> },
  ): Promise<MeasuredElsewhere<P>>
  stop(): Promise<void>
}

/**
 * Starts bench/load-client.ts in a process of its own; resolves once it has
 * its first answer and the service's execution environments are up. Each
 * `measure` takes the probes' readings (this process's clocks) when the
 * client says its measured loop starts and ends.
 */
export async function startLoadClient(setup: LoadClientSetup): Promise<LoadClient> {
  const child = fork(resolve(ROOT, 'bench/load-client.ts'), [JSON.stringify(setup)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the load client exited (${code})`))),
  )
  exited.catch(() => {})
  // Messages in order, each with the readings of the probes of the cell being measured taken as it arrived.
  let probes: Record<string, Probe> = {}
  const inbox: { message: FromLoadClient; readings: Record<string, number> }[] = []
  let wake: (() => void) | undefined
  child.on('message', (message: FromLoadClient) => {
    const readings = Object.fromEntries(Object.entries(probes).map(([name, probe]) => [name, probe()]))
    inbox.push({ message, readings })
    wake?.()
  })
  const next = async () => {
    while (inbox.length === 0) await Promise.race([new Promise<void>((woken) => (wake = woken)), exited])
    return inbox.shift()!
  }
  const first = await next()
  if (first.message.type !== 'ready') throw new Error(`the load client said ${first.message.type} first`)
  return {
    async measure<P extends string>(
      inFlight: number,
      options: { seconds: number; warmupSeconds: number; probes: Record<P, Probe> },
    ): Promise<MeasuredElsewhere<P>> {
      probes = options.probes
      const marks: Record<string, number>[] = []
      const { seconds, warmupSeconds } = options
      child.send({ type: 'measure', inFlight, seconds, warmupSeconds } satisfies ToLoadClient)
      for (;;) {
        const { message, readings } = await next()
        if (message.type === 'mark') marks.push(readings)
        else if (message.type === 'measured') {
          probes = {}
          // The last two marks are the measured loop's (the warm-up's come first).
          const [before, after] = marks.slice(-2)
          const used = Object.fromEntries(
            Object.keys(options.probes).map((name) => [name, after![name]! - before![name]!]),
          ) as Record<P, number>
          return { ...message.stats, used, clientCpuUs: message.clientCpuUs }
        } else throw new Error(`the load client said ${message.type} while measuring`)
      }
    },
    async stop() {
      if (child.exitCode !== null) return
      const gone = new Promise<void>((done) => child.once('exit', () => done()))
      child.send({ type: 'stop' } satisfies ToLoadClient)
      // A client that cannot close its connection (the broker gone) is not waited for long.
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await gone.finally(() => clearTimeout(killer))
    },
  }
}

/** A setup's service with the load client that drives it; stop() ends both, the client first. */
export interface DrivenService {
  client: LoadClient
  stop(): Promise<void>
}

/**
 * Starts the load client for a service that is already running; if the
 * client cannot start (no answer, a wrong one), the service is stopped too
 * and the error names the setup.
 */
export async function driveService(
  name: string,
  setup: LoadClientSetup,
  stopService: () => Promise<void>,
): Promise<DrivenService> {
  const client = await startLoadClient(setup).catch(async (err: unknown) => {
    await stopService()
    throw new Error(`${name}: ${(err as Error).message}`)
  })
  return {
    client,
    async stop() {
      await client.stop()
      await stopService()
    },
  }
}

/** CPU microseconds another process has used so far, all its threads (utime + stime in /proc/<pid>/stat, clock ticks of 1/100 s as on Linux). */
export function processCpuUsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ') // after "pid (comm) ": field 3 onward
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
}

/** Resident memory of a process, MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]) / 1024
}

// ---------------------------------------------------------------- throughput tables

/** What a throughput table's row shows first: its setup and in-flight level, req/s (median and range over rounds), p50 and p99. */
export interface ThroughputRow {
  setup: string
  inFlight: number
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  p50Ms: number
  p99Ms: number
}

/** The columns a throughput table opens with; `msDigits` decimals for the latencies. */
export function throughputColumns<R extends ThroughputRow>(setupWidth = 10, msDigits = 3): Column<R>[] {
  return [
    { title: 'setup', width: setupWidth, align: 'left', cell: (r) => r.setup },
    { title: 'in-flight', width: 9, cell: (r) => String(r.inFlight) },
    { title: 'req/s', width: 7, cell: (r) => fmtInt(r.reqPerSec) },
    { title: 'min-max req/s', width: 13, cell: (r) => `${fmtInt(r.reqPerSecMin)}-${fmtInt(r.reqPerSecMax)}` },
    { title: 'p50 ms', width: 7, cell: (r) => fmt(r.p50Ms, msDigits) },
    { title: 'p99 ms', width: 7, cell: (r) => fmt(r.p99Ms, msDigits) },
  ]
}

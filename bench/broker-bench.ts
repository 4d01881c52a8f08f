/**
 * The skeleton of the broker benches (rabbitmq, kafka and pulsar .bench.ts):
 * the bridge on a broker against `baseline`, a hand-written echo service on
 * the same broker, measured in the same run. Here is what they share: the
 * settings from the environment, the setups (the bridge, or the bench's own
 * echo) started for each in-flight level with a load client driving them,
 * measured in rounds, the rows over the rounds, the table and the results
 * file. Each bench keeps its broker client, its echo, its queue naming, its
 * targets and what it says. The echo service on a transport here serves the
 * pulsar bench and the TrustGraph client bench.
 *
 * Environment (every broker bench; its header says the defaults):
 * BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_ROUNDS, BENCH_INFLIGHT,
 * BENCH_SETUPS, BENCH_PER_WORKER (bench/env-settings.ts), BENCH_PIPELINE_WORKERS
 * (bench/pipeline-workers.ts), BENCH_OUT.
 */
import { resolveSettings } from '../bridge/project/settings.ts'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { startRuntime } from '../bridge/runtime.ts'
import type { Logger } from '../bridge/support/logger.ts'
import type { Transport } from '../bridge/transports/transport.ts'
import { encodeResponse, finalResponse, ID_PROPERTY, UNKNOWN_ID } from '../shared/protocol.ts'
import { defaultQueues } from '../shared/queues.ts'
import { inRotation, type LoopStats, type Probe, type RoundsStats, roundsStats } from './closed-loop.ts'
import { processCpuUs, processCpuUsOf } from './cpu-and-memory.ts'
import {
  type BridgeSetup,
  type RoundsSettings,
  roundsSettings,
  PIPELINE_SETUP,
  setupInvoker,
  setupsEnv,
  SHARED_SETUP,
} from './env-settings.ts'
import { jokeAnswer, loadJokeTool, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { type DrivenService, driveService, type LoadClient, type LoadClientSetup } from './load-client-process.ts'
import { describeMachine, loadAverage, type Machine } from './machine.ts'
import { writeBenchResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { startPipelineWorkers } from './pipeline-workers.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtInt, fmtSigned, printTableByInFlight, throughputColumns } from './tables.ts'

// ---------------------------------------------------------------- rounds, cells and rows

/** A setup of a broker bench, started for one in-flight level, with the load client that drives it. */
export interface LiveSetup<S extends string> extends DrivenService {
  setup: S
}

/** A cell measured through a load client; p999Ms is left out (in no broker bench's table or JSON). */
export interface BrokerCellStats extends Omit<LoopStats, 'p999Ms'> {
  /** CPU time of this whole process (the service: baseline, or bridge and worker threads) per answered request. */
  nodeCpuUsPerReq: number
  /** CPU time of the client's process per answered request. */
  clientCpuUsPerReq: number
  /** This process's CPU use over the cell, in cores. */
  nodeCpuCores: number
  /** CPU time of the broker per answered request; NaN when it cannot be read. */
  brokerCpuUsPerReq: number
}

export interface BrokerCell<S extends string> extends BrokerCellStats {
  setup: S
  inFlight: number
  round: number
  /** Position in the round, 0 first. */
  position: number
}

export interface BrokerRounds<S extends string> {
  setups: S[]
  inFlight: number[]
  rounds: number
  seconds: number
  warmupSeconds: number
  /** The broker's CPU time so far, in microseconds (NaN when it cannot be read). */
  brokerCpuUs: Probe
  start(setup: S, inFlight: number): Promise<LiveSetup<S>>
  /** Asked after every cell: a reason ends the run with it. */
  disturbed?: () => string | undefined
}

/**
 * For each in-flight level: every setup started, then measured in rounds
 * with the order rotated (so that no setup always goes first, after the
 * same neighbour), then stopped; one progress line a round.
 */
async function measureBrokerRounds<S extends string>(bench: BrokerRounds<S>): Promise<BrokerCell<S>[]> {
  const { setups, rounds } = bench
  const cells: BrokerCell<S>[] = []
  for (const inFlight of bench.inFlight) {
    const live = new Map<S, LiveSetup<S>>()
    try {
      for (const setup of setups) live.set(setup, await bench.start(setup, inFlight))
      for (let round = 0; round < rounds; round++) {
        const order = inRotation(setups, round)
        const parts: string[] = []
        for (const [position, setup] of order.entries()) {
          const stats = await measureBrokerCell(live.get(setup)!.client, inFlight, bench)
          const disturbance = bench.disturbed?.()
          if (disturbance !== undefined) throw new Error(`run disturbed: ${disturbance}`)
          cells.push({ setup, inFlight, round, position, ...stats })
          parts.push(`${setup} ${fmtInt(stats.reqPerSec)}/s p50 ${fmt(stats.p50Ms, 3)}`)
        }
        console.log(`in-flight ${String(inFlight).padStart(2)} round ${round + 1}/${rounds}: ${parts.join(' | ')}`)
      }
    } finally {
      for (const l of live.values()) await stopWithin(l, 10_000)
    }
  }
  return cells
}

/** The shared closed loop in the client's process, with this process's and the broker's CPU time around it. */
async function measureBrokerCell<S extends string>(
  client: LoadClient,
  inFlight: number,
  bench: BrokerRounds<S>,
): Promise<BrokerCellStats> {
  const {
    used,
    clientCpuUs,
    p999Ms: _,
    ...stats
  } = await client.measure(inFlight, {
    seconds: bench.seconds,
    warmupSeconds: bench.warmupSeconds,
    probes: { node: processCpuUs, broker: bench.brokerCpuUs },
  })
  return {
    ...stats,
    nodeCpuUsPerReq: used.node / stats.requests,
    clientCpuUsPerReq: clientCpuUs / stats.requests,
    nodeCpuCores: used.node / 1e6 / stats.seconds,
    brokerCpuUsPerReq: used.broker / stats.requests,
  }
}

/** A setup that does not stop in time (a broker connection hanging) is reported, not waited for. */
async function stopWithin<S extends string>(live: LiveSetup<S>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const tooLong = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`did not stop within ${ms / 1000} s`)), ms)),
  )
  await Promise.race([live.stop(), tooLong])
    .catch((err: unknown) => console.error(`stopping ${live.setup}: ${(err as Error).message}`))
    .finally(() => clearTimeout(timer))
}

/** A row's numbers over a setup's cells at one in-flight level: medians over the rounds, the range of req/s, errors summed. */
export interface BrokerRowStats extends RoundsStats {
  nodeCpuUsPerReq: number
  clientCpuUsPerReq: number
  nodeCpuCores: number
  brokerCpuUsPerReq: number
  errors: number
}

function brokerRowStats(cells: BrokerCellStats[]): BrokerRowStats {
  const medianOf = (pick: (c: BrokerCellStats) => number) => median(cells.map(pick))
  return {
    ...roundsStats(cells),
    nodeCpuUsPerReq: medianOf((c) => c.nodeCpuUsPerReq),
    clientCpuUsPerReq: medianOf((c) => c.clientCpuUsPerReq),
    nodeCpuCores: medianOf((c) => c.nodeCpuCores),
    brokerCpuUsPerReq: medianOf((c) => c.brokerCpuUsPerReq),
    errors: cells.reduce((n, c) => n + c.errors, 0),
  }
}

// ---------------------------------------------------------------- the skeleton of a broker bench

/** What every broker bench reads from the environment (each bench's header lists them). */
export interface BrokerSettings extends RoundsSettings {
  /** BENCH_SETUPS: the bridge setups measured besides the bench's echo. */
  bridgeSetups: BridgeSetup[]
}

function brokerSettings(bench: string): BrokerSettings {
  return {
    ...roundsSettings(bench, { seconds: 3, warmupSeconds: 0.5, rounds: 3, inFlight: '1,16,64' }),
    bridgeSetups: setupsEnv('BENCH_SETUPS', `in-process,worker-threads,${SHARED_SETUP}`),
  }
}

/** What a broker bench's own parts are given: the settings, the tool and the answer every setup must send. */
export interface BrokerContext<S extends string> extends ReturnType<typeof loadJokeTool> {
  settings: BrokerSettings
  /** The setups measured: the baseline, the bridge's, the bench's other echoes. */
  setups: S[]
  /** The load average before the run. */
  loadBefore: number[]
  /** What the bridge answers for the request. */
  expected: string
  /** The bytes of that answer, as the bridge sends them: what an echo service sends. */
  responseBody: Buffer
}

/** What a broker bench found before measuring. */
export interface Prepared {
  machine: Machine
  /** The broker's address, as printed and written (no password). */
  address: string
  /** Lines said after the machine's, before the rounds. */
  header: string[]
  /** The broker's CPU time so far, in microseconds (NaN when it cannot be read). */
  brokerCpuUs: Probe
  /** Settings written to the results besides those every broker bench writes. */
  settings: object
}

/** A row of a broker bench's table: a setup at an in-flight level, over its rounds. */
export type BrokerRow<S extends string> = { setup: S; inFlight: number } & BrokerRowStats

/** The baseline's cells at a row's in-flight level and their row's numbers. */
export interface Baseline<S extends string> {
  cells: BrokerCell<S>[]
  stats: BrokerRowStats
}

/**
 * A broker bench: the bridge on a broker against `baseline`, a hand-written
 * echo service on the same broker, measured in the same run.
 */
export interface BrokerBench<S extends string, X extends object> {
  /** The results' `bench`; they go to bench/results/<name>.json unless BENCH_OUT says where. */
  name: string
  /** The broker URL the bridge and the load clients are given. */
  broker: string
  callTimeoutMs: number
  /** What every bridge row is held to, as written to the results. */
  targets: object
  /** The topic a setup's queues are named after (defaultQueues). */
  topicOf(setup: S): string
  /** Where the bridge's transports log; default nowhere. */
  logger?: Logger
  /** The bridge's service id for a setup; default serverless.yml's. */
  serviceId?(setup: BridgeSetup): string
  /** Starts the echo service of a setup that is not the bridge's; resolves to its stop. */
  startEcho(setup: S, inFlight: number, responseBody: Buffer): Promise<() => Promise<void>>
  /** More of what a setup's load client is started with. */
  loadClient?(setup: S): Partial<LoadClientSetup>
  /** Echo setups measured after the bridge's (the baseline is measured first). */
  moreSetups?(): Promise<S[]>
  /** Clears what an interrupted run left on the broker, finds the broker and the versions. */
  prepare(context: BrokerContext<S>): Promise<Prepared>
  /** After the rounds. */
  cleanUp?(context: BrokerContext<S>): Promise<void>
  /** Asked after every cell: a reason ends the run with it. */
  disturbed?(): string | undefined
  /** A row's own numbers, after those every broker bench's rows have. */
  row(row: BrokerRow<S>, baseline: Baseline<S>, cells: BrokerCell<S>[]): X
  /** The table's columns after the throughput columns it opens with. */
  columns: Column<BrokerRow<S> & X>[]
  /** Lines said between the rounds and the table. */
  legend: string[]
  /** Lines said after the table. */
  summary(rows: (BrokerRow<S> & X)[]): string[]
  /** Said after the load average after the run. */
  loadNote?: string
  /** Said when the run fails. */
  onFailure?(): void
}

const STARTUP_TIMEOUT_MS = 60_000

/**
 * Runs a broker bench and exits: its setups (the baseline, the bridge
 * setups, the bench's other echoes) measured in rounds at each in-flight
 * level, then the table over the rounds and the results file.
 */
export function runBrokerBench<S extends string, X extends object>(bench: BrokerBench<S, X>): Promise<never> {
  return runBench(async () => {
    const loadBefore = loadAverage()
    const settings = brokerSettings(bench.name)
    const joke = loadJokeTool()
    const expected = await jokeAnswer()
    const setups = [
      'baseline' as S,
      ...(settings.bridgeSetups as string[] as S[]),
      ...((await bench.moreSetups?.()) ?? []),
    ]
    const context: BrokerContext<S> = {
      ...joke,
      settings,
      setups,
      loadBefore,
      expected,
      responseBody: Buffer.from(encodeResponse(finalResponse(expected))),
    }
    const prepared = await bench.prepare(context)
    console.log(describeMachine(prepared.machine))
    for (const line of prepared.header) console.log(line)
    console.log('')

    const cells = await measureBrokerRounds({
      setups,
      inFlight: settings.inFlight,
      rounds: settings.rounds,
      seconds: settings.seconds,
      warmupSeconds: settings.warmupSeconds,
      brokerCpuUs: prepared.brokerCpuUs,
      start: (setup, inFlight) => startBrokerSetup(bench, context, setup, inFlight),
      disturbed: bench.disturbed,
    })
    await bench.cleanUp?.(context)

    const rows: (BrokerRow<S> & X)[] = []
    for (const inFlight of settings.inFlight) {
      const of = (setup: S) => cells.filter((c) => c.inFlight === inFlight && c.setup === setup)
      const baseCells = of('baseline' as S)
      const baseline = { cells: baseCells, stats: brokerRowStats(baseCells) }
      for (const setup of setups) {
        const mine = of(setup)
        const row = { setup, inFlight, ...brokerRowStats(mine) }
        rows.push({ ...row, ...bench.row(row, baseline, mine) })
      }
    }
    console.log('')
    for (const line of bench.legend) console.log(line)
    console.log('')
    printTableByInFlight([...throughputColumns<BrokerRow<S> & X>(), ...bench.columns], rows)
    console.log('')
    for (const line of bench.summary(rows)) console.log(line)
    writeBenchResults(
      settings.out,
      bench.name,
      prepared.machine,
      loadBefore,
      {
        settings: {
          broker: prepared.address,
          service: SERVICE_ID,
          tool: TOOL_NAME,
          ...prepared.settings,
          responseBytes: context.responseBody.byteLength,
          inFlight: settings.inFlight,
          rounds: settings.rounds,
          warmupSeconds: settings.warmupSeconds,
          seconds: settings.seconds,
          targets: bench.targets,
        },
        rows,
        cells,
      },
      bench.loadNote,
    )
  }, bench.onFailure)
}

/** A setup for one in-flight level: the bridge or the bench's echo, its queues its own, with the load client driving it. */
async function startBrokerSetup<S extends string, X extends object>(
  bench: BrokerBench<S, X>,
  context: BrokerContext<S>,
  setup: S,
  inFlight: number,
): Promise<LiveSetup<S>> {
  const q = defaultQueues(bench.topicOf(setup))
  const queues = { requestQueue: q.request, responseQueue: q.response }
  let stopService: () => Promise<void>
  if ((context.settings.bridgeSetups as string[]).includes(setup)) {
    const bridgeSetup = setup as BridgeSetup
    const { invoker, invocationsPerWorker } = setupInvoker(bridgeSetup)
    const spec: ToolServiceSpec = {
      ...context.spec,
      id: bench.serviceId?.(bridgeSetup) ?? context.spec.id,
      concurrency: inFlight,
      invocationsPerWorker,
      ...queues,
    }
    // HTTP gateway off (port ''), nothing from TOOLBRIDGE_* in the environment; a short drain for stop().
    const settings = resolveSettings({ broker: bench.broker, invoker, port: '', drainTimeout: '1' }, {})
    if (bridgeSetup === PIPELINE_SETUP) {
      stopService = await startPipelineWorkers(context.project, spec, settings, inFlight)
    } else {
      const runtime = await startRuntime({ ...context.project, services: [spec] }, settings, { logger: bench.logger })
      stopService = () => runtime.stop()
    }
  } else {
    stopService = await bench.startEcho(setup, inFlight, context.responseBody)
  }
  return {
    setup,
    ...(await driveService(
      setup,
      {
        broker: bench.broker,
        ...queues,
        request: context.request,
        expected: context.expected,
        startupInFlight: inFlight,
        // Starting up may be slow (up to 64 worker threads on a busy machine): a longer timeout then.
        startupTimeoutMs: STARTUP_TIMEOUT_MS,
        callTimeoutMs: bench.callTimeoutMs,
        ...bench.loadClient?.(setup),
      },
      stopService,
    )),
  }
}

/**
 * An echo service on a transport: answers every request on `topic` with
 * `responseBody` under its id, and acks once the broker has the answer.
 */
export async function startTransportEcho(
  transport: Transport,
  topic: string,
  inFlight: number,
  responseBody: Uint8Array,
): Promise<() => Promise<void>> {
  const queues = defaultQueues(topic)
  await transport.connect()
  await transport.consume(queues.request, { subscription: 'bench-echo-request', concurrency: inFlight }, (delivery) => {
    const id = delivery.properties[ID_PROPERTY] ?? UNKNOWN_ID
    transport.publish(queues.response, responseBody, { [ID_PROPERTY]: id }).then(
      () => delivery.ack(),
      () => delivery.nack(),
    )
  })
  return () => transport.close()
}

/** CPU microseconds a process (the broker's) has used so far; NaN when there is none or it cannot be read. */
export function cpuUsOfPid(pid: () => number | undefined): Probe {
  return () => {
    const found = pid()
    if (found === undefined) return Number.NaN
    try {
      return processCpuUsOf(found)
    } catch {
      return Number.NaN
    }
  }
}

// ---------------------------------------------------------------- columns and numbers against the baseline

/** What a bridge row is held to: its req/s at least `throughputRatio` x the baseline's, its p50 at most `p50DeltaMs` above. */
export interface BaselineTargets {
  throughputRatio: number
  p50DeltaMs: number
}

export interface VersusBaseline {
  /** Median req/s over median baseline req/s. */
  throughputRatio: number
  /** Median p50 minus median baseline p50. */
  p50DeltaMs: number
  throughputMet: boolean | null
  p50Met: boolean | null
}

/** A row's req/s and p50 against the baseline's, and whether it meets the targets (null for the baseline's own row). */
export function versusBaseline<S extends string>(
  row: BrokerRow<S>,
  baseline: Baseline<S>,
  targets: BaselineTargets,
): VersusBaseline {
  const isBase = row.setup === 'baseline'
  const throughputRatio = row.reqPerSec / baseline.stats.reqPerSec
  const p50DeltaMs = row.p50Ms - baseline.stats.p50Ms
  return {
    throughputRatio,
    p50DeltaMs,
    throughputMet: isBase ? null : throughputRatio >= targets.throughputRatio,
    p50Met: isBase ? null : p50DeltaMs <= targets.p50DeltaMs,
  }
}

const verdict = (met: boolean | null) => (met === null ? '' : met ? 'yes' : 'NO')

/** The columns of VersusBaseline, `between` after the throughput ratio. */
export function versusBaselineColumns<R extends BrokerRow<string> & VersusBaseline>(
  targets: BaselineTargets,
  between: Column<R>[] = [],
): Column<R>[] {
  const isBase = (r: R) => r.setup === 'baseline'
  return [
    { title: 'x base', width: 6, cell: (r) => (isBase(r) ? '1' : fmt(r.throughputRatio, 2)) },
    ...between,
    { title: 'p50 +ms', width: 7, cell: (r) => (isBase(r) ? '0' : fmtSigned(r.p50DeltaMs, 3)) },
    { title: `>=${targets.throughputRatio}x`, width: 6, cell: (r) => verdict(r.throughputMet) },
    { title: `<=+${targets.p50DeltaMs}`, width: 6, cell: (r) => verdict(r.p50Met) },
  ]
}

/** CPU per request of this process (and, with `nodeCores`, its CPU use), of the client's and of the broker's, titled `brokerTitle`. */
export function cpuColumns<R extends BrokerRowStats>(brokerTitle: string, nodeCores = false): Column<R>[] {
  return [
    { title: 'node us/req', width: 11, cell: (r) => fmt(r.nodeCpuUsPerReq, 0) },
    ...(nodeCores ? [{ title: 'node cores', width: 10, cell: (r: R) => fmt(r.nodeCpuCores, 2) }] : []),
    { title: 'client us/req', width: 13, cell: (r) => fmt(r.clientCpuUsPerReq, 0) },
    { title: brokerTitle, width: brokerTitle.length, cell: (r) => fmt(r.brokerCpuUsPerReq, 0) },
  ]
}

/** Says how many calls failed, when any did. */
export function failedCalls(rows: BrokerRowStats[]): string[] {
  const errors = rows.reduce((n, r) => n + r.errors, 0)
  return errors > 0 ? [`WARNING: ${errors} call(s) failed during measurement`] : []
}

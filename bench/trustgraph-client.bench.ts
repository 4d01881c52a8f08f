/**
 * The bridge as TrustGraph's own Python client sees it: TrustGraph's
 * RequestResponseClient, through its own pub/sub backend (bench/tg_load.py,
 * in the virtual environment of scripts/trustgraph-venv.sh), calls a raw
 * echo service and the bridge on the same broker, RabbitMQ and Pulsar, in
 * the same run.
 *
 *   node bench/trustgraph-client.bench.ts
 *
 * Setups (both started before any cell and running side by side, each on
 * topics of its own: request:tg:bench-tg-echo, request:tg:bench-tg-worker-threads and
 * their response queues):
 *
 * - `baseline`: an echo service on the project's transport for the broker
 *   (RabbitTransport or PulsarTransport, the clients the bridge itself uses):
 *   it answers every request with the fixed response bytes the bridge sends
 *   for the joke below, and acks once the broker has the answer.
 * - `worker-threads`: startRuntime() with serverless.yml's joke-service (tool
 *   tell-joke, config style=pun, arguments topic=programming) on worker
 *   threads, the default invoker, `concurrency` = the in-flight level.
 *
 * A cell is one run of tg_load.py: a closed loop of N callers, a warm-up,
 * then a fixed duration; every answer is checked. Rounds alternate the
 * order (B L, L B) and the table reports the median over rounds, with the
 * range; the load average is printed beside it. The Python client is in a
 * process of its own and is usually what limits req/s here: the ratio says
 * what the bridge costs a TrustGraph caller, not what it costs in CPU
 * (bench/rabbitmq.bench.ts and bench/pulsar.bench.ts say that).
 *
 * Targets: bridge >= 0.9x the baseline's req/s.
 *
 * Environment:
 *   BENCH_BROKERS          rabbitmq,pulsar (default both)
 *   BENCH_INFLIGHT         in-flight levels (default 1,16)
 *   BENCH_ROUNDS           rounds (default 3)
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 0.5)
 *   BENCH_OUT              default bench/results/trustgraph-client.json (git-ignored)
 */
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import type { Project } from '../bridge/project/project.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { startRuntime } from '../bridge/runtime.ts'
import type { Logger } from '../bridge/support/logger.ts'
import { PulsarTransport } from '../bridge/transports/pulsar/pulsar-transport.ts'
import { RabbitTransport } from '../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import type { Transport } from '../bridge/transports/transport.ts'
import { encodeResponse, finalResponse } from '../shared/protocol.ts'
import { defaultQueues } from '../shared/queues.ts'
import { TRUSTGRAPH_INSTALL, TRUSTGRAPH_VENV, trustgraphInstalled } from '../test/support/trustgraph.ts'
import { listEnv, roundsSettings } from './env-settings.ts'
import { ARGUMENTS, jokeAnswer, loadJokeTool } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeBenchResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtInt, printHeader, printRow, throughputColumns, type ThroughputRow } from './tables.ts'
import { startTransportEcho } from './broker-bench.ts'

const BROKERS = listEnv('BENCH_BROKERS', 'rabbitmq,pulsar') as Broker[]
const RUN = roundsSettings('trustgraph-client', { seconds: 3, warmupSeconds: 0.5, rounds: 3, inFlight: '1,16' })
const TARGET = 0.9

type Broker = 'rabbitmq' | 'pulsar'
type Setup = 'baseline' | 'worker-threads'
const SETUPS: Setup[] = ['baseline', 'worker-threads']
const URLS: Record<Broker, string> = {
  rabbitmq: 'amqp://guest:guest@127.0.0.1:5672/',
  pulsar: 'pulsar://127.0.0.1:6650',
}
/** How TrustGraph's client reaches each broker (its own backend options). */
const BACKEND_ARGS: Record<Broker, string[]> = {
  rabbitmq: ['--backend', 'rabbitmq', '--rabbitmq-host', '127.0.0.1'],
  pulsar: ['--backend', 'pulsar', '--pulsar-host', URLS.pulsar, '--pulsar-admin-url', 'http://127.0.0.1:8081'],
}
const topicOf = (setup: Setup) => (setup === 'baseline' ? 'bench-tg-echo' : 'bench-tg-worker-threads')

/** A reconnect during a cell makes it meaningless: transports' warnings are printed. */
const benchLogger: Logger = {
  debug() {},
  info() {},
  warn(fields, message) {
    console.error(`warn: ${message} ${JSON.stringify(fields)}`)
  },
  error(fields, message) {
    console.error(`error: ${message} ${JSON.stringify(fields)}`)
  },
}

function newTransport(broker: Broker): Transport {
  return broker === 'rabbitmq'
    ? new RabbitTransport(URLS.rabbitmq, { logger: benchLogger })
    : new PulsarTransport(URLS.pulsar, { logger: benchLogger })
}

async function startBridge(broker: Broker, inFlight: number, project: Project, base: ToolServiceSpec) {
  const q = defaultQueues(topicOf('worker-threads'))
  const spec: ToolServiceSpec = { ...base, concurrency: inFlight, requestQueue: q.request, responseQueue: q.response }
  const runtime = await startRuntime(
    { ...project, services: [spec] },
    resolveSettings({ broker: URLS[broker], invoker: 'worker-threads', port: '', drainTimeout: '1' }, {}),
    { logger: benchLogger },
  )
  return () => runtime.stop()
}

interface CellStats {
  requests: number
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  errors: number
}

/** One run of TrustGraph's client in a closed loop against a setup's queues. */
function runClient(
  broker: Broker,
  setup: Setup,
  inFlight: number,
  request: { config: unknown; arguments: unknown },
  expected: string,
): Promise<CellStats> {
  const q = defaultQueues(topicOf(setup))
  const args = [
    resolve(ROOT, 'bench/tg_load.py'),
    ...BACKEND_ARGS[broker],
    ['--request-queue', q.request],
    ['--response-queue', q.response],
    ['--config', JSON.stringify(request.config)],
    ['--arguments', JSON.stringify(request.arguments)],
    ['--expect', expected],
    ['--in-flight', String(inFlight)],
    ['--warmup', String(RUN.warmupSeconds)],
    ['--seconds', String(RUN.seconds)],
  ].flat()
  return new Promise((done, fail) => {
    const child = spawn(resolve(TRUSTGRAPH_VENV, 'bin/python'), args)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', fail)
    child.on('close', (code) =>
      code === 0
        ? done(JSON.parse(stdout.trim().split('\n').at(-1)!) as CellStats)
        : fail(new Error(`tg_load.py (${broker}, ${setup}) exited ${code}: ${stderr.slice(-1500)}`)),
    )
  })
}

interface Cell extends CellStats {
  broker: Broker
  setup: Setup
  inFlight: number
  round: number
  loadAverage: number
}

interface Row extends ThroughputRow {
  broker: Broker
  setup: Setup
  ratio: number
  roundRatios: number[]
  errors: number
  met: boolean | null
}

const COLUMNS: Column<Row>[] = [
  { title: 'broker', width: 8, align: 'left', cell: (r) => r.broker },
  ...throughputColumns<Row>(8, 2),
  { title: 'ratio', width: 5, cell: (r) => (r.setup === 'baseline' ? '1' : fmt(r.ratio, 2)) },
  { title: 'per round', width: 14, cell: (r) => r.roundRatios.map((x) => fmt(x, 2)).join('/') },
  { title: '>=0.9x', width: 6, cell: (r) => (r.met === null ? '' : r.met ? 'yes' : 'NO') },
]

async function main(): Promise<void> {
  if (!trustgraphInstalled()) throw new Error(`needs TrustGraph's packages: ${TRUSTGRAPH_INSTALL}`)
  const loadBefore = loadAverage()
  const { project, spec, tool, request } = loadJokeTool()
  const expected = await jokeAnswer()
  const responseBody = new Uint8Array(Buffer.from(encodeResponse(finalResponse(expected))))
  const machine = machineInfo({})
  console.log(describeMachine(machine))
  console.log(`load average before: ${loadBefore.join(' / ')}`)
  console.log(
    `TrustGraph's RequestResponseClient (${TRUSTGRAPH_VENV}) calling ${spec.id} (tool ${tool.name}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)})`,
  )
  console.log(
    `cells: ${RUN.warmupSeconds}s warm-up + ${RUN.seconds}s measured, closed loop; brokers ${BROKERS.join(', ')}; in-flight ${RUN.inFlight.join(', ')}; ${RUN.rounds} round(s)\n`,
  )

  const cells: Cell[] = []
  for (const broker of BROKERS) {
    for (const inFlight of RUN.inFlight) {
      const stops: (() => Promise<void>)[] = []
      try {
        stops.push(await startTransportEcho(newTransport(broker), topicOf('baseline'), inFlight, responseBody))
        stops.push(await startBridge(broker, inFlight, project, spec))
        for (let round = 0; round < RUN.rounds; round++) {
          const order = round % 2 === 0 ? SETUPS : [...SETUPS].reverse()
          const parts: string[] = []
          for (const setup of order) {
            const stats = await runClient(broker, setup, inFlight, request, expected)
            cells.push({ broker, setup, inFlight, round, ...stats, loadAverage: loadAverage()[0]! })
            parts.push(`${setup} ${fmtInt(stats.reqPerSec)}/s p50 ${fmt(stats.p50Ms, 2)}`)
          }
          console.log(
            `${broker} in-flight ${String(inFlight).padStart(2)} round ${round + 1}/${RUN.rounds}: ${parts.join(' | ')} (load ${loadAverage()[0]})`,
          )
        }
      } finally {
        for (const stop of stops.reverse())
          await stop().catch((err: Error) => console.error(`stopping: ${err.message}`))
      }
    }
  }

  const rows: Row[] = []
  for (const broker of BROKERS) {
    for (const inFlight of RUN.inFlight) {
      const of = (setup: Setup) =>
        cells.filter((c) => c.broker === broker && c.inFlight === inFlight && c.setup === setup)
      const base = of('baseline')
      const baseReq = median(base.map((c) => c.reqPerSec))
      for (const setup of SETUPS) {
        const mine = of(setup)
        const reqs = mine.map((c) => c.reqPerSec)
        const ratio = median(reqs) / baseReq
        rows.push({
          broker,
          setup,
          inFlight,
          reqPerSec: median(reqs),
          reqPerSecMin: Math.min(...reqs),
          reqPerSecMax: Math.max(...reqs),
          p50Ms: median(mine.map((c) => c.p50Ms)),
          p99Ms: median(mine.map((c) => c.p99Ms)),
          ratio,
          roundRatios: mine.map((c) => c.reqPerSec / base.find((b) => b.round === c.round)!.reqPerSec),
          errors: mine.reduce((n, c) => n + c.errors, 0),
          met: setup === 'baseline' ? null : ratio >= TARGET,
        })
      }
    }
  }
  console.log(
    '\nmedian over rounds; "ratio" = req/s over the baseline\'s; "per round" = over the same round\'s baseline\n',
  )
  printHeader(COLUMNS)
  let last: string | undefined
  for (const row of rows) {
    const group = `${row.broker}${row.inFlight}`
    if (last !== undefined && group !== last) console.log('')
    last = group
    printRow(COLUMNS, row)
  }
  const errors = rows.reduce((n, r) => n + r.errors, 0)
  if (errors > 0) console.log(`WARNING: ${errors} call(s) failed or answered wrongly during measurement`)
  console.log('')
  writeBenchResults(RUN.out, 'trustgraph-client', machine, loadBefore, {
    settings: {
      brokers: BROKERS,
      inFlight: RUN.inFlight,
      rounds: RUN.rounds,
      seconds: RUN.seconds,
      warmupSeconds: RUN.warmupSeconds,
    },
    rows,
    cells,
  })
}

await runBench(main)

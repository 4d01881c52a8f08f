/**
 * The bridge on Pulsar against a minimal echo service on the same broker and
 * the same client (the project's own, lib/pulsar-client/), measured
 * in the same run.
 *
 *   scripts/pulsar.sh start && npm run bench:pulsar
 *
 * Setups, each driven by the same caller (bridge/trustgraph/request-client.ts RequestClient on a
 * PulsarTransport connection of its own) in a process of its own (bench/load-client.ts), so
 * that this process's CPU time is the service's alone (the echo, or the bridge and its worker
 * threads); the caller's is recorded beside it:
 *
 * - `baseline`: a hand-written service on PulsarClient: a Shared
 *   subscription on its request topic (receiver queue 1000, at most
 *   in-flight messages unacked), a producer on its response topic, the same
 *   fixed response bytes the bridge sends for the joke below, acked after the
 *   broker's receipt — the bridge's delivery guarantees, nothing else.
 * - `in-process` and `worker-threads`: startRuntime() with serverless.yml's
 *   joke-service on the `in-process` and the `worker-threads`
 *   invoker, `concurrency` set to the in-flight level.
 * - `native` (only where the optional pulsar-client addon loads): the same
 *   echo service and caller, both on `--pulsar-client native`, against which
 *   the baseline (built-in client) is compared: target built-in ≥ 0.8× native.
 *
 * Each setup has its own topics (request:tg:bench-pulsar-echo,
 * request:tg:bench-pulsar-<invoker>, ...): non-persistent, as TrustGraph's.
 * For each in-flight level the services are started, then measured in rounds
 * (order rotated every round) and the table reports the median over rounds:
 * closed loop, a warm-up, then a fixed duration.
 *
 * Targets: bridge rows ≥ 0.9× the baseline's req/s.
 *
 * Environment:
 *   BENCH_SECONDS (3)  BENCH_WARMUP_SECONDS (0.5)  BENCH_ROUNDS (3)  BENCH_INFLIGHT (1,16,64)
 *   BENCH_SETUPS       bridge setups besides the baseline (default in-process,worker-threads,worker-threads-shared;
 *                          worker-threads-shared: worker threads, invocationsPerWorker BENCH_PER_WORKER, default 64)
 *   BENCH_BROKER       default TOOLBRIDGE_BROKER, else pulsar://127.0.0.1:6650
 *   BENCH_OUT          default bench/results/pulsar.json (git-ignored)
 */
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Project } from '../bridge/project/project.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import type { Logger } from '../bridge/support/logger.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { loadNativePulsar, NativePulsarTransport } from '../bridge/transports/pulsar/native-transport.ts'
import { PulsarTransport } from '../bridge/transports/pulsar/pulsar-transport.ts'
import type { Transport } from '../bridge/transports/transport.ts'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { handler } from '../functions/joke/handler.ts'
import { encodeResponse, finalResponse, ID_PROPERTY, resultText, UNKNOWN_ID } from '../shared/protocol.ts'
import { defaultQueues } from '../shared/queues.ts'
import {
  ARGUMENTS,
  describeMachine,
  fmt,
  inFlightEnv,
  setupInvoker,
  setupsEnv,
  type BridgeSetup,
  loadAverage,
  loadJokeTool,
  machineInfo,
  median,
  numberEnv,
  ROOT,
  SERVICE_ID,
  TOOL_NAME,
  throughputColumns,
  writeBenchResults,
  type Column,
  type Probe,
  runBench,
  processCpuUsOf,
  driveService,
} from './support.ts'
import {
  measureBrokerRounds,
  brokerRowStats,
  printTableByInFlight,
  type BrokerRowStats,
  type LiveSetup,
} from './broker-bench.ts'

const SECONDS = numberEnv('BENCH_SECONDS', 3, 0.1)
const WARMUP_SECONDS = numberEnv('BENCH_WARMUP_SECONDS', 0.5, 0)
const ROUNDS = Math.floor(numberEnv('BENCH_ROUNDS', 3, 1))
const IN_FLIGHT = inFlightEnv('BENCH_INFLIGHT', '1,16,64')
const BRIDGE_KINDS = setupsEnv('BENCH_SETUPS', 'in-process,worker-threads,worker-threads-shared')
const BROKER =
  process.env.BENCH_BROKER ||
  (process.env.TOOLBRIDGE_BROKER?.startsWith('pulsar') ? process.env.TOOLBRIDGE_BROKER : '') ||
  'pulsar://127.0.0.1:6650'
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/pulsar.json')
const CALL_TIMEOUT_MS = 5_000
const STARTUP_TIMEOUT_MS = 60_000
const TARGETS = { bridgeOverBaseline: 0.9, builtinOverNative: 0.8 }

type Setup = 'baseline' | 'native' | BridgeSetup
const topicOf = (setup: Setup) => (setup === 'baseline' ? 'bench-pulsar-echo' : `bench-pulsar-${setup}`)

/** Warnings and errors of the transports are printed: a reconnect during a cell makes it meaningless. */
const benchLogger: Logger = {
  debug() {},
  info(fields, message) {
    if (/reattached|resubscribed/.test(message))
      console.error(`note: ${message} ${JSON.stringify(fields)} (the broker unloaded a topic or restarted: rerun)`)
  },
  warn(fields, message) {
    console.error(`warn: ${message} ${JSON.stringify(fields)}`)
  },
  error(fields, message) {
    console.error(`error: ${message} ${JSON.stringify(fields)}`)
  },
}

function newTransport(native: boolean): Transport {
  return native
    ? new NativePulsarTransport(BROKER, { logger: benchLogger })
    : new PulsarTransport(BROKER, { logger: benchLogger })
}

// ---------------------------------------------------------------- CPU of the broker

function findBrokerPid(): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('PulsarStandaloneStarter')) return Number(entry)
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return undefined
}

let brokerPid: number | undefined
const brokerCpuUs: Probe = () => {
  if (brokerPid === undefined) return Number.NaN
  try {
    return processCpuUsOf(brokerPid)
  } catch {
    return Number.NaN
  }
}

// ---------------------------------------------------------------- the echo service

/** Answers every request with `responseBody` under its id; acks once the broker has the answer. */
async function startEchoService(
  setup: 'baseline' | 'native',
  inFlight: number,
  responseBody: Uint8Array,
): Promise<{ close(): Promise<void> }> {
  const queues = defaultQueues(topicOf(setup))
  const transport = newTransport(setup === 'native')
  await transport.connect()
  await transport.consume(queues.request, { subscription: 'bench-echo-request', concurrency: inFlight }, (delivery) => {
    const id = delivery.properties[ID_PROPERTY] ?? UNKNOWN_ID
    transport.publish(queues.response, responseBody, { [ID_PROPERTY]: id }).then(
      () => delivery.ack(),
      () => delivery.nack(),
    )
  })
  return { close: () => transport.close() }
}

// ---------------------------------------------------------------- setups

async function startSetup(
  setup: Setup,
  inFlight: number,
  ctx: { spec: ToolServiceSpec; project: Project; request: object; expected: string; responseBody: Uint8Array },
): Promise<LiveSetup<Setup>> {
  const q = defaultQueues(topicOf(setup))
  const queues = { requestQueue: q.request, responseQueue: q.response }
  let stopService: () => Promise<void>
  if (setup === 'baseline' || setup === 'native') {
    const service = await startEchoService(setup, inFlight, ctx.responseBody)
    stopService = () => service.close()
  } else {
    const { invocationsPerWorker } = setupInvoker(setup)
    const spec: ToolServiceSpec = { ...ctx.spec, concurrency: inFlight, invocationsPerWorker, ...queues }
    const runtime = await startRuntime(
      { ...ctx.project, services: [spec] },
      resolveSettings({ broker: BROKER, invoker: setupInvoker(setup).invoker, port: '', drainTimeout: '1' }, {}),
      { logger: benchLogger },
    )
    stopService = () => runtime.stop()
  }
  return {
    setup,
    ...(await driveService(
      setup,
      {
        broker: BROKER,
        ...queues,
        request: ctx.request,
        expected: ctx.expected,
        startupInFlight: inFlight,
        startupTimeoutMs: STARTUP_TIMEOUT_MS,
        callTimeoutMs: CALL_TIMEOUT_MS,
        nativePulsar: setup === 'native',
      },
      stopService,
    )),
  }
}

// ---------------------------------------------------------------- cells and rows

interface Row extends BrokerRowStats {
  setup: Setup
  inFlight: number
  /** req/s over the baseline's (the native row: the baseline's over the native's). */
  ratio: number
  target: number | null
  met: boolean | null
}

const COLUMNS: Column<Row>[] = [
  ...throughputColumns<Row>(),
  { title: 'ratio', width: 6, cell: (r) => (r.setup === 'baseline' ? '1' : fmt(r.ratio, 2)) },
  { title: 'target', width: 6, cell: (r) => (r.target === null ? '' : `>=${r.target}`) },
  { title: 'met', width: 4, cell: (r) => (r.met === null ? '' : r.met ? 'yes' : 'NO') },
  { title: 'node us/req', width: 11, cell: (r) => fmt(r.nodeCpuUsPerReq, 0) },
  { title: 'client us/req', width: 13, cell: (r) => fmt(r.clientCpuUsPerReq, 0) },
  { title: 'broker us/req', width: 13, cell: (r) => fmt(r.brokerCpuUsPerReq, 0) },
]

async function main(): Promise<void> {
  const loadBefore = loadAverage()
  const { project, spec, tool, request, event } = loadJokeTool()
  const expected = resultText(await handler(event, lambdaContext(spec.functionName, 'bench', spec.timeoutMs)))
  const responseBody = new Uint8Array(Buffer.from(encodeResponse(finalResponse(expected))))

  const probe = new PulsarTransport(BROKER)
  await probe.connect().catch((err: Error) => {
    throw new Error(`${err.message} (start one with scripts/pulsar.sh start)`)
  })
  await probe.close()
  brokerPid = findBrokerPid()
  const native = await loadNativePulsar()
  const setups: Setup[] = ['baseline', ...BRIDGE_KINDS, ...(native.ok ? (['native'] as const) : [])]

  const machine = machineInfo({})
  console.log(describeMachine(machine))
  console.log(
    `node ${machine.node}, ${machine.platform}; broker ${probe.address}${brokerPid ? ` (pid ${brokerPid})` : ''}`,
  )
  console.log(
    `load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min); with other work on the machine, numbers are unreliable`,
  )
  console.log(
    `service: ${SERVICE_ID} (tool ${TOOL_NAME}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}), concurrency = in-flight`,
  )
  console.log(
    `baseline: echo service on the built-in client, fixed ${responseBody.byteLength}-byte answer, ack after the receipt`,
  )
  console.log(native.ok ? 'native: pulsar-client loads; the same echo on it' : `native: skipped (${native.reason})`)
  console.log(
    `cells: ${WARMUP_SECONDS}s warm-up + ${SECONDS}s measured, closed loop; in-flight ${IN_FLIGHT.join(', ')}; ${ROUNDS} round(s); setups ${setups.join(', ')}`,
  )
  console.log('')

  const cells = await measureBrokerRounds({
    setups,
    inFlight: IN_FLIGHT,
    rounds: ROUNDS,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    brokerCpuUs,
    start: (setup, inFlight) => startSetup(setup, inFlight, { spec, project, request, expected, responseBody }),
  })

  const rows: Row[] = []
  for (const inFlight of IN_FLIGHT) {
    const of = (setup: Setup) => cells.filter((c) => c.inFlight === inFlight && c.setup === setup)
    const baseReq = median(of('baseline').map((c) => c.reqPerSec))
    for (const setup of setups) {
      const mine = of(setup)
      const stats = brokerRowStats(mine)
      const { reqPerSec } = stats
      const isBridge = setup !== 'baseline' && setup !== 'native'
      const ratio = setup === 'native' ? baseReq / reqPerSec : reqPerSec / baseReq
      const target = isBridge ? TARGETS.bridgeOverBaseline : setup === 'native' ? TARGETS.builtinOverNative : null
      rows.push({
        setup,
        inFlight,
        ...stats,
        ratio,
        target,
        met: target === null ? null : ratio >= target,
      })
    }
  }

  console.log('')
  console.log(
    'median over rounds; "ratio" = req/s over the baseline (bridge rows), or the baseline (built-in client) over native (native row)',
  )
  console.log('"node us/req" = CPU of this process per request; "broker us/req" = CPU of the Pulsar JVM per request')
  console.log('')
  printTableByInFlight(COLUMNS, rows)
  const missed = rows.filter((r) => r.met === false)
  console.log('')
  console.log(
    missed.length === 0
      ? 'targets: all met'
      : `targets missed: ${missed.map((r) => `${r.setup}@${r.inFlight}`).join(', ')}`,
  )
  const errors = rows.reduce((n, r) => n + r.errors, 0)
  if (errors > 0) console.log(`WARNING: ${errors} call(s) failed during measurement`)
  writeBenchResults(OUT, 'pulsar', machine, loadBefore, {
    settings: {
      broker: probe.address,
      service: SERVICE_ID,
      tool: TOOL_NAME,
      config: tool.config,
      arguments: ARGUMENTS,
      responseBytes: responseBody.byteLength,
      inFlight: IN_FLIGHT,
      rounds: ROUNDS,
      warmupSeconds: WARMUP_SECONDS,
      seconds: SECONDS,
      native: native.ok ? 'loaded' : native.reason,
      targets: TARGETS,
    },
    rows,
    cells,
  })
}

await runBench(main)

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
 *                          worker-threads-shared: worker threads, invocationsPerWorker BENCH_PER_WORKER, default 64;
 *                          pipeline-in-workers, run only when named: bench/pipeline-workers.ts)
 *   BENCH_BROKER       default TOOLBRIDGE_BROKER, else pulsar://127.0.0.1:6650
 *   BENCH_OUT          default bench/results/pulsar.json (git-ignored)
 */
import { readdirSync, readFileSync } from 'node:fs'
import type { Logger } from '../bridge/support/logger.ts'
import { loadNativePulsar, NativePulsarTransport } from '../bridge/transports/pulsar/native-transport.ts'
import { PulsarTransport } from '../bridge/transports/pulsar/pulsar-transport.ts'
import type { BridgeSetup } from './env-settings.ts'
import { ARGUMENTS, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { machineInfo } from './machine.ts'
import { type Column, fmt } from './tables.ts'
import {
  type BrokerRow,
  cpuColumns,
  cpuUsOfPid,
  failedCalls,
  runBrokerBench,
  startTransportEcho,
} from './broker-bench.ts'

const BROKER =
  process.env.BENCH_BROKER ||
  (process.env.TOOLBRIDGE_BROKER?.startsWith('pulsar') ? process.env.TOOLBRIDGE_BROKER : '') ||
  'pulsar://127.0.0.1:6650'
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
let native: Awaited<ReturnType<typeof loadNativePulsar>>

// ---------------------------------------------------------------- cells and rows

interface Row extends BrokerRow<Setup> {
  /** req/s over the baseline's (the native row: the baseline's over the native's). */
  ratio: number
  target: number | null
  met: boolean | null
}

/** After the throughput columns every broker table opens with. */
const COLUMNS: Column<Row>[] = [
  { title: 'ratio', width: 6, cell: (r) => (r.setup === 'baseline' ? '1' : fmt(r.ratio, 2)) },
  { title: 'target', width: 6, cell: (r) => (r.target === null ? '' : `>=${r.target}`) },
  { title: 'met', width: 4, cell: (r) => (r.met === null ? '' : r.met ? 'yes' : 'NO') },
  ...cpuColumns<Row>('broker us/req'),
]

await runBrokerBench<Setup, Omit<Row, keyof BrokerRow<Setup>>>({
  name: 'pulsar',
  broker: BROKER,
  callTimeoutMs: 5_000,
  targets: TARGETS,
  topicOf,
  logger: benchLogger,
  /** The baseline's echo on the built-in client; native's on --pulsar-client native. */
  startEcho: (setup, inFlight, responseBody) =>
    startTransportEcho(
      setup === 'native'
        ? new NativePulsarTransport(BROKER, { logger: benchLogger })
        : new PulsarTransport(BROKER, { logger: benchLogger }),
      topicOf(setup),
      inFlight,
      new Uint8Array(responseBody),
    ),
  loadClient: (setup) => ({ nativePulsar: setup === 'native' }),
  async moreSetups() {
    native = await loadNativePulsar()
    return native.ok ? ['native'] : []
  },
  async prepare({ tool, responseBody, settings, setups, loadBefore }) {
    const probe = new PulsarTransport(BROKER)
    await probe.connect().catch((err: Error) => {
      throw new Error(`${err.message} (start one with scripts/pulsar.sh start)`)
    })
    await probe.close()
    brokerPid = findBrokerPid()
    const machine = machineInfo({})
    return {
      machine,
      address: probe.address,
      brokerCpuUs: cpuUsOfPid(() => brokerPid),
      header: [
        `node ${machine.node}, ${machine.platform}; broker ${probe.address}${brokerPid ? ` (pid ${brokerPid})` : ''}`,
        `load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min); with other work on the machine, numbers are unreliable`,
        `service: ${SERVICE_ID} (tool ${TOOL_NAME}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}), concurrency = in-flight`,
        `baseline: echo service on the built-in client, fixed ${responseBody.byteLength}-byte answer, ack after the receipt`,
        native.ok ? 'native: pulsar-client loads; the same echo on it' : `native: skipped (${native.reason})`,
        `cells: ${settings.warmupSeconds}s warm-up + ${settings.seconds}s measured, closed loop; in-flight ${settings.inFlight.join(', ')}; ${settings.rounds} round(s); setups ${setups.join(', ')}`,
      ],
      settings: { config: tool.config, arguments: ARGUMENTS, native: native.ok ? 'loaded' : native.reason },
    }
  },
  row({ setup, reqPerSec }, baseline) {
    const baseReq = baseline.stats.reqPerSec
    const isBridge = setup !== 'baseline' && setup !== 'native'
    const ratio = setup === 'native' ? baseReq / reqPerSec : reqPerSec / baseReq
    const target = isBridge ? TARGETS.bridgeOverBaseline : setup === 'native' ? TARGETS.builtinOverNative : null
    return { ratio, target, met: target === null ? null : ratio >= target }
  },
  columns: COLUMNS,
  legend: [
    'median over rounds; "ratio" = req/s over the baseline (bridge rows), or the baseline (built-in client) over native (native row)',
    '"node us/req" = CPU of this process per request; "broker us/req" = CPU of the Pulsar JVM per request',
  ],
  summary(rows) {
    const missed = rows.filter((r) => r.met === false)
    return [
      missed.length === 0
        ? 'targets: all met'
        : `targets missed: ${missed.map((r) => `${r.setup}@${r.inFlight}`).join(', ')}`,
      ...failedCalls(rows),
    ]
  },
})

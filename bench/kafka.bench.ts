/**
 * The bridge on Kafka against a minimal hand-written echo service on the same
 * client library (@platformatic/kafka) and broker, measured in the same run.
 *
 *   scripts/kafka.sh start && npm run bench:kafka
 *
 * Setups, each driven by the same client (bridge/trustgraph/request-client.ts RequestClient on
 * a KafkaTransport of its own) in a process of its own (bench/load-client.ts), so that this
 * process's CPU time is the service's alone (the baseline, or the bridge and its worker
 * threads); the client's is recorded beside it:
 *
 * - `baseline`: a hand-written service in the bridge's topology (consumer
 *   group `bench-echo-request` on tg.request.bench-echo) that answers every
 *   record with the same fixed response bytes the bridge sends for the joke
 *   below, on tg.response.bench-echo with the `id` header, and commits the
 *   record once the broker has acknowledged the answer — the delivery
 *   guarantee the bridge gives, with nothing else. It uses the client
 *   settings the transport uses (64 requests in flight per connection).
 * - `in-process` and `worker-threads`: startRuntime() with serverless.yml's
 *   joke-service (tool tell-joke, config style=pun, arguments
 *   topic=programming), its `concurrency` set to the in-flight level.
 *
 * Every setup has topics of its own, created fresh (one partition, as
 * TrustGraph's) and deleted afterwards. For each in-flight level the
 * services are started, then measured in rounds with the order rotated;
 * the table gives the median over rounds. A cell is a closed loop: N
 * callers, each sending its next request when its answer arrives.
 *
 * Targets (per bridge row): throughput >= 0.9 x baseline, p50 <= baseline p50 + 0.5 ms.
 *
 * Environment: BENCH_SECONDS (3), BENCH_WARMUP_SECONDS (0.5), BENCH_ROUNDS (3),
 * BENCH_INFLIGHT (1,16,64), BENCH_SETUPS (in-process,worker-threads,worker-threads-shared; worker-threads-shared: worker threads with
 * invocationsPerWorker BENCH_PER_WORKER, default 64),
 * BENCH_BROKER (kafka://127.0.0.1:9092), BENCH_OUT (bench/results/kafka.json).
 */
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import {
  Admin,
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  Producer,
  stringDeserializer,
  stringSerializer,
} from '@platformatic/kafka'
import type { Message } from '@platformatic/kafka'
import type { Project } from '../bridge/project/project.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { parseKafkaUrl } from '../bridge/transports/kafka/url.ts'
import { handler } from '../functions/joke/handler.ts'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { encodeResponse, finalResponse, ID_PROPERTY, resultText } from '../shared/protocol.ts'
import { defaultQueues } from '../shared/queues.ts'
import {
  ARGUMENTS,
  describeMachine,
  fmt,
  fmtSigned,
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
const BROKER = process.env.BENCH_BROKER || 'kafka://127.0.0.1:9092'
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/kafka.json')
const TARGETS = { throughputRatio: 0.9, p50DeltaMs: 0.5 }
const CALL_TIMEOUT_MS = 10_000
const STARTUP_TIMEOUT_MS = 60_000

type Setup = 'baseline' | BridgeSetup
const SETUPS: Setup[] = ['baseline', ...BRIDGE_KINDS]
const topicOf = (setup: Setup) => (setup === 'baseline' ? 'bench-echo' : `bench-joke-${setup}`)
const kafkaNames = (setup: Setup) => ({
  request: `tg.request.${topicOf(setup)}`,
  response: `tg.response.${topicOf(setup)}`,
})

const connection = parseKafkaUrl(BROKER)
const clientOptions = {
  clientId: 'toolbridge-bench',
  bootstrapBrokers: connection.brokers,
  retries: 3,
  retryDelay: 250,
}

/** The Kafka JVM started by scripts/kafka.sh, for its CPU time. */
function brokerCpuUs(): number {
  try {
    const pid = readFileSync(
      join(process.env.TOOLBRIDGE_KAFKA_DIR ?? join(homedir(), '.cache/toolbridge/kafka'), 'kafka.pid'),
      'utf8',
    ).trim()
    return processCpuUsOf(Number(pid))
  } catch {
    return Number.NaN
  }
}

async function resetTopics(): Promise<void> {
  const admin = new Admin(clientOptions)
  try {
    const existing = new Set(await admin.listTopics())
    const doomed = SETUPS.flatMap((s) => Object.values(kafkaNames(s))).filter((t) => existing.has(t))
    if (doomed.length > 0) await admin.deleteTopics({ topics: doomed })
    const groups = await admin.listGroups()
    for (const group of ['bench-echo-request', ...BRIDGE_KINDS.map((k) => `${SERVICE_ID}-${k}-request`)])
      if (groups.has(group)) await admin.deleteGroups({ groups: [group] }).catch(() => {})
    for (let i = 0; i < 100 && doomed.length > 0; i++) {
      const left = new Set(await admin.listTopics())
      if (!doomed.some((t) => left.has(t))) break
      await new Promise((r) => setTimeout(r, 100))
    }
  } finally {
    await admin.close()
  }
}

/** The raw echo: consume, answer with fixed bytes, commit after the broker acknowledged the answer. */
async function startEcho(responseBody: Buffer): Promise<{ close(): Promise<void> }> {
  const { request, response } = kafkaNames('baseline')
  const producer = new Producer<Buffer, Buffer, string, string>({
    ...clientOptions,
    maxInflights: 64,
    serializers: { headerKey: stringSerializer, headerValue: stringSerializer },
  })
  const admin = new Admin(clientOptions)
  await admin.createTopics({ topics: [request, response], partitions: 1, replicas: -1 }).catch(() => {})
  await admin.close()
  const consumer = new Consumer<Buffer, Buffer, string, string>({
    ...clientOptions,
    groupId: 'bench-echo-request',
    autocommit: false,
    maxWaitTime: 500,
    deserializers: { headerKey: stringDeserializer, headerValue: stringDeserializer },
  })
  const stream = await consumer.consume({
    topics: [request],
    autocommit: false,
    mode: MessagesStreamModes.COMMITTED,
    fallbackMode: MessagesStreamFallbackModes.LATEST,
  })
  await new Promise((r) => (stream as unknown as NodeJS.EventEmitter).once('offsets', r))
  stream.on('data', (message: Message<Buffer, Buffer, string, string>) => {
    const id = message.headers.get(ID_PROPERTY) ?? 'unknown'
    producer
      .send({ messages: [{ topic: response, value: responseBody, headers: { [ID_PROPERTY]: id } }], acks: 1 })
      .then(() => message.commit())
      .catch((err: Error) => console.error(`echo: ${err.message}`))
  })
  return {
    async close() {
      await consumer.close(true)
      await producer.close()
    },
  }
}

async function startSetup(
  setup: Setup,
  inFlight: number,
  ctx: { spec: ToolServiceSpec; project: Project; request: object; expected: string; responseBody: Buffer },
): Promise<LiveSetup<Setup>> {
  const q = defaultQueues(topicOf(setup))
  let stopService: () => Promise<void>
  if (setup === 'baseline') {
    const echo = await startEcho(ctx.responseBody)
    stopService = () => echo.close()
  } else {
    // A service id (so a consumer group) per setup: one group across two topics would make its members share one assignment.
    const spec: ToolServiceSpec = {
      ...ctx.spec,
      id: `${SERVICE_ID}-${setup}`,
      concurrency: inFlight,
      invocationsPerWorker: setupInvoker(setup).invocationsPerWorker,
      requestQueue: q.request,
      responseQueue: q.response,
    }
    const runtime = await startRuntime(
      { ...ctx.project, services: [spec] },
      resolveSettings({ broker: BROKER, invoker: setupInvoker(setup).invoker, port: '', drainTimeout: '1' }, {}),
    )
    stopService = () => runtime.stop()
  }
  return {
    setup,
    ...(await driveService(
      setup,
      {
        broker: BROKER,
        requestQueue: q.request,
        responseQueue: q.response,
        request: ctx.request,
        expected: ctx.expected,
        startupInFlight: inFlight,
        startupTimeoutMs: STARTUP_TIMEOUT_MS,
        callTimeoutMs: CALL_TIMEOUT_MS,
      },
      stopService,
    )),
  }
}

interface Row extends BrokerRowStats {
  setup: Setup
  inFlight: number
  throughputRatio: number
  p50DeltaMs: number
  throughputMet: boolean | null
  p50Met: boolean | null
}

const verdict = (met: boolean | null) => (met === null ? '' : met ? 'yes' : 'NO')
const COLUMNS: Column<Row>[] = [
  ...throughputColumns<Row>(),
  { title: 'x base', width: 6, cell: (r) => (r.setup === 'baseline' ? '1' : fmt(r.throughputRatio, 2)) },
  { title: 'p50 +ms', width: 7, cell: (r) => (r.setup === 'baseline' ? '0' : fmtSigned(r.p50DeltaMs, 3)) },
  { title: '>=0.9x', width: 6, cell: (r) => verdict(r.throughputMet) },
  { title: '<=+0.5', width: 6, cell: (r) => verdict(r.p50Met) },
  { title: 'node us/req', width: 11, cell: (r) => fmt(r.nodeCpuUsPerReq, 0) },
  { title: 'client us/req', width: 13, cell: (r) => fmt(r.clientCpuUsPerReq, 0) },
  { title: 'kafka us/req', width: 12, cell: (r) => fmt(r.brokerCpuUsPerReq, 0) },
]

async function main(): Promise<void> {
  const loadBefore = loadAverage()
  const { project, spec, tool, request, event } = loadJokeTool()
  const expected = resultText(await handler(event, lambdaContext(spec.functionName, 'bench', spec.timeoutMs)))
  const responseBody = Buffer.from(encodeResponse(finalResponse(expected)))
  const version = (
    JSON.parse(readFileSync(resolve(ROOT, 'node_modules/@platformatic/kafka/package.json'), 'utf8')) as {
      version: string
    }
  ).version
  const machine = machineInfo({ platformaticKafka: version })
  console.log(describeMachine(machine))
  console.log(`node ${machine.node}; @platformatic/kafka ${version}; broker ${BROKER}`)
  console.log(`load average before: ${loadBefore.join(' / ')}`)
  console.log(
    `service: ${SERVICE_ID} (${TOOL_NAME}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}), concurrency = in-flight`,
  )
  console.log(
    `cells: ${WARMUP_SECONDS}s warm-up + ${SECONDS}s, ${ROUNDS} rounds, in-flight ${IN_FLIGHT.join(', ')}, setups ${SETUPS.join(', ')}\n`,
  )
  await resetTopics()

  const cells = await measureBrokerRounds({
    setups: SETUPS,
    inFlight: IN_FLIGHT,
    rounds: ROUNDS,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    brokerCpuUs,
    start: (setup, inFlight) => startSetup(setup, inFlight, { spec, project, request, expected, responseBody }),
  })
  await resetTopics()

  const rows: Row[] = []
  for (const inFlight of IN_FLIGHT) {
    const base = cells.filter((c) => c.inFlight === inFlight && c.setup === 'baseline')
    const baseReq = median(base.map((c) => c.reqPerSec))
    const baseP50 = median(base.map((c) => c.p50Ms))
    for (const setup of SETUPS) {
      const mine = cells.filter((c) => c.inFlight === inFlight && c.setup === setup)
      const stats = brokerRowStats(mine)
      const { reqPerSec, p50Ms } = stats
      const isBase = setup === 'baseline'
      rows.push({
        setup,
        inFlight,
        ...stats,
        throughputRatio: reqPerSec / baseReq,
        p50DeltaMs: p50Ms - baseP50,
        throughputMet: isBase ? null : reqPerSec / baseReq >= TARGETS.throughputRatio,
        p50Met: isBase ? null : p50Ms - baseP50 <= TARGETS.p50DeltaMs,
      })
    }
  }
  console.log('\nmedian over rounds; "x base" = req/s over the raw echo\'s; "p50 +ms" = p50 minus the raw echo\'s;')
  console.log(
    '"node us/req" = CPU of this process (client + service) per request; "kafka us/req" = CPU of the broker JVM per request\n',
  )
  printTableByInFlight(COLUMNS, rows)
  const missed = rows.filter((r) => r.throughputMet === false || r.p50Met === false)
  console.log(
    missed.length === 0
      ? '\ntargets: every bridge row meets both'
      : `\ntargets missed: ${missed.map((r) => `${r.setup}@${r.inFlight}`).join(', ')}`,
  )
  writeBenchResults(OUT, 'kafka', machine, loadBefore, {
    settings: {
      broker: BROKER,
      service: SERVICE_ID,
      tool: TOOL_NAME,
      inFlight: IN_FLIGHT,
      rounds: ROUNDS,
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      targets: TARGETS,
      responseBytes: responseBody.byteLength,
    },
    rows,
    cells,
  })
}

await runBench(main)

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
 * invocationsPerWorker BENCH_PER_WORKER, default 64; pipeline-in-workers, run only when named: bench/pipeline-workers.ts),
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
import { parseKafkaUrl } from '../bridge/transports/kafka/url.ts'
import { ID_PROPERTY } from '../shared/protocol.ts'
import { processCpuUsOf } from './cpu-and-memory.ts'
import type { BridgeSetup } from './env-settings.ts'
import { ARGUMENTS, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import type { Column } from './tables.ts'
import {
  type BrokerRow,
  cpuColumns,
  runBrokerBench,
  type VersusBaseline,
  versusBaseline,
  versusBaselineColumns,
} from './broker-bench.ts'

const BROKER = process.env.BENCH_BROKER || 'kafka://127.0.0.1:9092'
const TARGETS = { throughputRatio: 0.9, p50DeltaMs: 0.5 }

type Setup = 'baseline' | BridgeSetup
const topicOf = (setup: Setup) => (setup === 'baseline' ? 'bench-echo' : `bench-joke-${setup}`)
const kafkaNames = (setup: Setup) => ({
  request: `tg.request.${topicOf(setup)}`,
  response: `tg.response.${topicOf(setup)}`,
})
// A service id (so a consumer group) per setup: one group across two topics would make its members share one assignment.
const serviceId = (setup: BridgeSetup) => `${SERVICE_ID}-${setup}`

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

async function resetTopics(setups: Setup[]): Promise<void> {
  const admin = new Admin(clientOptions)
  try {
    const existing = new Set(await admin.listTopics())
    const doomed = setups.flatMap((s) => Object.values(kafkaNames(s))).filter((t) => existing.has(t))
    if (doomed.length > 0) await admin.deleteTopics({ topics: doomed })
    const groups = await admin.listGroups()
    for (const group of setups.map((s) => (s === 'baseline' ? 'bench-echo-request' : `${serviceId(s)}-request`)))
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
async function startEchoService(responseBody: Buffer): Promise<() => Promise<void>> {
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
  return async () => {
    await consumer.close(true)
    await producer.close()
  }
}

interface Row extends BrokerRow<Setup>, VersusBaseline {}

/** After the throughput columns every broker table opens with. */
const COLUMNS: Column<Row>[] = [...versusBaselineColumns<Row>(TARGETS), ...cpuColumns<Row>('kafka us/req')]

await runBrokerBench<Setup, VersusBaseline>({
  name: 'kafka',
  broker: BROKER,
  callTimeoutMs: 10_000,
  targets: TARGETS,
  topicOf,
  serviceId,
  startEcho: (_setup, _inFlight, responseBody) => startEchoService(responseBody),
  async prepare({ tool, settings, setups, loadBefore }) {
    const version = (
      JSON.parse(readFileSync(resolve(ROOT, 'node_modules/@platformatic/kafka/package.json'), 'utf8')) as {
        version: string
      }
    ).version
    const machine = machineInfo({ platformaticKafka: version })
    await resetTopics(setups)
    return {
      machine,
      address: BROKER,
      brokerCpuUs,
      header: [
        `node ${machine.node}; @platformatic/kafka ${version}; broker ${BROKER}`,
        `load average before: ${loadBefore.join(' / ')}`,
        `service: ${SERVICE_ID} (${TOOL_NAME}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}), concurrency = in-flight`,
        `cells: ${settings.warmupSeconds}s warm-up + ${settings.seconds}s, ${settings.rounds} rounds, in-flight ${settings.inFlight.join(', ')}, setups ${setups.join(', ')}`,
      ],
      settings: {},
    }
  },
  cleanUp: ({ setups }) => resetTopics(setups),
  row: (row, baseline) => versusBaseline(row, baseline, TARGETS),
  columns: COLUMNS,
  legend: [
    'median over rounds; "x base" = req/s over the raw echo\'s; "p50 +ms" = p50 minus the raw echo\'s;',
    '"node us/req" = CPU of this process (client + service) per request; "kafka us/req" = CPU of the broker JVM per request',
  ],
  summary(rows) {
    const missed = rows.filter((r) => r.throughputMet === false || r.p50Met === false)
    return [
      missed.length === 0
        ? 'targets: every bridge row meets both'
        : `targets missed: ${missed.map((r) => `${r.setup}@${r.inFlight}`).join(', ')}`,
    ]
  },
})

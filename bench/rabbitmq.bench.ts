/**
 * The bridge on RabbitMQ against a minimal hand-written amqplib echo service
 * on the same broker, measured in the same run.
 *
 *   npm run bench:rabbitmq
 *
 * Setups, each driven by the same client (bridge/trustgraph/request-client.ts RequestClient on
 * a RabbitTransport connection of its own) in a process of its own (bench/load-client.ts):
 *
 * - `baseline`: a hand-written amqplib service (noDelay, the bridge's
 *   topology: fanout exchange + named queue for requests, prefetch = the
 *   in-flight level) that answers every request with the same fixed response
 *   bytes the bridge sends for the joke below, on the response fanout
 *   exchange through a confirm channel, and acks after the confirm — the
 *   delivery guarantees the bridge gives, with nothing else.
 * - `in-process` and `worker-threads`: startRuntime() with serverless.yml's
 *   joke-service (tool tell-joke, config style=pun, arguments
 *   topic=programming) on the `in-process` and the `worker-threads`
 *   invoker, its `concurrency` (prefetch, and for `worker-threads` the worker pool)
 *   set to the in-flight level.
 *
 * Each setup has a topic of its own (request:tg:bench-echo,
 * request:tg:bench-joke-in-process, request:tg:bench-joke-worker-threads and their
 * response queues), so nothing competes for a queue — not even the tests,
 * which use request:tg:joke on the same broker. The bench deletes its queues
 * and exchanges before and after the run.
 *
 * For each in-flight level, the three services are started, then measured
 * in rounds (order rotated every round: B I L, I L B, L B I) so drift of a
 * shared machine shows as spread between rounds; the table reports the
 * median over rounds. A cell is a closed loop: N callers, each sending its
 * next request as soon as the previous answer arrives; a warm-up, then a
 * fixed duration; latency is performance.now() around every call,
 * percentiles nearest-rank from the sorted samples.
 *
 * Targets (per bridge row): throughput >= 0.9 x baseline, p50 <= baseline p50 + 0.3 ms.
 *
 * Besides req/s and latency, each cell records CPU time per request of this
 * process, which runs the services alone (the baseline, or the bridge and
 * its worker threads: one setup is measured at a time), of the cell's client
 * process, and, when the broker runs on this machine, of the RabbitMQ node
 * (/proc/<beam.smp>/stat): on a shared machine these move far less than
 * req/s, and they say where a gap comes from.
 *
 * On a 2-core machine the service, its client and RabbitMQ share the cores,
 * so throughput at 16 and 64 in flight is bound by their CPU per request.
 *
 * A dropped connection (the test suite restarts RabbitMQ and closes every
 * connection) stops the run with exit code 1 and no results: the baseline
 * service does not reconnect, and the numbers would be meaningless.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 0.5)
 *   BENCH_ROUNDS           rounds per in-flight level (default 3)
 *   BENCH_INFLIGHT         in-flight levels, comma separated (default 1,16,64)
 *   BENCH_SETUPS           bridge setups to run besides the baseline (default in-process,worker-threads,worker-threads-shared)
 *   BENCH_PER_WORKER       invocationsPerWorker of worker-threads-shared (default 64)
 *   BENCH_PIPELINE_WORKERS workers of pipeline-in-workers, a setup run only when named (bench/pipeline-workers.ts)
 *   BENCH_BROKER           broker URL (default TOOLBRIDGE_BROKER, else amqp://guest:guest@127.0.0.1:5672/)
 *   BENCH_OUT              where to write the JSON (default bench/results/rabbitmq.json, git-ignored)
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { connect as amqpConnect } from 'amqplib'
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib'
import { INVOKERS } from '../bridge/project/settings.ts'
import type { Logger } from '../bridge/support/logger.ts'
import { RabbitTransport } from '../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import { ID_PROPERTY, UNKNOWN_ID } from '../shared/protocol.ts'
import { defaultQueues, parseQueueName, rabbitExchange, rabbitQueue } from '../shared/queues.ts'
import { BENCH_SETUPS, type BridgeSetup, brokerEnv, LOCAL_RABBITMQ } from './env-settings.ts'
import { ARGUMENTS, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { type Column, fmt } from './tables.ts'
import {
  type BrokerRow,
  cpuColumns,
  cpuUsOfPid,
  failedCalls,
  runBrokerBench,
  type VersusBaseline,
  versusBaseline,
  versusBaselineColumns,
} from './broker-bench.ts'

// ---------------------------------------------------------------- settings

const BASELINE_TOPIC = 'bench-echo'
const BASELINE_SUBSCRIPTION = 'bench-echo-request'
const bridgeTopic = (kind: BridgeSetup) => `bench-joke-${kind}`
const BROKER = brokerEnv(LOCAL_RABBITMQ)

const TARGETS = { throughputRatio: 0.9, p50DeltaMs: 0.3 }

type Setup = 'baseline' | BridgeSetup
const topicOf = (setup: Setup) => (setup === 'baseline' ? BASELINE_TOPIC : bridgeTopic(setup))

// ---------------------------------------------------------------- disturbances

/**
 * A dropped connection (another process restarting RabbitMQ or closing every
 * connection, as the test suite does) makes every number after it
 * meaningless, and the baseline does not reconnect: the run stops after the
 * cell under way.
 */
let disturbance: string | undefined

function disturb(reason: string): void {
  if (disturbance !== undefined) return
  disturbance = reason
  console.error(`\n${reason}`)
}

/** For the bridge's transports: any warning or error is reported, a lost connection stops the run. */
const benchLogger: Logger = {
  debug() {},
  info() {},
  warn(fields, message) {
    if (
      /lost the RabbitMQ connection|RabbitMQ closed the|RabbitMQ connection error|cancelled the consumer/.test(message)
    ) {
      disturb(
        `RabbitMQ connection trouble in the bridge or a client: ${message} (broker restarted or connections closed by another process?)`,
      )
    } else {
      console.error(`warn: ${message} ${JSON.stringify(fields)}`)
    }
  },
  error(fields, message) {
    console.error(`error: ${message} ${JSON.stringify(fields)}`)
  },
}

// ---------------------------------------------------------------- CPU accounting

/** The RabbitMQ node's process, when it runs on this machine: its CPU time is in /proc/<pid>/stat. */
function findBrokerPid(): number | undefined {
  const found: number[] = []
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'beam.smp') found.push(Number(entry))
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    return undefined // no /proc
  }
  return found.length === 1 ? found[0] : undefined
}

let brokerPid: number | undefined

// ---------------------------------------------------------------- the baseline service

const EXCHANGE_OPTIONS = { durable: true, autoDelete: false, internal: false }

/**
 * The least a service can do and still give the bridge's guarantees: consume
 * with prefetch, publish the fixed answer through a confirm channel with the
 * request's id, ack once the broker confirmed it.
 */
async function startEchoService(prefetch: number, responseBody: Buffer): Promise<() => Promise<void>> {
  const queues = defaultQueues(BASELINE_TOPIC)
  const requestName = parseQueueName(queues.request)
  const requestExchange = rabbitExchange(requestName)
  const requestQueue = rabbitQueue(requestName, BASELINE_SUBSCRIPTION)
  const responseExchange = rabbitExchange(parseQueueName(queues.response))

  const model = await amqpConnect(BROKER, { noDelay: true, clientProperties: { connection_name: 'bench-echo' } })
  const consumer: Channel = await model.createChannel()
  const publisher: ConfirmChannel = await model.createConfirmChannel()
  let closing = false
  model.on('error', (err: Error) => disturb(`baseline service: connection error: ${err.message}`))
  model.on(
    'close',
    () =>
      closing ||
      disturb('baseline service: the connection closed (broker restarted or connections closed by another process?)'),
  )
  for (const [name, channel] of [
    ['consumer', consumer],
    ['publisher', publisher],
  ] as const) {
    channel.on('error', (err: Error) => disturb(`baseline service: ${name} channel error: ${err.message}`))
    channel.on('close', () => closing || disturb(`baseline service: the ${name} channel closed`))
  }
  await consumer.assertExchange(requestExchange, 'fanout', EXCHANGE_OPTIONS)
  await consumer.assertQueue(requestQueue.name, { durable: requestQueue.durable, exclusive: false, autoDelete: false })
  await consumer.bindQueue(requestQueue.name, requestExchange, '')
  await publisher.assertExchange(responseExchange, 'fanout', EXCHANGE_OPTIONS)
  await consumer.prefetch(prefetch)
  const { consumerTag } = await consumer.consume(
    requestQueue.name,
    (message: ConsumeMessage | null) => {
      if (message === null) return
      const headers = message.properties.headers as Record<string, unknown> | undefined
      const id = headers?.[ID_PROPERTY]
      const options = {
        contentType: 'application/json',
        deliveryMode: 1,
        headers: { [ID_PROPERTY]: typeof id === 'string' ? id : id instanceof Buffer ? id.toString() : UNKNOWN_ID },
      }
      publisher.publish(responseExchange, '', responseBody, options, (err: unknown) => {
        if (err) consumer.nack(message, false, true)
        else consumer.ack(message)
      })
    },
    { noAck: false },
  )
  return async () => {
    closing = true
    await consumer.cancel(consumerTag).catch(() => {})
    await publisher.waitForConfirms().catch(() => {})
    await model.close().catch(() => {})
  }
}

/** Removes what the bench declares, so an interrupted run leaves no messages behind for the next. */
async function deleteBenchTopology(): Promise<void> {
  const model = await amqpConnect(BROKER, { noDelay: true })
  try {
    const topics = [BASELINE_TOPIC, ...[...INVOKERS, ...BENCH_SETUPS].map(bridgeTopic)]
    for (const topic of topics) {
      const queues = defaultQueues(topic)
      const request = parseQueueName(queues.request)
      const subscription = topic === BASELINE_TOPIC ? BASELINE_SUBSCRIPTION : `${SERVICE_ID}-request`
      // A channel per operation: deleting something in use (or not there, on old brokers) closes the channel.
      for (const op of [
        (ch: Channel) => ch.deleteQueue(rabbitQueue(request, subscription).name),
        (ch: Channel) => ch.deleteExchange(rabbitExchange(request)),
        (ch: Channel) => ch.deleteExchange(rabbitExchange(parseQueueName(queues.response))),
      ]) {
        const channel = await model.createChannel()
        channel.on('error', () => {})
        await op(channel).catch(() => {})
        await channel.close().catch(() => {})
      }
    }
  } finally {
    await model.close().catch(() => {})
  }
}

// ---------------------------------------------------------------- report

interface Row extends BrokerRow<Setup>, VersusBaseline {
  concurrency: number
  /** Per round: this cell's req/s over the same round's baseline cell. */
  roundRatios: number[]
}

/** After the throughput columns every broker table opens with. */
const COLUMNS: Column<Row>[] = [
  ...versusBaselineColumns<Row>(TARGETS, [
    { title: 'per round', width: 14, cell: (r) => r.roundRatios.map((x) => fmt(x, 2)).join('/') },
  ]),
  ...cpuColumns<Row>('mq us/req', true),
]

/** The installed amqplib's version, or the range package.json asks for. */
function amqplibVersion(): string {
  try {
    return (JSON.parse(readFileSync(resolve(ROOT, 'node_modules/amqplib/package.json'), 'utf8')) as { version: string })
      .version
  } catch {
    return '2.x' // installed elsewhere
  }
}

function rabbitVersion(model: ChannelModel | undefined): { version: string; source: string } {
  try {
    const path = `${process.env.PATH ?? ''}:/usr/sbin:/usr/local/sbin:/sbin`
    const out = execFileSync('rabbitmqctl', ['-q', 'version'], {
      env: { ...process.env, PATH: path },
      timeout: 20_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    const version = out.toString().trim()
    if (version) return { version, source: 'rabbitmqctl version' }
  } catch {
    // not installed here, or not allowed to talk to the node: ask the broker
  }
  const props = model?.connection.serverProperties
  return props
    ? { version: `${props.version}`, source: 'AMQP server properties' }
    : { version: 'unknown', source: 'none' }
}

// ---------------------------------------------------------------- main

await runBrokerBench<Setup, Omit<Row, keyof BrokerRow<Setup>>>({
  name: 'rabbitmq',
  broker: BROKER,
  callTimeoutMs: 5_000,
  targets: TARGETS,
  topicOf,
  logger: benchLogger,
  startEcho: (_setup, inFlight, responseBody) => startEchoService(inFlight, responseBody),
  async prepare({ spec, tool, responseBody, setups, settings, loadBefore }) {
    await deleteBenchTopology() // leftovers of an interrupted run
    brokerPid = findBrokerPid()
    const probe = await amqpConnect(BROKER, { noDelay: true })
    const rabbit = rabbitVersion(probe)
    await probe.close()
    const machine = {
      ...machineInfo({ amqplib: amqplibVersion() }),
      rabbitmq: rabbit.version,
      rabbitmqVersionFrom: rabbit.source,
    }
    const address = new RabbitTransport(BROKER).address
    return {
      machine,
      address,
      brokerCpuUs: cpuUsOfPid(() => brokerPid),
      header: [
        `node ${machine.node}, ${machine.platform}; RabbitMQ ${machine.rabbitmq} (${machine.rabbitmqVersionFrom}); amqplib ${machine.amqplib}`,
        `broker: ${address}`,
        `load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min); with other work on the machine, numbers are unreliable`,
        `service: ${SERVICE_ID} (tool ${TOOL_NAME}, config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}), ` +
          `concurrency = in-flight (serverless.yml says ${spec.concurrency})`,
        `baseline: hand-written amqplib service on request:tg:${BASELINE_TOPIC}, fixed ${responseBody.byteLength}-byte answer, confirm then ack`,
        `cells: ${settings.warmupSeconds}s warm-up + ${settings.seconds}s measured, closed loop; in-flight ${settings.inFlight.join(', ')}; ` +
          `${settings.rounds} round(s) per level, order rotated; setups ${setups.join(', ')}`,
      ],
      settings: {
        config: tool.config,
        arguments: ARGUMENTS,
        configuredConcurrency: spec.concurrency,
        concurrency: 'equal to in-flight (prefetch; worker pool size for worker-threads)',
        queues: Object.fromEntries(setups.map((s) => [s, defaultQueues(topicOf(s))])),
        loadGenerator:
          'closed loop: each of in-flight callers sends its next request when the previous settles; RequestClient on its own RabbitTransport per setup, in a process of its own',
        baseline:
          'hand-written amqplib service, noDelay, fanout exchange + named queue, prefetch = in-flight, fixed response published on the response fanout exchange via a confirm channel, ack after confirm',
        aggregation: 'median over rounds; rounds rotate the order of setups',
      },
    }
  },
  cleanUp: deleteBenchTopology,
  disturbed: () => disturbance,
  row: (row, baseline, mine) => ({
    concurrency: row.inFlight,
    ...versusBaseline(row, baseline, TARGETS),
    roundRatios: mine.map(
      (c) => c.reqPerSec / (baseline.cells.find((b) => b.round === c.round)?.reqPerSec ?? Number.NaN),
    ),
  }),
  columns: COLUMNS,
  legend: [
    'median over rounds; "x base" = req/s over baseline req/s, "per round" = the same against the same round\'s baseline;',
    `"p50 +ms" = p50 minus baseline p50; targets: throughput >= ${TARGETS.throughputRatio} x baseline, p50 <= baseline + ${TARGETS.p50DeltaMs} ms`,
    '"node us/req" = CPU of this process (client + service or bridge + workers) per request, "node cores" = its CPU use;',
    '"mq us/req" = CPU of the RabbitMQ node per request (less sensitive to other load than req/s)',
  ],
  summary(rows) {
    const bridgeRows = rows.filter((r) => r.setup !== 'baseline')
    const missed = bridgeRows.filter((r) => r.throughputMet === false || r.p50Met === false)
    return [
      missed.length === 0
        ? `targets: all ${bridgeRows.length} bridge rows meet both`
        : `targets: ${missed.length} of ${bridgeRows.length} bridge rows miss: ` +
          missed
            .map((r) => `${r.setup}@${r.inFlight}${r.throughputMet ? '' : ' (throughput)'}${r.p50Met ? '' : ' (p50)'}`)
            .join(', '),
      ...failedCalls(rows),
    ]
  },
  loadNote: ' (this bench alone keeps about 2 cores busy: node + RabbitMQ)',
  onFailure() {
    if (disturbance !== undefined) console.error('no results written: rerun when nothing else uses the broker')
  },
})

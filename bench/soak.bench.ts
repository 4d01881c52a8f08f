/**
 * Soak: 300,000 requests through one bridge on RabbitMQ, watching its memory
 * and event loop over time.
 *
 *   npm run bench:soak        (RabbitMQ running: scripts/rabbitmq.sh start)
 *
 * The bridge runs as users run it, `toolbridge start --broker amqp://...` in
 * a process of its own (worker-thread invoker, the example serverless.yml),
 * so its RSS is its own (worker threads included) and not this client's.
 * A closed loop of BENCH_INFLIGHT callers sends a mix of the examples (8 in
 * 10 tell-joke, 1 calculate, 1 tell-story, streamed) and checks every answer.
 * Once a second: the bridge's RSS (/proc/<pid>/status), its event-loop delay
 * p99 (`nodejs_eventloop_lag_p99_seconds` from its own /metrics) and the
 * answers so far.
 *
 * Also once a second: the bridge's CPU time (/proc/<pid>/stat) and the
 * machine's load average, so that a fall in throughput can be told apart:
 * the bridge's CPU per request rising is the bridge slowing down; the same
 * CPU per request with a higher load is the machine busy with other work.
 *
 * Targets, all checked in the verdict line: no request lost (every call
 * answered, correctly); RSS never exceeds 200 MiB, and grows < 10 % from
 * when the bridge's memories of answered requests are full to the end; the
 * second half's req/s is at least 0.9x the first half's; the event loop's
 * p99 delay (the median of the per-second values after warm-up, the first
 * 10 % of requests; the highest is printed beside it) <= 20 ms.
 *
 * Those memories (answers kept for redeliveries, and requests seen, 10,000
 * of each per service by default) are bounded, so RSS grows by design until
 * they are full: with 1 request in 10 to the least called service, that is
 * after 100,000 requests, and only RSS growth after that can be a leak. The
 * default run is three times as long; a run too short to have half of it
 * after that point prints the growth but does not judge it.
 * Prints a table per tenth of the run; writes JSON and an SVG chart of RSS and
 * throughput over time.
 *
 * Environment:
 *   BENCH_REQUESTS   requests in all (default 300000)
 *   BENCH_INFLIGHT   callers (default 32)
 *   BENCH_INVOKER    the bridge's invoker (default worker-threads)
 *   BENCH_PER_WORKER invocationsPerWorker for every example (default: as serverless.yml says)
 *   BENCH_BRIDGE_NODE_OPTIONS  node options for the bridge (default --max-old-space-size=160; empty: none)
 *   BENCH_BROKER     default TOOLBRIDGE_BROKER, else amqp://guest:guest@127.0.0.1:5672/
 *   BENCH_OUT        JSON path (default bench/results/soak.json); the SVG goes beside it
 */
import { redact } from '../bridge/transports/redact.ts'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { RabbitTransport } from '../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import { defaultQueues } from '../shared/queues.ts'
import { DEFAULT_ANSWERED_MEMORY_SIZE } from '../bridge/project/settings.ts'
import { handler as joke } from '../functions/joke/handler.ts'
import { type ChildBridge, startChildBridge } from './child-bridge.ts'
import { processCpuUsOf, rssMiB } from './cpu-and-memory.ts'
import { brokerEnv, LOCAL_RABBITMQ, numberEnv } from './env-settings.ts'
import { loadJokeTool } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeResults } from './results-file.ts'
import { type Column, fmt, fmtInt, printHeader, printRow } from './tables.ts'
import { lineChartSvg } from './svg-chart.ts'

const TOTAL = Math.floor(numberEnv('BENCH_REQUESTS', 300_000, 100))
const IN_FLIGHT = Math.floor(numberEnv('BENCH_INFLIGHT', 32, 1))
const BROKER = brokerEnv(LOCAL_RABBITMQ)
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/soak.json')
const SVG = OUT.replace(/\.json$/, '') + '.svg'
const TARGET_RSS_GROWTH = 0.1
const TARGET_RSS_MIB = 200
const TARGET_SECOND_HALF_RATIO = 0.9
const TARGET_EVENT_LOOP_P99_MS = 20
const PER_WORKER = process.env.BENCH_PER_WORKER ? Math.floor(numberEnv('BENCH_PER_WORKER', 1, 1)) : undefined
const WARMUP_FRACTION = 0.1
/** Requests in one turn of the mix (one() below): the last is tell-story's, the one before calculate's, the rest tell-joke's. */
const MIX = 10
/** The least called services, calculate and tell-story, get one request in each turn of the mix. */
const LEAST_CALLED_SHARE = 1 / MIX
/** Requests after which every service's memories of answered and seen requests may be full. */
const MEMORIES_FULL_AFTER = DEFAULT_ANSWERED_MEMORY_SIZE / LEAST_CALLED_SHARE
const CALL_TIMEOUT_MS = 30_000
const INVOKER = process.env.BENCH_INVOKER || 'worker-threads'
/**
 * Node options for the bridge process: by default its heap capped as README
 * recommends for production. Without a cap V8 sizes the heap lazily and RSS
 * keeps climbing for minutes before it levels off (BENCH_BRIDGE_NODE_OPTIONS=
 * with an empty value shows it).
 */
const BRIDGE_NODE_OPTIONS = process.env.BENCH_BRIDGE_NODE_OPTIONS ?? '--max-old-space-size=160'

interface Sample {
  seconds: number
  answered: number
  rssMiB: number
  /** The bridge process's threads: its own and one per worker thread. */
  threads: number
  /** The bridge's main-thread heap in use (worker threads have their own). */
  heapUsedMiB: number
  eventLoopP99Ms: number
  /** The bridge process's CPU time so far (all threads), seconds. */
  cpuSeconds: number
  /** The machine's 1-minute load average. */
  load1: number
}

/**
 * serverless.yml with topics of the soak's own (`soak-joke`, ...), beside it so
 * that handler paths still resolve: nothing else on the broker (tests,
 * TrustGraph's own joke service) competes for these queues.
 */
const SOAK_YML = resolve(ROOT, `.soak-${process.pid}.serverless.yml`)
const SOAK_TOPIC = (topic: string) => `soak-${topic}`

/** `toolbridge start` in a child process; resolves with its pid and HTTP address once it serves. */
function startBridge(): Promise<ChildBridge> {
  const yml = readFileSync(resolve(ROOT, 'serverless.yml'), 'utf8').replace(
    /^( +topic: )(\S+)$/gm,
    (_, key: string, topic: string) =>
      key +
      SOAK_TOPIC(topic) +
      (PER_WORKER === undefined ? '' : `\n${key.replace('topic: ', 'invocationsPerWorker: ')}${PER_WORKER}`),
  )
  writeFileSync(SOAK_YML, yml)
  return startChildBridge({
    yml: SOAK_YML,
    invoker: INVOKER,
    broker: BROKER,
    nodeArgs: BRIDGE_NODE_OPTIONS.split(' ').filter(Boolean),
  })
}

/** Event-loop delay p99 (ms) and main-thread heap in use (MiB), from the bridge's own /metrics. */
async function fromMetrics(url: string): Promise<{ eventLoopP99Ms: number; heapUsedMiB: number }> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const value = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(name + ' '))
    return line ? Number(line.slice(name.length + 1)) : Number.NaN
  }
  return {
    eventLoopP99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000,
    heapUsedMiB: value('nodejs_heap_size_used_bytes') / 2 ** 20,
  }
}

/** The bridge's CPU time per request answered between two samples, µs. */
const perRequestUs = (from: Sample, to: Sample) =>
  ((to.cpuSeconds - from.cpuSeconds) * 1e6) / Math.max(1, to.answered - from.answered)

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length)

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

async function main(): Promise<void> {
  const { project } = loadJokeTool()
  const spec = (id: string) => {
    const found = project.services.find((s) => s.id === id)!
    const queues = defaultQueues(SOAK_TOPIC(found.topic!))
    return { requestQueue: queues.request, responseQueue: queues.response }
  }
  const machine = machineInfo({})
  console.log(describeMachine(machine))
  console.log(
    `soak: ${fmtInt(TOTAL)} requests, ${IN_FLIGHT} in flight, ${INVOKER} invoker${PER_WORKER === undefined ? '' : `, invocationsPerWorker ${PER_WORKER}`}, node ${BRIDGE_NODE_OPTIONS || '(no options)'}, bridge on ${redact(BROKER)}`,
  )

  const bridge = await startBridge()
  const transport = new RabbitTransport(BROKER)
  await transport.connect()
  const clients = {
    joke: new RequestClient(transport, spec('joke-service')),
    calculator: new RequestClient(transport, spec('calculator-service')),
    story: new RequestClient(transport, spec('story-service')),
  }
  for (const client of Object.values(clients)) await client.start()

  const topics = ['programming', 'cats', 'weather', 'music']
  const expectedJoke = new Map<string, string>()
  for (const topic of topics)
    expectedJoke.set(
      topic,
      (await joke({ user: 'soak', config: { style: 'pun' }, arguments: { topic } }, {})) as string,
    )

  let issued = 0
  let answered = 0
  const lost: string[] = []
  /** One request of the mix, checked. */
  async function one(n: number): Promise<void> {
    try {
      if (n % MIX === MIX - 2) {
        const a = n % 977
        const answer = await clients.calculator.call(
          { user: 'soak', config: {}, arguments: { expression: `${a} * 3` } },
          { timeoutMs: CALL_TIMEOUT_MS },
        )
        if (answer !== String(a * 3)) lost.push(`calculate #${n}: ${answer}`)
      } else if (n % MIX === MIX - 1) {
        let chunks = 0
        const answer = await clients.story.call(
          { user: 'soak', config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 } },
          { timeoutMs: CALL_TIMEOUT_MS, onChunk: () => chunks++ },
        )
        if (chunks !== 3 || !answer.startsWith('Once upon a time, Ada')) lost.push(`tell-story #${n}: ${chunks} chunks`)
      } else {
        const topic = topics[n % topics.length]!
        const answer = await clients.joke.call(
          { user: 'soak', config: { style: 'pun' }, arguments: { topic } },
          { timeoutMs: CALL_TIMEOUT_MS },
        )
        if (answer !== expectedJoke.get(topic)) lost.push(`tell-joke #${n}: ${answer.slice(0, 80)}`)
      }
    } catch (err) {
      lost.push(`#${n}: ${(err as Error).message}`)
    }
    answered++
  }

  const samples: Sample[] = []
  const started = performance.now()
  const takeSample = async () => {
    samples.push({
      seconds: (performance.now() - started) / 1000,
      answered,
      rssMiB: rssMiB(bridge.pid),
      threads: readdirSync(`/proc/${bridge.pid}/task`).length,
      cpuSeconds: processCpuUsOf(bridge.pid) / 1e6,
      load1: loadAverage()[0]!,
      ...(await fromMetrics(bridge.url)),
    })
  }
  await takeSample()
  const sampler = setInterval(() => void takeSample(), 1000)
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < TOTAL) await one(issued++)
    }),
  )
  clearInterval(sampler)
  await takeSample()
  const seconds = (performance.now() - started) / 1000

  for (const client of Object.values(clients)) await client.close()
  await transport.close()
  await bridge.stop()

  // The table: one row per tenth of the requests, from the samples.
  interface Row {
    tenth: number
    atSeconds: number
    answered: number
    reqPerSec: number
    rssMiB: number
    threads: number
    heapUsedMiB: number
    eventLoopP99Ms: number
    cpuUsPerReq: number
    load1: number
  }
  const rows: Row[] = []
  let previous = samples[0]!
  for (let tenth = 1; tenth <= 10; tenth++) {
    const sample = samples.find((s) => s.answered >= (TOTAL * tenth) / 10) ?? samples.at(-1)!
    rows.push({
      tenth,
      atSeconds: sample.seconds,
      answered: sample.answered,
      reqPerSec: (sample.answered - previous.answered) / Math.max(1e-9, sample.seconds - previous.seconds),
      rssMiB: sample.rssMiB,
      threads: sample.threads,
      heapUsedMiB: sample.heapUsedMiB,
      eventLoopP99Ms: sample.eventLoopP99Ms,
      cpuUsPerReq: perRequestUs(previous, sample),
      load1: sample.load1,
    })
    previous = sample
  }
  const columns: Column<Row>[] = [
    { title: 'tenth', width: 5, cell: (r) => String(r.tenth) },
    { title: 'at s', width: 6, cell: (r) => fmt(r.atSeconds, 1) },
    { title: 'answered', width: 8, cell: (r) => fmtInt(r.answered) },
    { title: 'req/s', width: 6, cell: (r) => fmtInt(r.reqPerSec) },
    { title: 'RSS MiB', width: 7, cell: (r) => fmt(r.rssMiB, 1) },
    { title: 'threads', width: 7, cell: (r) => String(r.threads) },
    { title: 'heap MiB', width: 8, cell: (r) => fmt(r.heapUsedMiB, 1) },
    { title: 'loop p99 ms', width: 11, cell: (r) => fmt(r.eventLoopP99Ms, 1) },
    { title: 'cpu us/req', width: 10, cell: (r) => fmt(r.cpuUsPerReq, 0) },
    { title: 'load 1m', width: 7, cell: (r) => fmt(r.load1, 1) },
  ]
  printHeader(columns)
  for (const row of rows) printRow(columns, row)

  const afterWarmup = samples.find((s) => s.answered >= TOTAL * WARMUP_FRACTION)!
  const end = samples.at(-1)!
  const growthJudged = MEMORIES_FULL_AFTER <= TOTAL / 2
  // Growth is judged from when the memories are full; in a shorter run it is shown from warm-up.
  const growthFrom = growthJudged ? samples.find((s) => s.answered >= MEMORIES_FULL_AFTER)! : afterWarmup
  const growth = (end.rssMiB - growthFrom.rssMiB) / growthFrom.rssMiB
  const peak = Math.max(...samples.map((s) => s.rssMiB))
  // Whether it levels off: growth over the second half alone.
  const half = samples.find((s) => s.answered >= TOTAL / 2)!
  const secondHalfGrowth = (end.rssMiB - half.rssMiB) / half.rssMiB
  const start = samples[0]!
  const firstHalfReqPerSec = (half.answered - start.answered) / (half.seconds - start.seconds)
  const secondHalfReqPerSec = (end.answered - half.answered) / (end.seconds - half.seconds)
  const secondHalfRatio = secondHalfReqPerSec / firstHalfReqPerSec
  const loopP99s = samples.filter((s) => s.answered >= afterWarmup.answered).map((s) => s.eventLoopP99Ms)
  const loopP99Ms = median(loopP99s)
  const loopP99MaxMs = Math.max(...loopP99s)
  const checks = {
    lost: lost.length === 0,
    rssGrowth: growthJudged ? growth < TARGET_RSS_GROWTH : undefined,
    rss: peak <= TARGET_RSS_MIB,
    secondHalf: secondHalfRatio >= TARGET_SECOND_HALF_RATIO,
    eventLoop: loopP99Ms <= TARGET_EVENT_LOOP_P99_MS,
  }
  const verdict = (met: boolean | undefined) =>
    met === undefined ? `not judged (fewer than ${fmtInt(2 * MEMORIES_FULL_AFTER)} requests)` : met ? 'met' : 'MISSED'
  console.log(
    `\n${fmtInt(answered)} answered in ${fmt(seconds, 1)} s (${fmtInt(answered / seconds)} req/s); lost or wrong: ${lost.length}` +
      `\nRSS after warm-up ${fmt(afterWarmup.rssMiB, 1)} MiB, ${growthJudged ? `once the memories are full (${fmtInt(growthFrom.answered)} answered) ${fmt(growthFrom.rssMiB, 1)} MiB, ` : ''}` +
      `at the end ${fmt(end.rssMiB, 1)} MiB (${growth >= 0 ? '+' : ''}${fmt(growth * 100, 1)} %${growthJudged ? '' : ' since warm-up, the memories still filling'}), peak ${fmt(peak, 1)} MiB` +
      `\nRSS over the second half: ${fmt(half.rssMiB, 1)} -> ${fmt(end.rssMiB, 1)} MiB (${secondHalfGrowth >= 0 ? '+' : ''}${fmt(secondHalfGrowth * 100, 1)} %)` +
      `\nreq/s: first half ${fmtInt(firstHalfReqPerSec)} (bridge ${fmt(perRequestUs(start, half), 0)} us CPU/request, load ${fmt(mean(samples.filter((s) => s.answered < half.answered).map((s) => s.load1)), 1)}), ` +
      `second half ${fmtInt(secondHalfReqPerSec)} (${fmt(perRequestUs(half, end), 0)} us CPU/request, load ${fmt(mean(samples.filter((s) => s.answered >= half.answered).map((s) => s.load1)), 1)})` +
      `\nevent-loop p99 after warm-up: median ${fmt(loopP99Ms, 1)} ms, highest ${fmt(loopP99MaxMs, 1)} ms` +
      `\ntargets: no request lost: ${verdict(checks.lost)}; RSS growth once the memories are full < ${TARGET_RSS_GROWTH * 100} %: ${verdict(checks.rssGrowth)}; ` +
      `RSS <= ${TARGET_RSS_MIB} MiB: ${verdict(checks.rss)}; second half >= ${TARGET_SECOND_HALF_RATIO}x first half (${fmt(secondHalfRatio, 2)}x): ${verdict(checks.secondHalf)}; ` +
      `event-loop p99 <= ${TARGET_EVENT_LOOP_P99_MS} ms: ${verdict(checks.eventLoop)}`,
  )
  for (const line of lost.slice(0, 10)) console.log(`  ${line}`)
  console.log(`load average after the run: ${loadAverage().join(' ')}`)

  const throughput = samples
    .slice(1)
    .map((s, i): [number, number] => [
      s.seconds,
      (s.answered - samples[i]!.answered) / (s.seconds - samples[i]!.seconds),
    ])
  writeFileSync(
    SVG,
    lineChartSvg({
      title: `toolbridge on RabbitMQ: ${fmtInt(TOTAL)} requests, ${IN_FLIGHT} in flight`,
      xLabel: 'seconds',
      leftLabel: 'bridge RSS (MiB)',
      rightLabel: 'answers per second',
      series: [
        { name: 'RSS MiB', color: '#c0392b', axis: 'left', points: samples.map((s) => [s.seconds, s.rssMiB]) },
        { name: 'answers/s', color: '#2471a3', axis: 'right', points: throughput },
      ],
    }),
  )
  writeResults(OUT, {
    bench: 'soak: the bridge on RabbitMQ',
    settings: {
      requests: TOTAL,
      inFlight: IN_FLIGHT,
      warmupFraction: WARMUP_FRACTION,
      memoriesFullAfter: MEMORIES_FULL_AFTER,
      invoker: INVOKER,
      invocationsPerWorker: PER_WORKER ?? 'as serverless.yml says',
      bridgeNodeOptions: BRIDGE_NODE_OPTIONS,
    },
    target: {
      rssGrowth: TARGET_RSS_GROWTH,
      lost: 0,
      rssMiB: TARGET_RSS_MIB,
      secondHalfRatio: TARGET_SECOND_HALF_RATIO,
      eventLoopP99Ms: TARGET_EVENT_LOOP_P99_MS,
    },
    checks,
    result: {
      seconds,
      answered,
      lost: lost.length,
      rssAfterWarmupMiB: afterWarmup.rssMiB,
      rssGrowthFromMiB: growthFrom.rssMiB,
      rssGrowthFromAnswered: growthFrom.answered,
      rssEndMiB: end.rssMiB,
      rssGrowth: growth,
      secondHalfRssGrowth: secondHalfGrowth,
      peakRssMiB: peak,
      firstHalfReqPerSec,
      secondHalfReqPerSec,
      secondHalfRatio,
      eventLoopP99Ms: loopP99Ms,
      eventLoopP99MaxMs: loopP99MaxMs,
    },
    machine,
    rows,
    samples,
  })
  console.log(`wrote ${relative(process.cwd(), SVG)}`)
  if (!Object.values(checks).every(Boolean)) process.exitCode = 1
}

await main()

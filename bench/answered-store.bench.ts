/**
 * What the shared answered-once store (--answered-store on Redis) costs per
 * request, against each process's own memory, in the same run.
 *
 *   npm run bench:answered-store
 *
 * Two `toolbridge start` processes on RabbitMQ (in-process invoker,
 * serverless.yml's joke-service, topics of their own): `memory`, the
 * default, and `redis`, the same with --answered-store. Each is driven by the
 * same load client (bench/load-client.ts, a process of its own; a fresh
 * request id per call, so that every request is claimed and its answer kept).
 * In rounds, the order alternating, each is measured for BENCH_SECONDS at
 * each in-flight level: req/s, p50, the bridge process's CPU time per request
 * (/proc/<pid>/stat), Redis's CPU time per request, and the bridge's RSS after
 * the cell. The table gives the median over rounds and the range
 * (lowest–highest) beside it. The store's records of the run are deleted at
 * the end.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 0.5)
 *   BENCH_ROUNDS           rounds (default 5)
 *   BENCH_INFLIGHT         in-flight levels, comma separated (default 1,16)
 *   BENCH_BROKER           broker URL (default amqp://guest:guest@127.0.0.1:5672/)
 *   BENCH_REDIS            the store (default redis://127.0.0.1:6379)
 *   BENCH_OUT              where to write the JSON (default bench/results/answered-store.json, git-ignored)
 */
import { redact } from '../bridge/transports/redact.ts'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Redis } from 'ioredis'
import { defaultQueues } from '../shared/queues.ts'
import { type ChildBridge, startChildBridge } from './child-bridge.ts'
import { processCpuUsOf, rssMiB } from './cpu-and-memory.ts'
import { roundsSettings } from './env-settings.ts'
import { jokeAnswer, loadJokeTool, SERVICE_ID } from './joke-tool.ts'
import { type DrivenService, driveService } from './load-client-process.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { median } from './statistics.ts'
import { fmt } from './tables.ts'

const RUN = roundsSettings('answered-store', { seconds: 3, warmupSeconds: 0.5, rounds: 5, inFlight: '1,16' })
const BROKER = process.env.BENCH_BROKER || 'amqp://guest:guest@127.0.0.1:5672/'
const REDIS = process.env.BENCH_REDIS || 'redis://127.0.0.1:6379'

const SETUPS = ['memory', 'redis'] as const
type Setup = (typeof SETUPS)[number]
const topicOf = (setup: Setup, topic: string) => `ansbench-${setup}-${topic}`

/** serverless.yml with topics of the setup's own, beside it so that handler paths resolve. */
function startBridge(setup: Setup): Promise<ChildBridge> {
  const yml = resolve(ROOT, `.answered-store-bench-${setup}-${process.pid}.serverless.yml`)
  writeFileSync(
    yml,
    readFileSync(resolve(ROOT, 'serverless.yml'), 'utf8').replace(
      /^( +topic: )(\S+)$/gm,
      (_, key: string, topic: string) => key + topicOf(setup, topic),
    ),
  )
  return startChildBridge({
    yml,
    invoker: 'in-process',
    broker: BROKER,
    startArgs: setup === 'redis' ? ['--answered-store', REDIS] : [],
  })
}

/** The redis-server serving the store's port, to read its CPU time. */
function redisPid(): number | undefined {
  const port = new URL(REDIS).port || '6379'
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (cmdline.startsWith('redis-server') && cmdline.includes(`:${port}`)) return Number(entry)
    } catch {
      // gone meanwhile
    }
  }
  return undefined
}

interface Cell {
  setup: Setup
  inFlight: number
  round: number
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  errors: number
  /** CPU time of the bridge process (all its threads) per answered request. */
  bridgeCpuUsPerReq: number
  /** CPU time of redis-server per answered request; NaN when it cannot be read. */
  redisCpuUsPerReq: number
  /** The bridge's resident memory after the cell. */
  rssMiB: number
}

const range = (values: number[], digits: number) =>
  `${fmt(median(values), digits)} (${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)})`

async function main(): Promise<void> {
  const loadBefore = loadAverage()
  const { spec, tool, request } = loadJokeTool()
  const expected = await jokeAnswer()
  const redisServer = redisPid()
  const machine = machineInfo({})
  console.log(describeMachine(machine))
  console.log(`load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min)`)
  console.log(
    `${SERVICE_ID} (tool ${tool.name}), in-process invoker, RabbitMQ ${redact(BROKER)}, store ${REDIS}; ` +
      `${RUN.rounds} rounds of ${RUN.seconds} s (+${RUN.warmupSeconds} s warm-up) per setup and in-flight level`,
  )

  const bridges = new Map<Setup, ChildBridge>()
  const driven = new Map<Setup, DrivenService>()
  const cells: Cell[] = []
  try {
    for (const setup of SETUPS) bridges.set(setup, await startBridge(setup))
    for (const inFlight of RUN.inFlight) {
      for (const setup of SETUPS) {
        const queues = defaultQueues(topicOf(setup, spec.topic!))
        driven.set(
          setup,
          await driveService(
            setup,
            {
              broker: BROKER,
              requestQueue: queues.request,
              responseQueue: queues.response,
              request,
              expected,
              startupInFlight: inFlight,
              startupTimeoutMs: 60_000,
              callTimeoutMs: 5_000,
            },
            async () => {},
          ),
        )
      }
      for (let round = 0; round < RUN.rounds; round++) {
        const order = round % 2 === 0 ? SETUPS : [...SETUPS].reverse()
        for (const setup of order) {
          const pid = bridges.get(setup)!.pid
          const measured = await driven.get(setup)!.client.measure(inFlight, {
            seconds: RUN.seconds,
            warmupSeconds: RUN.warmupSeconds,
            probes: {
              bridge: () => processCpuUsOf(pid),
              redis: () => (redisServer === undefined ? Number.NaN : processCpuUsOf(redisServer)),
            },
          })
          const cell: Cell = {
            setup,
            inFlight,
            round,
            reqPerSec: measured.reqPerSec,
            p50Ms: measured.p50Ms,
            p99Ms: measured.p99Ms,
            errors: measured.errors,
            bridgeCpuUsPerReq: measured.used.bridge / measured.requests,
            redisCpuUsPerReq: measured.used.redis / measured.requests,
            rssMiB: rssMiB(pid),
          }
          cells.push(cell)
          console.log(
            `  ${setup.padEnd(6)} ${String(inFlight).padStart(3)} in flight, round ${round + 1}: ` +
              `${fmt(cell.reqPerSec, 0)} req/s, p50 ${fmt(cell.p50Ms, 2)} ms, bridge ${fmt(cell.bridgeCpuUsPerReq, 0)} us/req, ` +
              `redis ${fmt(cell.redisCpuUsPerReq, 0)} us/req, RSS ${fmt(cell.rssMiB, 1)} MiB`,
          )
        }
      }
      for (const service of driven.values()) await service.stop()
      driven.clear()
    }
  } finally {
    for (const service of driven.values()) await service.stop().catch(() => {})
    for (const bridge of bridges.values()) await bridge.stop().catch(() => {})
    const redis = new Redis(REDIS, { maxRetriesPerRequest: 1 })
    for await (const keys of redis.scanStream({ match: `toolbridge:answered:${SERVICE_ID}:*`, count: 1000 })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]))
    }
    redis.disconnect()
  }

  console.log('')
  console.log('median over rounds (lowest–highest)')
  console.log('setup   in flight  req/s                 p50 ms              bridge us/req     redis us/req   RSS MiB')
  const rows = RUN.inFlight.flatMap((inFlight) =>
    SETUPS.map((setup) => {
      const of = (pick: (c: Cell) => number) =>
        cells.filter((c) => c.setup === setup && c.inFlight === inFlight).map(pick)
      const row = {
        setup,
        inFlight,
        reqPerSec: of((c) => c.reqPerSec),
        p50Ms: of((c) => c.p50Ms),
        bridgeCpuUsPerReq: of((c) => c.bridgeCpuUsPerReq),
        redisCpuUsPerReq: of((c) => c.redisCpuUsPerReq),
        rssMiB: of((c) => c.rssMiB),
      }
      console.log(
        `${setup.padEnd(7)} ${String(inFlight).padStart(9)}  ${range(row.reqPerSec, 0).padEnd(20)}  ${range(row.p50Ms, 2).padEnd(18)}  ` +
          `${range(row.bridgeCpuUsPerReq, 0).padEnd(16)}  ${range(row.redisCpuUsPerReq, 0).padEnd(13)}  ${range(row.rssMiB, 1)}`,
      )
      return row
    }),
  )
  const errors = cells.reduce((n, c) => n + c.errors, 0)
  if (errors > 0) console.log(`WARNING: ${errors} call(s) failed during measurement`)
  const loadAfter = loadAverage()
  console.log(`load average after: ${loadAfter.join(' / ')}`)
  writeResults(RUN.out, {
    bench: 'answered-store',
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
    settings: {
      broker: redact(BROKER),
      store: REDIS,
      rounds: RUN.rounds,
      seconds: RUN.seconds,
      inFlight: RUN.inFlight,
    },
    rows,
    cells,
  })
  console.log(`results: ${RUN.out}`)
}

await runBench(main)

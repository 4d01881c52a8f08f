/**
 * What the size of V8's young generation costs and buys `toolbridge start`
 * on a broker: CPU per request and RSS of the command as users run it, in a
 * process of its own, with each `--max-semi-space-size` given.
 *
 *   npm run bench:young-generation
 *
 * `toolbridge start` starts itself again with a semi-space of 1 MB
 * (bridge/cli/toolbridge.js) to keep its RSS down; a size given to node is
 * kept instead. The broker benches run the bridge inside the bench's own
 * process, with node's default young generation, so they do not show this
 * trade; this bench does.
 *
 * For each in-flight level, one `toolbridge start` per setup (an invoker and
 * a semi-space size), each on topics of its own (serverless.yml's joke-service
 * on `young-<setup>`), all started at once, then measured in rounds with the
 * order rotated, one at a time, by the broker benches' load client in a
 * process of its own (bench/load-client.ts). CPU is the bridge process's,
 * all its threads; RSS is read after each cell.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 0.5)
 *   BENCH_ROUNDS           rounds per in-flight level (default 3)
 *   BENCH_INFLIGHT         in-flight levels, comma separated (default 1,16,64)
 *   BENCH_INVOKERS         invokers, comma separated (default in-process,worker-threads)
 *   BENCH_SEMI_SPACES      semi-space sizes in MB, comma separated (default 1,4,16)
 *   BENCH_BROKER           broker URL (default TOOLBRIDGE_BROKER, else amqp://guest:guest@127.0.0.1:5672/)
 *   BENCH_OUT              JSON path (default bench/results/young-generation.json)
 */
import { redact } from '../bridge/transports/redact.ts'
import { type LoopStats, inRotation, type RoundsStats, roundsStats } from './closed-loop.ts'
import type { InvokerKind } from '../bridge/project/settings.ts'
import { type CommandOnBroker, startCommandOnBroker } from './command-on-broker.ts'
import { processCpuUsOf, rssMiB } from './cpu-and-memory.ts'
import { brokerEnv, inFlightEnv, invokersEnv, LOCAL_RABBITMQ, roundsSettings } from './env-settings.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { writeBenchResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { median } from './statistics.ts'
import { fmt, fmtInt, printTableByInFlight, throughputColumns } from './tables.ts'

const settings = roundsSettings('young-generation', { seconds: 3, warmupSeconds: 0.5, rounds: 3, inFlight: '1,16,64' })
const INVOKERS = invokersEnv('BENCH_INVOKERS', 'in-process,worker-threads')
const SEMI_SPACES = inFlightEnv('BENCH_SEMI_SPACES', '1,4,16')
const BROKER = brokerEnv(LOCAL_RABBITMQ)

interface Setup {
  name: string
  invoker: InvokerKind
  semiSpaceMb: number
}

const SETUPS: Setup[] = INVOKERS.flatMap((invoker) =>
  SEMI_SPACES.map((semiSpaceMb) => ({ name: `${invoker} ${semiSpaceMb} MB`, invoker, semiSpaceMb })),
)
const topicOf = (setup: Setup) => `young-${setup.invoker}-${setup.semiSpaceMb}`

/** One setup's loop in one round: what roundsStats reads, and the bridge's own CPU and RSS. */
type Cell = Pick<LoopStats, 'reqPerSec' | 'p50Ms' | 'p90Ms' | 'p99Ms' | 'meanMs'> & {
  setup: string
  semiSpaceMb: number
  invoker: InvokerKind
  inFlight: number
  round: number
  cpuUsPerReq: number
  rssMiB: number
}

type Row = RoundsStats & { setup: string; inFlight: number; cpuUsPerReq: number; rssMiB: number }

await runBench(async () => {
  const loadBefore = loadAverage()
  const machine = machineInfo({})
  console.log(describeMachine(machine))
  console.log(`broker ${redact(BROKER)}; setups: ${SETUPS.map((s) => s.name).join(', ')}\n`)
  const cells: Cell[] = []
  for (const inFlight of settings.inFlight) {
    const live = new Map<Setup, CommandOnBroker>()
    try {
      for (const setup of SETUPS)
        live.set(
          setup,
          await startCommandOnBroker({
            broker: BROKER,
            invoker: setup.invoker,
            topic: topicOf(setup),
            inFlight,
            nodeArgs: [`--max-semi-space-size=${setup.semiSpaceMb}`],
          }),
        )
      for (let round = 0; round < settings.rounds; round++) {
        const order = inRotation(SETUPS, round)
        const parts: string[] = []
        for (const setup of order) {
          const { bridge, client } = live.get(setup)!
          const m = await client.measure(inFlight, {
            seconds: settings.seconds,
            warmupSeconds: settings.warmupSeconds,
            probes: { bridge: () => processCpuUsOf(bridge.pid) },
          })
          const cell: Cell = {
            setup: setup.name,
            semiSpaceMb: setup.semiSpaceMb,
            invoker: setup.invoker,
            inFlight,
            round,
            reqPerSec: m.reqPerSec,
            p50Ms: m.p50Ms,
            p90Ms: m.p90Ms,
            p99Ms: m.p99Ms,
            meanMs: m.meanMs,
            cpuUsPerReq: m.used.bridge / m.requests,
            rssMiB: rssMiB(bridge.pid),
          }
          cells.push(cell)
          parts.push(
            `${setup.name} ${fmtInt(cell.reqPerSec)}/s ${fmt(cell.cpuUsPerReq, 0)} us ${fmt(cell.rssMiB, 0)} MiB`,
          )
        }
        console.log(
          `in-flight ${String(inFlight).padStart(2)} round ${round + 1}/${settings.rounds}: ${parts.join(' | ')}`,
        )
      }
    } finally {
      for (const command of live.values()) await command.stop()
    }
  }

  const rows: Row[] = settings.inFlight.flatMap((inFlight) =>
    SETUPS.map((setup) => {
      const mine = cells.filter((c) => c.inFlight === inFlight && c.setup === setup.name)
      return {
        setup: setup.name,
        inFlight,
        ...roundsStats(mine),
        cpuUsPerReq: median(mine.map((c) => c.cpuUsPerReq)),
        rssMiB: median(mine.map((c) => c.rssMiB)),
      }
    }),
  )
  console.log(
    "\nmedians over rounds; CPU is the bridge process's (all threads) per request; RSS read after each cell\n",
  )
  printTableByInFlight(
    [
      ...throughputColumns<Row>(24),
      { title: 'CPU us/req', width: 10, cell: (r) => fmt(r.cpuUsPerReq, 0) },
      { title: 'RSS MiB', width: 7, cell: (r) => fmt(r.rssMiB, 0) },
    ],
    rows,
  )
  writeBenchResults(settings.out, 'young-generation', machine, loadBefore, {
    settings: {
      broker: redact(BROKER),
      ...settings,
      invokers: INVOKERS,
      semiSpacesMb: SEMI_SPACES,
    },
    rows,
    cells,
  })
})

/**
 * What the broker benches (rabbitmq, kafka and pulsar .bench.ts) share: the
 * setups started for one in-flight level, measured in rounds, and the rows
 * of the table over the rounds.
 */
import {
  type Column,
  type DrivenService,
  type LoadClient,
  type LoopStats,
  type Probe,
  fmt,
  fmtInt,
  median,
  printHeader,
  printRow,
  processCpuUs,
} from './support.ts'

// ---------------------------------------------------------------- broker benches: rounds, cells and rows

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
export async function measureBrokerRounds<S extends string>(bench: BrokerRounds<S>): Promise<BrokerCell<S>[]> {
  const { setups, rounds } = bench
  const cells: BrokerCell<S>[] = []
  for (const inFlight of bench.inFlight) {
    const live = new Map<S, LiveSetup<S>>()
    try {
      for (const setup of setups) live.set(setup, await bench.start(setup, inFlight))
      for (let round = 0; round < rounds; round++) {
        const order = setups.map((_, i) => setups[(i + round) % setups.length]!)
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
export interface BrokerRowStats {
  rounds: number
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  meanMs: number
  nodeCpuUsPerReq: number
  clientCpuUsPerReq: number
  nodeCpuCores: number
  brokerCpuUsPerReq: number
  errors: number
}

export function brokerRowStats(cells: BrokerCellStats[]): BrokerRowStats {
  const reqs = cells.map((c) => c.reqPerSec)
  const medianOf = (pick: (c: BrokerCellStats) => number) => median(cells.map(pick))
  return {
    rounds: cells.length,
    reqPerSec: median(reqs),
    reqPerSecMin: Math.min(...reqs),
    reqPerSecMax: Math.max(...reqs),
    p50Ms: medianOf((c) => c.p50Ms),
    p90Ms: medianOf((c) => c.p90Ms),
    p99Ms: medianOf((c) => c.p99Ms),
    meanMs: medianOf((c) => c.meanMs),
    nodeCpuUsPerReq: medianOf((c) => c.nodeCpuUsPerReq),
    clientCpuUsPerReq: medianOf((c) => c.clientCpuUsPerReq),
    nodeCpuCores: medianOf((c) => c.nodeCpuCores),
    brokerCpuUsPerReq: medianOf((c) => c.brokerCpuUsPerReq),
    errors: cells.reduce((n, c) => n + c.errors, 0),
  }
}

/** The header and rows, a blank line between in-flight levels. */
export function printTableByInFlight<R extends { inFlight: number }>(columns: Column<R>[], rows: R[]): void {
  printHeader(columns)
  let last: number | undefined
  for (const row of rows) {
    if (last !== undefined && row.inFlight !== last) console.log('')
    last = row.inFlight
    printRow(columns, row)
  }
}

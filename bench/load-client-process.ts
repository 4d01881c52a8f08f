/**
 * A broker bench's side of its load client (bench/load-client.ts, in a
 * process of its own so that the bench process's CPU is the service's
 * alone): what the client is started with, the messages both ways, and the
 * handle that measures a cell through it and stops it.
 */
import { fork } from 'node:child_process'
import { resolve } from 'node:path'
import { stopForkedChild } from './child-processes.ts'
import type { LoopStats, Measured, Probe } from './closed-loop.ts'
import { ROOT } from './project-root.ts'

/** What a load client (bench/load-client.ts) is started with. */
export interface LoadClientSetup {
  broker: string
  requestQueue: string
  responseQueue: string
  request: object
  /** The answer the first call must get. */
  expected: string
  /** Calls at once in the start-up rounds: the level about to be measured, so that every worker thread is up. */
  startupInFlight: number
  startupTimeoutMs: number
  callTimeoutMs: number
  /** Pulsar only: the client on the optional native addon (`--pulsar-client native`). */
  nativePulsar?: boolean
}

export type ToLoadClient =
  | { type: 'measure'; inFlight: number; seconds: number; warmupSeconds: number }
  | { type: 'stop' }

export type FromLoadClient =
  | { type: 'ready' }
  /** Just before or just after a loop (warm-up, then measured). */
  | { type: 'mark' }
  | { type: 'measured'; stats: LoopStats; clientCpuUs: number }

/** A cell measured through a load client: its loop, how far the probes moved over the measured loop, and the client's own CPU. */
export type MeasuredElsewhere<P extends string> = Measured<P> & { clientCpuUs: number }

export interface LoadClient {
  measure<P extends string>(
    inFlight: number,
    options: { seconds: number; warmupSeconds: number; probes: Record<P, Probe> },
  ): Promise<MeasuredElsewhere<P>>
  stop(): Promise<void>
}

/**
 * Starts bench/load-client.ts in a process of its own; resolves once it has
 * its first answer and the service's execution environments are up. Each
 * `measure` takes the probes' readings (this process's clocks) when the
 * client says its measured loop starts and ends.
 */
export async function startLoadClient(setup: LoadClientSetup): Promise<LoadClient> {
  const child = fork(resolve(ROOT, 'bench/load-client.ts'), [JSON.stringify(setup)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the load client exited (${code})`))),
  )
  exited.catch(() => {})
  // Messages in order, each with the readings of the probes of the cell being measured taken as it arrived.
  let probes: Record<string, Probe> = {}
  const inbox: { message: FromLoadClient; readings: Record<string, number> }[] = []
  let wake: (() => void) | undefined
  child.on('message', (message: FromLoadClient) => {
    const readings = Object.fromEntries(Object.entries(probes).map(([name, probe]) => [name, probe()]))
    inbox.push({ message, readings })
    wake?.()
  })
  const next = async () => {
    while (inbox.length === 0) await Promise.race([new Promise<void>((woken) => (wake = woken)), exited])
    return inbox.shift()!
  }
  const first = await next()
  if (first.message.type !== 'ready') throw new Error(`the load client said ${first.message.type} first`)
  return {
    async measure<P extends string>(
      inFlight: number,
      options: { seconds: number; warmupSeconds: number; probes: Record<P, Probe> },
    ): Promise<MeasuredElsewhere<P>> {
      probes = options.probes
      const marks: Record<string, number>[] = []
      const { seconds, warmupSeconds } = options
      child.send({ type: 'measure', inFlight, seconds, warmupSeconds } satisfies ToLoadClient)
      for (;;) {
        const { message, readings } = await next()
        if (message.type === 'mark') marks.push(readings)
        else if (message.type === 'measured') {
          probes = {}
          // The last two marks are the measured loop's (the warm-up's come first).
          const [before, after] = marks.slice(-2)
          const used = Object.fromEntries(
            Object.keys(options.probes).map((name) => [name, after![name]! - before![name]!]),
          ) as Record<P, number>
          return { ...message.stats, used, clientCpuUs: message.clientCpuUs }
        } else throw new Error(`the load client said ${message.type} while measuring`)
      }
    },
    // A client that cannot close its connection (the broker gone) is not waited for long.
    stop: () => stopForkedChild(child, { type: 'stop' } satisfies ToLoadClient, 5_000),
  }
}

/** A setup's service with the load client that drives it; stop() ends both, the client first. */
export interface DrivenService {
  client: LoadClient
  stop(): Promise<void>
}

/**
 * Starts the load client for a service that is already running; if the
 * client cannot start (no answer, a wrong one), the service is stopped too
 * and the error names the setup.
 */
export async function driveService(
  name: string,
  setup: LoadClientSetup,
  stopService: () => Promise<void>,
): Promise<DrivenService> {
  const client = await startLoadClient(setup).catch(async (err: unknown) => {
    await stopService()
    throw new Error(`${name}: ${(err as Error).message}`)
  })
  return {
    client,
    async stop() {
      await client.stop()
      await stopService()
    },
  }
}

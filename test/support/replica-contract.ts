/**
 * Three bridge replicas on one request queue, as one suite run on every
 * broker: `toolbridge start` three times as child processes, a few thousand
 * requests to a function that records each run it completes
 * (test/fixtures/replicas/recorder.mjs), a tenth of them sent twice (a
 * client's retry), and the replica running the one request that holds killed
 * with SIGKILL in the middle of that call, so that the broker hands its
 * request to another replica.
 *
 * With the shared answered-once store (--answered-store on Redis) every
 * request is answered and each ran exactly once. With each replica's own
 * memory, every request is answered too, and the requests that ran twice are
 * counted and printed: that is what the store is for.
 *
 * Each replica takes one request at a time (concurrency 1), so the killed
 * replica is in the middle of the holding call and of nothing else: a replica
 * killed between a function's side effect and the store's record of its
 * answer would run that request again on another, with or without a store
 * (docs/delivery.md says so).
 */
import { randomUUID } from 'node:crypto'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { encodeRequest, ID_PROPERTY } from '../../shared/protocol.ts'
import { REDIS_URL, redisInstalled, startRedis } from './redis.ts'
import { ResponseTap, waitFor } from './response-tap.ts'
import { StartedBridge } from './started-bridge.ts'

export interface ReplicaProfile {
  /** The --broker URL the replicas are started with. */
  broker: string
  /** Fail-safe for the whole run's waits. */
  limitMs: number
  /** Removes what the suite left on the broker. */
  drop?(run: string): Promise<void>
}

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'replicas', 'recorder.mjs')
const REPLICAS = 3
/** Requests sent (a tenth of them twice). */
const REQUESTS = 2000
/** A lease short enough that the killed replica's request is taken over within the test. */
const LEASE_SECONDS = 2

export interface ReplicaRun {
  /** Requests that never ran (lost). */
  lost: number[]
  /** Requests that ran more than once, and how many times. */
  ranTwice: [n: number, runs: number][]
  /** Requests without an answer. */
  unanswered: string[]
}

export function describeReplicas(name: string, profile: ReplicaProfile): void {
  const cleanups: (() => Promise<unknown>)[] = []
  const runs: string[] = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
    for (const run of runs) await profile.drop?.(run)
  })

  async function runReplicas(shared: boolean): Promise<ReplicaRun> {
    const run = `replicas-${shared ? 'store' : 'memory'}-${randomUUID().slice(0, 8)}`
    runs.push(run)
    const dir = mkdtempSync(join(tmpdir(), 'toolbridge-replicas-'))
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
    copyFileSync(FIXTURE, join(dir, 'recorder.mjs'))
    // Persistent queues (`flow:`): nothing may be lost.
    const queues = { request: `flow:tg:${run}-request`, response: `flow:tg:${run}-response` }
    writeFileSync(
      join(dir, 'serverless.yml'),
      [
        'service: replicas',
        'provider: { name: aws, runtime: nodejs24.x, timeout: 120 }',
        'functions:',
        '  recorder:',
        '    handler: recorder.handler',
        '    toolService:',
        `      id: ${run}`,
        `      requestQueue: ${queues.request}`,
        `      responseQueue: ${queues.response}`,
        '      concurrency: 1',
        '      tools: [{ name: record, description: Records each run }]',
        '',
      ].join('\n'),
    )
    const runsFile = join(dir, 'runs.txt')
    writeFileSync(runsFile, '')
    const args = ['-c', join(dir, 'serverless.yml'), 'start', '--broker', profile.broker, '--invoker', 'in-process']
    if (shared) args.push('--answered-store', REDIS_URL, '--answered-store-lease', String(LEASE_SECONDS))
    const env = { REPLICA_RUNS: runsFile, REPLICA_HOLD_MARKER: join(dir, 'held'), TOOLBRIDGE_LOG_LEVEL: 'warn' }
    const replicas = Array.from({ length: REPLICAS }, () => new StartedBridge(args, { env }))
    for (const replica of replicas) cleanups.push(() => replica.stop())
    await Promise.all(replicas.map((r) => r.printed(/^toolbridge: serving on /m)))

    const client = await createTransport(profile.broker)
    await client.connect()
    cleanups.push(() => client.close())
    const tap = await ResponseTap.open(client, queues.response, profile.limitMs)
    const held = Math.floor(REQUESTS / 3)
    const send = (n: number) =>
      client.publish(queues.request, encodeRequest({ arguments: { n, ...(n === held ? { hold: true } : {}) } }), {
        [ID_PROPERTY]: `${run}-${n}`,
      })
    const sending = (async () => {
      for (let n = 0; n < REQUESTS; n++) await send(n)
      // A client's retry of every tenth request: the same id and body again.
      for (let n = 0; n < REQUESTS; n += 10) if (n !== held) await send(n)
    })()

    // The replica running the holding call is killed in the middle of it.
    let victim: StartedBridge | undefined
    await waitFor(
      'the holding call',
      () => {
        const line = /^held \d+ (\d+)$/m.exec(readFileSync(runsFile, 'utf8'))
        victim = line ? replicas.find((r) => r.child.pid === Number(line[1])) : undefined
        return victim !== undefined
      },
      profile.limitMs,
    )
    await victim!.stop('SIGKILL')
    await sending

    const ids = Array.from({ length: REQUESTS }, (_, n) => `${run}-${n}`)
    const unanswered = () => ids.filter((id) => !tap.messages(id).some((m) => m.response.end_of_stream))
    await waitFor('every answer', () => unanswered().length === 0, profile.limitMs).catch(() => {})
    // Copies still on their way run (or not) before the count: wait until the record stops growing.
    let size = -1
    await waitFor(
      'the runs to settle',
      async () => {
        const now = readFileSync(runsFile).byteLength
        const settled = now === size
        size = now
        if (!settled) await new Promise((resolve) => setTimeout(resolve, 1500))
        return settled
      },
      profile.limitMs,
    )
    const counts = new Map<number, number>()
    for (const match of readFileSync(runsFile, 'utf8').matchAll(/^ran (\d+) \d+$/gm)) {
      const n = Number(match[1])
      counts.set(n, (counts.get(n) ?? 0) + 1)
    }
    const lost = Array.from({ length: REQUESTS }, (_, n) => n).filter((n) => !counts.has(n))
    const ranTwice = [...counts].filter(([, c]) => c > 1)
    console.log(
      `${name}, ${shared ? 'shared store (Redis)' : "each replica's own memory"}: ${REQUESTS} requests ` +
        `(+${Math.ceil(REQUESTS / 10) - 1} sent twice), one replica killed mid-call; ` +
        `${lost.length} lost, ${ranTwice.length} ran more than once` +
        (ranTwice.length > 0 ? `: ${ranTwice.map(([n, c]) => `${n}×${c}`).join(' ')}` : ''),
    )
    const left = unanswered()
    if (lost.length > 0 || left.length > 0) {
      // What the replicas said, to tell a broker that stalled from a bridge that dropped a request.
      console.log(`never ran: ${lost.join(' ')}; unanswered: ${left.join(' ')}`)
      for (const [i, replica] of replicas.entries()) console.log(`replica ${i} said:\n${replica.stderr.slice(-3000)}`)
    }
    for (const replica of replicas) await replica.stop('SIGTERM')
    return { lost, ranTwice, unanswered: left }
  }

  describe.skipIf(!redisInstalled())(`${name}: three replicas, one killed mid-call`, () => {
    beforeAll(async () => {
      await startRedis()
    }, 60_000)

    it('with the shared answered-once store, no request is lost and none runs twice', async () => {
      const result = await runReplicas(true)
      expect(result).toStrictEqual({ lost: [], ranTwice: [], unanswered: [] })
    }, 240_000)

    it("with each replica's own memory, none is lost, and the requests that ran twice are counted", async () => {
      const result = await runReplicas(false)
      expect(result.lost).toStrictEqual([])
      expect(result.unanswered).toStrictEqual([])
      // Retries that reached another replica than the first copy ran again there.
      expect(result.ranTwice.length).toBeGreaterThan(0)
    }, 240_000)
  })
}

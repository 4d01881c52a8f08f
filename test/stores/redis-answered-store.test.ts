/**
 * The shared answered-once store on a real Redis: claims across two
 * "replicas" (two stores on the same server), a lease that expires when its
 * replica stops renewing it, replays, records of a newer format, and a store
 * that is unreachable, slow or full.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AnsweredStore, AnsweredStores, Claim, Lease } from '../../bridge/stores/answered-store.ts'
import { createRedisAnsweredStores, RECORD_FORMAT } from '../../bridge/stores/redis-answered-store.ts'
import { type Logger, silentLogger } from '../../bridge/support/logger.ts'
import { ownRedis, REDIS_URL, redisClient, redisInstalled, startRedis } from '../support/redis.ts'

const limits = { maxEntries: 0, ttlMs: 60_000, maxWeight: 0 }
const answer = (text: string) => [Buffer.from(text)]
const now = () => Date.now()

function claimedLease(claim: Claim): Lease {
  if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(claim)}`)
  return claim.lease
}

describe.skipIf(!redisInstalled())('the answered-once store on Redis', () => {
  const opened: AnsweredStores[] = []
  const logged: string[] = []
  const logger: Logger = { ...silentLogger, error: (_fields, message) => void logged.push(message) }
  const service = `svc-${randomUUID().slice(0, 8)}`

  async function replica(leaseMs = 60_000, url = REDIS_URL): Promise<AnsweredStore> {
    const stores = await createRedisAnsweredStores({ url, leaseMs, logger })
    opened.push(stores)
    return stores.forService(service, limits, now)
  }

  beforeAll(async () => {
    await startRedis()
  }, 60_000)
  afterAll(async () => {
    for (const stores of opened) await stores.close()
  })

  it('one replica claims a request; a copy on another waits, then gets the answer kept, bytes as published', async () => {
    const [a, b] = [await replica(), await replica()]
    const lease = claimedLease(await a.claim('k1', undefined))
    let copyDone = false
    const copy = b.claim('k1', undefined).finally(() => {
      copyDone = true
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(copyDone).toBe(false)
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    await lease.complete([everyByte, Buffer.from('end')])
    expect(await copy).toStrictEqual({ kind: 'answered', messages: [everyByte, Buffer.from('end')] })
  })

  it('of many replicas claiming one request at once, exactly one runs it', async () => {
    const replicas = await Promise.all(Array.from({ length: 6 }, () => replica()))
    const claims = replicas.map((r) => r.claim('k-race', undefined))
    const first = await Promise.race(claims.map((c, i) => c.then((claim) => ({ claim, i }))))
    claimedLease(first.claim)
    await claimedLease(first.claim).complete(answer('once'))
    const all = await Promise.all(claims)
    expect(all.filter((c) => c.kind === 'claimed')).toHaveLength(1)
    expect(all.filter((c) => c.kind === 'answered')).toHaveLength(5)
  })

  it('a lease whose replica died (stopped renewing) expires, and a waiting copy then runs it', async () => {
    const stores = await createRedisAnsweredStores({ url: REDIS_URL, leaseMs: 600, logger })
    const dying = stores.forService(service, limits, now)
    claimedLease(await dying.claim('k-dead', undefined))
    await stores.close() // as a replica killed mid-call: nothing renews the lease, nothing ends it
    const survivor = await replica(600)
    const taken = claimedLease(await survivor.claim('k-dead', undefined))
    await taken.complete(answer('after the crash'))
  })

  it('a lease held longer than its length is renewed while its replica lives', async () => {
    const [a, b] = [await replica(300), await replica(300)]
    const lease = claimedLease(await a.claim('k-long', undefined))
    let copyDone = false
    const copy = b.claim('k-long', undefined).finally(() => {
      copyDone = true
    })
    await new Promise((resolve) => setTimeout(resolve, 1200)) // four leases long
    expect(copyDone).toBe(false)
    await lease.complete(answer('long'))
    expect(await copy).toStrictEqual({ kind: 'answered', messages: answer('long') })
  })

  it('a claim released without an answer lets a copy run', async () => {
    const [a, b] = [await replica(), await replica()]
    const lease = claimedLease(await a.claim('k-rel', undefined))
    const copy = b.claim('k-rel', undefined)
    lease.release()
    expect((await copy).kind).toBe('claimed')
  })

  it('a replay runs again and replaces the answer; a copy of the replay, or of the request, gets the new one', async () => {
    const [a, b] = [await replica(), await replica()]
    await claimedLease(await a.claim('k-replay', undefined)).complete(answer('old error'))
    const replay = claimedLease(await b.claim('k-replay', 'dl-1'))
    await replay.complete(answer('fixed'))
    expect(await a.claim('k-replay', 'dl-1')).toStrictEqual({ kind: 'answered', messages: answer('fixed') })
    expect(await a.claim('k-replay', undefined)).toStrictEqual({ kind: 'answered', messages: answer('fixed') })
  })

  it('a record of a newer format, or one that is not JSON, is not guessed at: the claim says why', async () => {
    const store = await replica()
    const client = redisClient()
    try {
      await client.set(`toolbridge:answered:${service}:k-new`, JSON.stringify({ v: RECORD_FORMAT + 1, x: 1 }))
      await client.set(`toolbridge:answered:${service}:k-junk`, 'junk')
    } finally {
      client.disconnect()
    }
    expect(await store.claim('k-new', undefined)).toStrictEqual({
      kind: 'unknown',
      reason: `redis://127.0.0.1:6379: its record there is of format ${RECORD_FORMAT + 1}, written by a newer toolbridge (this one reads format ${RECORD_FORMAT})`,
    })
    expect(await store.claim('k-junk', undefined)).toStrictEqual({
      kind: 'unknown',
      reason: 'redis://127.0.0.1:6379: its record there is not JSON',
    })
  })

  it('an unreachable store: the claim says so at once, with a log line; once the store is up, claims work', async () => {
    const port = 7361
    const store = await replica(60_000, `redis://127.0.0.1:${port}`)
    const claim = await store.claim('k-down', undefined)
    expect(claim).toMatchObject({ kind: 'unknown', reason: expect.stringMatching(/^redis:\/\/127\.0\.0\.1:7361: /) })
    expect(logged.some((line) => line.includes('answered-once store unreachable'))).toBe(true)
    const server = await ownRedis(port)
    try {
      let back: Claim = claim
      for (let i = 0; i < 50 && back.kind === 'unknown'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        back = await store.claim('k-down', undefined)
      }
      expect(back.kind).toBe('claimed')
    } finally {
      await server.stop()
    }
  }, 30_000)

  it('a slow store (5 s a call) and a full one: each claim ends with the reason instead of waiting', async () => {
    const slow = await ownRedis(7362, ['--enable-debug-command', 'yes'])
    const full = await ownRedis(7363, ['--maxmemory-policy', 'noeviction'])
    try {
      const slowStore = await replica(60_000, slow.url)
      const blocker = redisClient(slow.url)
      const sleeping = blocker.call('DEBUG', 'SLEEP', '5')
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await slowStore.claim('k-slow', undefined)).toMatchObject({
        kind: 'unknown',
        reason: expect.stringMatching(/timed out/i),
      })
      await sleeping
      blocker.disconnect()

      const fullStore = await replica(60_000, full.url)
      // Full: using more memory than it may, and evicting nothing to make room.
      const admin = redisClient(full.url)
      await admin.config('SET', 'maxmemory', '1')
      admin.disconnect()
      expect(await fullStore.claim('k-full', undefined)).toMatchObject({
        kind: 'unknown',
        reason: expect.stringMatching(/OOM/),
      })
    } finally {
      await slow.stop()
      await full.stop()
    }
  }, 30_000)
})

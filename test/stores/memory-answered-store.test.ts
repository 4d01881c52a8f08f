import { describe, expect, it } from 'vitest'
import type { Lease } from '../../bridge/stores/answered-store.ts'
import { createMemoryAnsweredStore } from '../../bridge/stores/memory-answered-store.ts'

const limits = { maxEntries: 10, ttlMs: 60_000, maxWeight: 1_000_000 }
const answer = (text: string) => [Buffer.from(text)]

async function claimed(claim: ReturnType<ReturnType<typeof createMemoryAnsweredStore>['claim']>): Promise<Lease> {
  const result = await claim
  if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${result.kind}`)
  return result.lease
}

describe('the answered-once store in memory', () => {
  it('a copy that arrives while the request runs waits, then gets its answer instead of running', async () => {
    const store = createMemoryAnsweredStore(limits)
    const lease = await claimed(store.claim('k', undefined))
    let copyDone = false
    const copy = store.claim('k', undefined).finally(() => {
      copyDone = true
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(copyDone).toBe(false)
    await lease.complete(answer('A'))
    expect(await copy).toStrictEqual({ kind: 'answered', messages: answer('A') })
  })

  it('a claim ended without an answer lets one waiting copy run, and the others wait for that one', async () => {
    const store = createMemoryAnsweredStore(limits)
    const first = await claimed(store.claim('k', undefined))
    const copies = [store.claim('k', undefined), store.claim('k', undefined)]
    first.release()
    const second = await claimed(copies[0]!)
    await second.complete(answer('B'))
    expect(await copies[1]).toStrictEqual({ kind: 'answered', messages: answer('B') })
  })

  it('a replayed request runs again, its answer replaces the old one, and a copy of the replay is answered', async () => {
    const store = createMemoryAnsweredStore(limits)
    await (await claimed(store.claim('k', undefined))).complete(answer('old error'))
    expect(await store.claim('k', undefined)).toStrictEqual({ kind: 'answered', messages: answer('old error') })
    const replay = await claimed(store.claim('k', 'dead-letter-1'))
    await replay.complete(answer('fixed'))
    expect(await store.claim('k', 'dead-letter-1')).toStrictEqual({ kind: 'answered', messages: answer('fixed') })
    expect(await store.claim('k', undefined)).toStrictEqual({ kind: 'answered', messages: answer('fixed') })
    // Replayed again (another dead letter of the same request): runs again.
    expect((await store.claim('k', 'dead-letter-2')).kind).toBe('claimed')
  })

  it('a replay waits for a copy that is running: two runs of one request never overlap', async () => {
    const store = createMemoryAnsweredStore(limits)
    const running = await claimed(store.claim('k', undefined))
    const replay = store.claim('k', 'dead-letter-1')
    await running.complete(answer('first'))
    expect((await replay).kind).toBe('claimed')
  })

  it('ending a claim twice, or completing after a release, keeps nothing and frees nothing else', async () => {
    const store = createMemoryAnsweredStore(limits)
    const lease = await claimed(store.claim('k', undefined))
    lease.release()
    const next = await claimed(store.claim('k', undefined))
    await lease.complete(answer('late'))
    lease.release()
    let copyDone = false
    const copy = store.claim('k', undefined).finally(() => {
      copyDone = true
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(copyDone).toBe(false) // still held by `next`
    await next.complete(answer('N'))
    expect(await copy).toStrictEqual({ kind: 'answered', messages: answer('N') })
  })
})

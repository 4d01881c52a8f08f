import { describe, expect, it } from 'vitest'
import { DEFAULT_MAX_AGE_SECONDS, resolveSettings } from '../../bridge/project/settings.ts'
import { oneService } from '../support/one-service.ts'

describe('delivery settings: flags and environment', () => {
  it("default to TrustGraph's client timeout for maxAge, a memory of 10000 answers for 600 s, no dead-letter queue", () => {
    expect(DEFAULT_MAX_AGE_SECONDS).toBe(600)
    expect(resolveSettings({}, {}).delivery).toStrictEqual({
      maxAgeMs: 600_000,
      answeredMemorySize: 10_000,
      answeredMemoryTtlMs: 600_000,
      deadLetterQueue: undefined,
      answeredStore: undefined,
    })
  })

  it('read flags over the environment', () => {
    const env = {
      TOOLBRIDGE_MAX_AGE: '30',
      TOOLBRIDGE_ANSWERED_MEMORY_SIZE: '5',
      TOOLBRIDGE_ANSWERED_MEMORY_TTL: '7',
      TOOLBRIDGE_DEAD_LETTER_QUEUE: 'flow:tg:dead',
      TOOLBRIDGE_ANSWERED_STORE: 'redis://store:6379',
      TOOLBRIDGE_ANSWERED_STORE_LEASE: '12',
    }
    expect(resolveSettings({}, env).delivery).toStrictEqual({
      maxAgeMs: 30_000,
      answeredMemorySize: 5,
      answeredMemoryTtlMs: 7_000,
      deadLetterQueue: 'flow:tg:dead',
      answeredStore: { url: 'redis://store:6379', leaseMs: 12_000 },
    })
    expect(resolveSettings({ answeredStore: 'rediss://u:p@other:6380/2' }, {}).delivery.answeredStore).toStrictEqual({
      url: 'rediss://u:p@other:6380/2',
      leaseMs: 30_000,
    })
    expect(resolveSettings({ maxAge: '0', deadLetterQueue: 'persistent://tg/x/dead' }, env).delivery).toMatchObject({
      maxAgeMs: 0,
      deadLetterQueue: 'persistent://tg/x/dead',
    })
  })

  it.each([
    [{ maxAge: '-1' }, '--max-age: "-1" must be an integer from 0 to 86400'],
    [{ maxAge: 'soon' }, '--max-age: "soon" must be an integer from 0 to 86400'],
    [{ answeredMemoryTtl: '0' }, '--answered-memory-ttl: "0" must be an integer from 1 to 86400'],
    [{ answeredMemorySize: '1.5' }, '--answered-memory-size: "1.5" must be an integer from 0 to 1000000'],
    [{ deadLetterQueue: 'nonsense' }, '--dead-letter-queue: queue "nonsense" is neither'],
    [{ deadLetterQueue: 'request:tg:dead' }, '--dead-letter-queue: "request:tg:dead" is not persistent'],
    [{ answeredStore: 'memcached://x:11211' }, '--answered-store: "memcached:" is not a store toolbridge speaks'],
    [{ answeredStore: 'redis://:secret@' + '[' }, '--answered-store: "redis://***@[" is not a URL'],
    [
      { answeredStore: 'redis://x:6379', answeredStoreLease: '0' },
      '--answered-store-lease: "0" must be an integer from 1 to 3600',
    ],
    [{ answeredStoreLease: '5' }, '--answered-store-lease: is for a shared store: give --answered-store too'],
  ])('refuse %o', (flags, message) => {
    expect(() => resolveSettings(flags, {})).toThrow(message)
  })
})

describe('delivery settings in serverless.yml', () => {
  it('are read per service, and absent when the block says nothing of them', () => {
    expect(oneService({}).delivery).toBeUndefined()
    expect(
      oneService({
        maxAge: 2.5,
        idempotent: true,
        answeredMemory: { size: 0, ttl: 30 },
        answeredStore: { whenDown: 'refuse' },
        deadLetters: { queue: 'flow:tg:dead', kinds: ['crash', 'expired'] },
      }).delivery,
    ).toStrictEqual({
      maxAgeSeconds: 2.5,
      idempotent: true,
      answeredMemorySize: 0,
      answeredMemoryTtlSeconds: 30,
      answeredStoreWhenDown: 'refuse',
      deadLetterQueue: 'flow:tg:dead',
      deadLetterKinds: ['crash', 'expired'],
    })
  })

  it.each([
    [{ maxAge: -1 }, 'functions.f.toolService.maxAge: must be >= 0'],
    [{ idempotent: 'yes' }, 'functions.f.toolService.idempotent: must be boolean'],
    [{ answeredMemory: { ttl: 0 } }, 'functions.f.toolService.answeredMemory.ttl: must be > 0'],
    [{ answeredMemory: { sise: 3 } }, 'functions.f.toolService.answeredMemory: unknown field "sise"'],
    [{ answeredStore: { whenDown: 'retry' } }, 'functions.f.toolService.answeredStore.whenDown: must be one of'],
    [{ deadLetters: { kinds: ['config'] } }, 'functions.f.toolService.deadLetters.kinds[0]: must be one of'],
    [
      { deadLetters: { queue: 'response:tg:x' } },
      'functions.f.toolService.deadLetters.queue: "response:tg:x" is not persistent',
    ],
  ])('refuse %o, naming the field', (extra, message) => {
    expect(() => oneService(extra)).toThrow(message)
  })
})

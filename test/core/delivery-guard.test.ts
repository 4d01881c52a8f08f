import { describe, expect, it } from 'vitest'
import { DEAD_LETTER_PREFIX } from '../../bridge/core/dead-letters.ts'
import {
  ANSWERED_MEMORY_MAX_BYTES,
  createDeliveryGuard,
  type DeliveryGuard,
  REMEMBERED_ANSWER_MAX_BYTES,
  type Ticket,
} from '../../bridge/core/delivery-guard.ts'
import type { DeliveryDefaults } from '../../bridge/project/settings.ts'
import type { Delivery, Properties } from '../../bridge/transports/transport.ts'
import { oneService } from '../support/one-service.ts'

const DEFAULTS: DeliveryDefaults = {
  maxAgeMs: 10_000,
  answeredMemorySize: 10,
  answeredMemoryTtlMs: 60_000,
  deadLetterQueue: undefined,
}

function delivery(id: string | undefined, body = 'body', timestamp?: number): Delivery {
  const properties: Properties = id === undefined ? {} : { id }
  return { body: Buffer.from(body), properties, redelivered: false, timestamp, ack() {}, nack() {} }
}

/** What the bridge does with a ticket: claims the request, records each message published, then remembers the answer. */
async function keep(ticket: Ticket, messages: Buffer[]) {
  await ticket.claim()
  for (const message of messages) ticket.record(message)
  await ticket.remember()
}

/** The answer a delivery would be answered with again, without running; the claim ended at once. */
async function recalled(guard: DeliveryGuard, request: Delivery) {
  const ticket = guard.ticket(request)
  const { remembered } = await ticket.claim()
  ticket.release()
  return remembered
}

function setup(extra: Record<string, unknown> = {}, defaults: Partial<DeliveryDefaults> = {}) {
  let now = 1_800_000_000_000
  const published: { queue: string; properties: Properties }[] = []
  const guard = createDeliveryGuard(
    oneService(extra),
    { ...DEFAULTS, ...defaults },
    async (queue, _body, properties) => void published.push({ queue, properties }),
    undefined,
    () => now,
  )
  return { guard, published, at: () => now, advance: (ms: number) => void (now += ms) }
}

describe('the delivery guard', () => {
  it("expires by the broker's timestamp, with the bridge's default maxAge", () => {
    const { guard, at } = setup()
    expect(guard.ticket(delivery('a', 'x', at() - 10_000)).expired).toBeUndefined()
    expect(guard.ticket(delivery('b', 'x', at() - 10_001)).expired?.kind).toBe('expired')
  })

  it("a service's own maxAge wins, in seconds; 0 lets any age through", () => {
    const own = setup({ maxAge: 30 }, { maxAgeMs: 1_000 })
    expect(own.guard.ticket(delivery('a', 'x', own.at() - 30_000)).expired).toBeUndefined()
    expect(own.guard.ticket(delivery('b', 'x', own.at() - 30_001)).expired).toBeDefined()
    const { guard, at } = setup({ maxAge: 0 })
    expect(guard.ticket(delivery('a', 'x', at() - 10 ** 9)).expired).toBeUndefined()
  })

  it('a timestamp in the future is not believed: the age counts from the first sighting, across redeliveries', () => {
    const { guard, at, advance } = setup()
    const future = at() + 3_600_000
    const first = guard.ticket(delivery('a', 'x', future))
    expect(first.expired).toBeUndefined()
    expect(first.distrusted).toMatch(/is 3600 s in the future$/)
    advance(10_001)
    expect(guard.ticket(delivery('a', 'x', future)).expired?.message).toMatch(/since the bridge first saw it/)
  })

  it("says how long a request waited since the broker's timestamp, and nothing when that is missing or not believed", () => {
    const { guard, at } = setup()
    expect(guard.ticket(delivery('a', 'x', at() - 1234)).queuedMs).toBe(1234)
    // A little ahead of the bridge's clock (another host's): it has not waited.
    expect(guard.ticket(delivery('b', 'x', at() + 500)).queuedMs).toBe(0)
    expect(guard.ticket(delivery('c', 'x')).queuedMs).toBeUndefined()
    expect(guard.ticket(delivery('d', 'x', at() + 3_600_000)).queuedMs).toBeUndefined()
  })

  it('without a broker timestamp, a request with no id counts from now (it cannot be recognised again)', () => {
    const { guard, advance } = setup()
    guard.ticket(delivery(undefined))
    advance(20_000)
    expect(guard.ticket(delivery(undefined)).expired).toBeUndefined()
  })

  it('remembers an answer for the same id and body only, for the TTL', async () => {
    const { guard, advance } = setup({ answeredMemory: { ttl: 5 } })
    const answer = [Buffer.from('one'), Buffer.from('two')]
    await keep(guard.ticket(delivery('a', 'x')), answer)
    expect(await recalled(guard, delivery('a', 'x'))).toStrictEqual(answer)
    expect(await recalled(guard, delivery('a', 'y'))).toBeUndefined()
    expect(await recalled(guard, delivery('b', 'x'))).toBeUndefined()
    advance(4_999)
    expect(await recalled(guard, delivery('a', 'x'))).toStrictEqual(answer)
    advance(1)
    expect(await recalled(guard, delivery('a', 'x'))).toBeUndefined()
  })

  it('remembers answers up to 64 MiB per service: a streamed answer of a few hundred kilobytes is kept', async () => {
    expect(ANSWERED_MEMORY_MAX_BYTES).toBe(64 * 1024 * 1024)
    const { guard } = setup()
    const answer = Array.from({ length: 10 }, () => Buffer.alloc(50_000, 'x'))
    await keep(guard.ticket(delivery('big')), answer)
    expect(await recalled(guard, delivery('big'))).toStrictEqual(answer)
  })

  it('keeps no answer larger than 4 MiB: a stream held whole while it lasts could be endless', async () => {
    expect(REMEMBERED_ANSWER_MAX_BYTES).toBe(4 * 1024 * 1024)
    const { guard } = setup()
    const fits = [Buffer.alloc(REMEMBERED_ANSWER_MAX_BYTES - 1), Buffer.alloc(1)]
    await keep(guard.ticket(delivery('fits')), fits)
    expect(await recalled(guard, delivery('fits'))).toStrictEqual(fits)
    await keep(guard.ticket(delivery('over')), [...fits, Buffer.alloc(1)])
    expect(await recalled(guard, delivery('over'))).toBeUndefined()
  })

  it("holds the bridge's default number of answers when the service sets none", async () => {
    const { guard } = setup({}, { answeredMemorySize: 1 })
    await keep(guard.ticket(delivery('a')), [Buffer.from('A')])
    await keep(guard.ticket(delivery('b')), [Buffer.from('B')])
    expect(await recalled(guard, delivery('a'))).toBeUndefined()
    expect(await recalled(guard, delivery('b'))).toStrictEqual([Buffer.from('B')])
  })

  it('an idempotent service, or a memory of size 0, remembers nothing', async () => {
    for (const extra of [{ idempotent: true }, { answeredMemory: { size: 0 } }]) {
      const { guard } = setup(extra)
      await keep(guard.ticket(delivery('a')), [Buffer.from('x')])
      expect(await recalled(guard, delivery('a'))).toBeUndefined()
    }
  })

  it('without a dead-letter queue writes nothing and says so', async () => {
    const { guard, published } = setup()
    expect(await guard.ticket(delivery('a')).deadLetter({ kind: 'crash', message: 'm' })).toBe(false)
    expect(published).toStrictEqual([])
  })

  it('writes a dead letter to the service queue (over the default), counting the attempts it saw', async () => {
    const { guard, published } = setup(
      { deadLetters: { queue: 'flow:tg:mine' } },
      { deadLetterQueue: 'flow:tg:default' },
    )
    guard.ticket(delivery('a'))
    const ticket = guard.ticket(delivery('a'))
    expect(guard.deadLetterQueue).toBe('flow:tg:mine')
    expect(await ticket.deadLetter({ kind: 'crash', message: 'm' })).toBe(true)
    expect(published).toHaveLength(1)
    expect(published[0]!.queue).toBe('flow:tg:mine')
    expect(published[0]!.properties).toMatchObject({
      id: 'a',
      [`${DEAD_LETTER_PREFIX}attempts`]: '2',
      [`${DEAD_LETTER_PREFIX}service`]: 'svc',
      [`${DEAD_LETTER_PREFIX}queue`]: 'request:tg:svc',
      [`${DEAD_LETTER_PREFIX}kind`]: 'crash',
    })
  })

  it('keeps copies of the error kinds the service chose, and only those', () => {
    const { guard } = setup({ deadLetters: { queue: 'flow:tg:d', kinds: ['timeout', 'crash'] } })
    const ticket = guard.ticket(delivery('a'))
    expect([ticket.keeps('timeout'), ticket.keeps('crash'), ticket.keeps('function-error')]).toStrictEqual([
      true,
      true,
      false,
    ])
  })

  it('a dead letter that cannot be written rejects (the bridge then hands the request back)', async () => {
    const guard = createDeliveryGuard(oneService(), { ...DEFAULTS, deadLetterQueue: 'flow:tg:d' }, () =>
      Promise.reject(new Error('broker down')),
    )
    await expect(guard.ticket(delivery('a')).deadLetter({ kind: 'crash', message: 'm' })).rejects.toThrow('broker down')
  })
})

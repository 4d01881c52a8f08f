import { describe, expect, it } from 'vitest'
import { createAnsweredOnce, requestKey } from '../../bridge/stores/answered-once.ts'
import { BoundedMemory } from '../../bridge/support/bounded-memory.ts'

const bytes = (text: string) => Buffer.from(text)

describe('BoundedMemory', () => {
  it('holds a value until its TTL, then forgets it', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 10, ttlMs: 100, maxWeight: 1000 })
    memory.set('a', 'A', 0)
    expect(memory.get('a', 99)).toBe('A')
    expect(memory.get('a', 100)).toBeUndefined()
    expect(memory.size).toBe(0)
  })

  it('keeps at most maxEntries, forgetting the oldest first', () => {
    const memory = new BoundedMemory<number>({ maxEntries: 2, ttlMs: 1000, maxWeight: 1000 })
    memory.set('a', 1, 0)
    memory.set('b', 2, 1)
    memory.set('c', 3, 2)
    expect([memory.get('a', 3), memory.get('b', 3), memory.get('c', 3)]).toStrictEqual([undefined, 2, 3])
    expect(memory.size).toBe(2)
  })

  it('keeps the total weight under maxWeight, and refuses an entry heavier than that alone', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 10, ttlMs: 1000, maxWeight: 10 })
    memory.set('a', 'A', 0, 6)
    memory.set('b', 'B', 0, 4)
    expect(memory.totalWeight).toBe(10)
    memory.set('c', 'C', 0, 5) // over: the oldest goes
    expect(memory.get('a', 0)).toBeUndefined()
    expect(memory.totalWeight).toBe(9)
    expect(memory.set('d', 'D', 0, 11)).toBe(false)
    expect(memory.get('d', 0)).toBeUndefined()
    expect(memory.totalWeight).toBe(9)
  })

  it('replacing a key counts its weight once and renews its TTL', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 10, ttlMs: 100, maxWeight: 100 })
    memory.set('a', 'old', 0, 5)
    expect(memory.set('a', 'new', 50, 7)).toBe(true)
    expect(memory.totalWeight).toBe(7)
    expect(memory.size).toBe(1)
    expect(memory.get('a', 120)).toBe('new')
  })

  it('drops expired entries when a new one comes, even under every bound', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 10, ttlMs: 100, maxWeight: 100 })
    memory.set('a', 'A', 0, 1)
    memory.set('b', 'B', 150, 1)
    expect(memory.size).toBe(1)
    expect(memory.totalWeight).toBe(1)
  })

  it('with maxEntries 1 keeps one', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 1, ttlMs: 100, maxWeight: 100 })
    expect(memory.set('a', 'A', 0)).toBe(true)
    expect(memory.get('a', 0)).toBe('A')
  })

  it('an entry whose TTL ends at the moment another comes is gone', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 10, ttlMs: 100, maxWeight: 100 })
    memory.set('a', 'A', 0)
    memory.set('b', 'B', 100)
    expect(memory.size).toBe(1)
  })

  it('with maxEntries 0 keeps nothing', () => {
    const memory = new BoundedMemory<string>({ maxEntries: 0, ttlMs: 100, maxWeight: 100 })
    expect(memory.set('a', 'A', 0)).toBe(false)
    expect(memory.get('a', 0)).toBeUndefined()
  })
})

describe('the answered-once memory', () => {
  const limits = { maxEntries: 10, ttlMs: 1000, maxWeight: 10_000 }

  it('knows a request by its id and body: the same id with another body is another request', () => {
    const key = requestKey('r1', bytes('{"arguments":"{}"}'))!
    expect(requestKey('r1', bytes('{"arguments":"{}"}'))).toBe(key)
    expect(requestKey('r1', bytes('{"arguments":"{\\"n\\":1}"}'))).not.toBe(key)
    expect(requestKey('r2', bytes('{"arguments":"{}"}'))).not.toBe(key)
    expect(key).toMatch(/^[A-Za-z0-9+/]{43}=$/) // a SHA-256, whatever the id's length
  })

  it('an id cannot be confused with another id and body that join to the same text', () => {
    expect(requestKey('a', bytes('b'))).not.toBe(requestKey('ab', bytes('')))
    expect(requestKey('a', bytes('b\u0000'))).not.toBe(requestKey('ab', bytes(''))) // the same UTF-16 bytes without the length
  })

  it('tells apart ids that UTF-8 would encode alike (lone surrogates)', () => {
    expect(requestKey('\uD800', bytes('x'))).not.toBe(requestKey('\uD801', bytes('x')))
  })

  it('never remembers a request without an id', () => {
    expect(requestKey(undefined, bytes('x'))).toBeUndefined()
    expect(requestKey('', bytes('x'))).toBeUndefined()
  })

  it('gives back every message of the answer, in order, until the TTL', () => {
    const answered = createAnsweredOnce(limits)
    const key = requestKey('r1', bytes('body'))!
    const messages = [bytes('one'), bytes('two'), bytes('end')]
    answered.remember(key, { messages, replay: undefined }, 0)
    expect(answered.recall(key, 999)?.messages).toStrictEqual(messages)
    expect(answered.recall(key, 1000)).toBeUndefined()
  })

  it('gives back exactly the bytes published, whatever they are, and none of the buffer they were cut from', () => {
    const answered = createAnsweredOnce(limits)
    const key = requestKey('r2', bytes('body'))!
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    const slab = Buffer.alloc(8192, 1)
    const view = slab.subarray(100, 103).fill(0xff) // not UTF-8
    answered.remember(key, { messages: [everyByte, view], replay: undefined }, 0)
    slab.fill(2)
    const recalled = answered.recall(key, 0)!.messages
    expect(recalled).toStrictEqual([everyByte, Buffer.from([0xff, 0xff, 0xff])])
    expect(recalled[1]!.buffer).not.toBe(slab.buffer)
  })

  it('weighs an answer by its bytes: answers over the byte bound are not kept', () => {
    const answered = createAnsweredOnce({ ...limits, maxWeight: 100 }) // the key (46 bytes here) counts too
    const key = requestKey('r', bytes('b'))!
    answered.remember(key, { messages: [bytes('x'.repeat(100))], replay: undefined }, 0)
    expect(answered.recall(key, 0)).toBeUndefined()
    answered.remember(key, { messages: [bytes('small')], replay: undefined }, 0)
    expect(answered.recall(key, 0)?.messages).toStrictEqual([bytes('small')])
  })
})

/**
 * The events 2025-era sessions keep for resumption (bridge/http/mcp-replay.ts): replayed after
 * the id a client names, on that stream only, to that session only; bounded by count, bytes and
 * age across all sessions, the oldest dropped first.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server'
import { describe, expect, it } from 'vitest'
import { ReplayLog } from '../../bridge/http/mcp-replay.ts'

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { n } })
const LIMITS = { maxEvents: 100, maxBytes: 1_000_000, windowMs: 60_000 }

async function replay(log: ReplayLog, session: string, after: string) {
  const sent: [string, JSONRPCMessage][] = []
  const stream = await log
    .storeFor(session)
    .replayEventsAfter(after, { send: async (id, m) => void sent.push([id, m]) })
  return { stream, sent: sent.map(([, m]) => m) }
}

describe('ReplayLog', () => {
  it("replays what came after the named event on its stream only, the priming event's {} left out", async () => {
    const log = new ReplayLog(LIMITS)
    const store = log.storeFor('a')
    const priming = await store.storeEvent('s1', {} as JSONRPCMessage)
    await store.storeEvent('s1', note(1))
    await store.storeEvent('s2', note(99))
    await store.storeEvent('s1', note(2))
    expect(await replay(log, 'a', priming)).toEqual({ stream: 's1', sent: [note(1), note(2)] })
    expect(await store.getStreamIdForEventId!(priming)).toBe('s1')
  })

  it("knows nothing of another session's events", async () => {
    const log = new ReplayLog(LIMITS)
    const theirs = await log.storeFor('b').storeEvent('s1', note(1))
    expect(await log.storeFor('a').getStreamIdForEventId!(theirs)).toBeUndefined()
    await expect(replay(log, 'a', theirs)).rejects.toThrow(/not one this session can replay/)
  })

  it('keeps at most maxEvents and maxBytes across sessions, the oldest dropped first', async () => {
    const log = new ReplayLog({ ...LIMITS, maxEvents: 3 })
    const ids = []
    for (let i = 0; i < 5; i++) ids.push(await log.storeFor(i % 2 ? 'a' : 'b').storeEvent('s', note(i)))
    expect(log.size).toBe(3)
    expect(await log.storeFor('b').getStreamIdForEventId!(ids[0]!)).toBeUndefined()
    expect(await log.storeFor('b').getStreamIdForEventId!(ids[4]!)).toBe('s')
    const small = new ReplayLog({ ...LIMITS, maxBytes: 2 * JSON.stringify(note(10)).length })
    for (let i = 1; i <= 10; i++) await small.storeFor('a').storeEvent('s', note(i))
    expect(small.size).toBe(2)
  })

  it('drops events older than the replay window', async () => {
    let now = 0
    const log = new ReplayLog({ ...LIMITS, windowMs: 1000 }, () => now)
    const old = await log.storeFor('a').storeEvent('s', note(1))
    now = 2000
    expect(await log.storeFor('a').getStreamIdForEventId!(old)).toBeUndefined()
    expect(log.size).toBe(0)
  })

  it("forgets an ended session's events", async () => {
    const log = new ReplayLog(LIMITS)
    await log.storeFor('a').storeEvent('s', note(1))
    const kept = await log.storeFor('b').storeEvent('s', note(2))
    log.forget('a')
    expect(log.size).toBe(1)
    expect(await log.storeFor('b').getStreamIdForEventId!(kept)).toBe('s')
  })
})

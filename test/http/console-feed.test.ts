/** The console's request log and per-tool minutes: what the live log and the charts show. */
import { describe, expect, it } from 'vitest'
import { ConsoleFeed, LOG_CAPACITY } from '../../bridge/http/console/console-feed.ts'
import { matches, RequestLog, type LoggedRequest } from '../../bridge/http/console/request-log.ts'
import { percentile, ToolStats } from '../../bridge/http/console/tool-stats.ts'
import type { AnsweredRequest } from '../../bridge/core/bridge.ts'

const entry = (tool: string, outcome = 'ok', ms = 1) => ({
  at: 0,
  service: 's',
  tool,
  id: 'i',
  outcome,
  ms,
  queueMs: undefined,
  invokeMs: undefined,
  bytes: 0,
})

describe('RequestLog', () => {
  it('numbers requests from 1 and keeps the last `capacity`, oldest first', () => {
    const log = new RequestLog(3)
    for (const tool of ['a', 'b', 'c', 'd']) log.add(entry(tool))
    expect(log.entries().map((e) => [e.seq, e.tool])).toEqual([
      [2, 'b'],
      [3, 'c'],
      [4, 'd'],
    ])
  })

  it('gives a reconnecting client only what came after the last it saw', () => {
    const log = new RequestLog(10)
    for (const tool of ['a', 'b', 'c']) log.add(entry(tool))
    expect(log.entries({}, 2).map((e) => e.tool)).toEqual(['c'])
    expect(log.entries({}, 3)).toEqual([])
  })

  it('tells each subscriber of each new request until it stops', () => {
    const log = new RequestLog(10)
    const seen: number[] = []
    const stop = log.subscribe((e) => seen.push(e.seq))
    log.add(entry('a'))
    stop()
    log.add(entry('b'))
    expect(seen).toEqual([1])
  })

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new RequestLog(0)).toThrow(RangeError)
    expect(() => new RequestLog(1.5)).toThrow('capacity must be a positive integer')
    expect(new RequestLog(1).capacity).toBe(1)
  })

  it('filters by tool and by outcome: ok, any error, or one error type', () => {
    const e = (tool: string, outcome: string) => ({ ...entry(tool, outcome), seq: 1 }) as LoggedRequest
    expect(matches(e('a', 'ok'), {})).toBe(true)
    expect(matches(e('a', 'ok'), { tool: 'a' })).toBe(true)
    expect(matches(e('a', 'ok'), { tool: 'b' })).toBe(false)
    expect(matches(e('a', 'ok'), { outcome: 'error' })).toBe(false)
    expect(matches(e('a', 'timeout'), { outcome: 'error' })).toBe(true)
    expect(matches(e('a', 'timeout'), { outcome: 'timeout' })).toBe(true)
    expect(matches(e('a', 'timeout'), { outcome: 'ok' })).toBe(false)
    expect(matches(e('a', 'ok'), { tool: '', outcome: '' })).toBe(true)
    const log = new RequestLog(10)
    log.add(entry('a', 'ok'))
    log.add(entry('b', 'timeout'))
    expect(log.entries({ outcome: 'error' }).map((x) => x.tool)).toEqual(['b'])
  })
})

describe('percentile', () => {
  it('is the nearest-rank value', () => {
    expect(percentile([], 0.5)).toBeUndefined()
    expect(percentile([7], 0.99)).toBe(7)
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2)
    expect(percentile([1, 2, 3, 4, 5], 0.5)).toBe(3)
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(percentile(hundred, 0.99)).toBe(99)
    expect(percentile(hundred, 1)).toBe(100)
    expect(percentile(hundred, 0)).toBe(1)
  })
})

describe('ToolStats', () => {
  const MIN = 60_000
  const t0 = 100 * MIN

  it('counts requests and errors per tool and minute, with p50 and p99, every minute of the window listed', () => {
    const stats = new ToolStats({ minutes: 3, samplesPerMinute: 100 })
    stats.observe('a', true, 10, t0 + 1)
    stats.observe('a', false, 30, t0 + 2)
    stats.observe('a', true, 20, t0 + MIN * 2 + 5)
    stats.observe('b', true, 5, t0 + MIN * 2 + 6)
    const series = stats.series(t0 + MIN * 2 + 59_999)
    expect(series.a).toEqual([
      { minute: t0, requests: 2, errors: 1, p50: 10, p99: 30 },
      { minute: t0 + MIN, requests: 0, errors: 0, p50: undefined, p99: undefined },
      { minute: t0 + MIN * 2, requests: 1, errors: 0, p50: 20, p99: 20 },
    ])
    expect(series.b?.map((m) => m.requests)).toEqual([0, 0, 1])
  })

  it('forgets minutes older than the window', () => {
    const stats = new ToolStats({ minutes: 2, samplesPerMinute: 10 })
    stats.observe('a', true, 1, t0)
    stats.observe('a', true, 1, t0 + MIN)
    stats.observe('a', true, 1, t0 + MIN * 2)
    expect(stats.series(t0 + MIN * 2).a?.map((m) => [m.minute, m.requests])).toEqual([
      [t0 + MIN, 1],
      [t0 + MIN * 2, 1],
    ])
    expect(stats.series(t0 + MIN * 5).a?.map((m) => m.requests)).toEqual([0, 0])
  })

  it('keeps at most samplesPerMinute latencies a minute, later ones replacing earlier', () => {
    const stats = new ToolStats({ minutes: 1, samplesPerMinute: 2 })
    for (const ms of [1, 2, 100, 200]) stats.observe('a', true, ms, t0)
    const [minute] = stats.series(t0).a!
    expect(minute?.requests).toBe(4)
    // 100 replaced the sample at 3 % 2 = 1 (the 2), 200 the one at 4 % 2 = 0 (the 1).
    expect([minute?.p50, minute?.p99]).toEqual([100, 200])
    const one = new ToolStats({ minutes: 1, samplesPerMinute: 1 })
    one.observe('a', true, 5, t0)
    one.observe('a', true, 7, t0)
    expect(one.series(t0).a?.[0]?.p50).toBe(7)
  })
})

describe('ConsoleFeed', () => {
  it('logs each request the bridge answered with its id, timing and size, and counts it in the charts', () => {
    const feed = new ConsoleFeed()
    const answered = (request: Partial<AnsweredRequest>) =>
      // Passed as the bridge passes it: a function on its own.
      (0, feed.answered)({
        service: 'svc',
        tool: 't',
        id: 'a.0.1',
        errorKind: undefined,
        queueMs: 1,
        invokeMs: 2,
        totalMs: 3,
        answerBytes: 40,
        ...request,
      })
    const before = Date.now()
    answered({})
    answered({ id: 'a.0.2', errorKind: 'crash', queueMs: undefined, totalMs: 500, answerBytes: 90 })
    answered({ id: 'a.0.3', tool: 'u', errorKind: 'invalid-arguments', invokeMs: undefined, totalMs: 0.5 })
    const logged = feed.log.entries()
    expect(logged.map(({ at: _, ...rest }) => rest)).toEqual([
      { seq: 1, service: 'svc', tool: 't', id: 'a.0.1', outcome: 'ok', ms: 3, queueMs: 1, invokeMs: 2, bytes: 40 },
      // As callers see it on the wire.
      {
        seq: 2,
        service: 'svc',
        tool: 't',
        id: 'a.0.2',
        outcome: 'tool-service-error',
        ms: 500,
        queueMs: undefined,
        invokeMs: 2,
        bytes: 90,
      },
      {
        seq: 3,
        service: 'svc',
        tool: 'u',
        id: 'a.0.3',
        outcome: 'invalid-arguments',
        ms: 0.5,
        queueMs: 1,
        invokeMs: undefined,
        bytes: 40,
      },
    ])
    for (const { at } of logged) expect(at).toBeGreaterThanOrEqual(before)
    const series = feed.stats.series(Date.now())
    const minute = series.t!.at(-1)!
    expect([minute.requests, minute.errors, minute.p50, minute.p99]).toEqual([2, 1, 3, 500])
    expect(series.u!.at(-1)!.errors).toBe(1)
    expect(feed.log.capacity).toBe(LOG_CAPACITY)
  })

  it('keeps the code status and tells listeners of each change', () => {
    const feed = new ConsoleFeed()
    expect(feed.status).toBeUndefined()
    const seen: string[] = []
    const stop = feed.onStatus((s) => seen.push(s.state))
    feed.setStatus({ state: 'broken', at: 1, message: 'x' })
    stop()
    feed.setStatus({ state: 'ok', at: 2, message: 'y' })
    expect(seen).toEqual(['broken'])
    expect(feed.status?.message).toBe('y')
  })
})

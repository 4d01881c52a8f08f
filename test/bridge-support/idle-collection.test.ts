/**
 * The idle collection (bridge/support/idle-collection.ts): the heap collected
 * in full once a quiet period follows growth, never while requests arrive,
 * and --release-memory-after as the setting that turns it on.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { resolveSettings } from '../../bridge/project/settings.ts'
import type { Logger } from '../../bridge/support/logger.ts'
import { startIdleCollection } from '../../bridge/support/idle-collection.ts'

const MiB = 2 ** 20
const PERIOD = 10_000

/** A process whose requests, heap and collections the test sets. */
function fakeProcess(options: { heap?: number; collect?: () => void } = {}) {
  const state = { taken: 0, heap: options.heap ?? 20 * MiB, collections: 0 }
  const logged: { level: string; fields: object; message: string }[] = []
  const log =
    (level: string) =>
    (fields: object, message: string): void => {
      logged.push({ level, fields, message })
    }
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }
  const stop = startIdleCollection({
    periodMs: PERIOD,
    taken: () => state.taken,
    heapBytes: () => state.heap,
    collect:
      options.collect ??
      (() => {
        state.collections++
        state.heap = 25 * MiB // what a full collection leaves
      }),
    logger,
  })
  return { state, logged, stop }
}

describe('idle collection', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('collects once when a whole period passes without a request after the heap grew, and not again while quiet', () => {
    const { state, logged, stop } = fakeProcess()
    state.taken = 500
    state.heap = 60 * MiB
    vi.advanceTimersByTime(PERIOD) // requests were taken during this period
    expect(state.collections).toBe(0)
    vi.advanceTimersByTime(PERIOD) // none during this one
    expect(state.collections).toBe(1)
    vi.advanceTimersByTime(20 * PERIOD)
    expect(state.collections).toBe(1)
    expect(logged).toStrictEqual([
      {
        level: 'debug',
        fields: { heapMiBBefore: 60, heapMiBAfter: 25, ms: 0 }, // the fake clock stands still during the collection
        message: 'idle: heap collected in full and its free pages given back',
      },
    ])
    stop()
  })

  it('never collects while every period takes a request, however large the heap', () => {
    const { state, stop } = fakeProcess()
    state.heap = 500 * MiB
    for (let period = 0; period < 50; period++) {
      state.taken++
      vi.advanceTimersByTime(PERIOD)
    }
    expect(state.collections).toBe(0)
    state.taken++ // the last request, then quiet
    vi.advanceTimersByTime(2 * PERIOD)
    expect(state.collections).toBe(1)
    stop()
  })

  it('does not collect for growth under 16 MiB; does once it reaches 16 MiB, counted from the last collection', () => {
    const { state, stop } = fakeProcess()
    state.heap = 20 * MiB + 16 * MiB - 1
    vi.advanceTimersByTime(5 * PERIOD)
    expect(state.collections).toBe(0)
    state.heap = 20 * MiB + 16 * MiB
    vi.advanceTimersByTime(PERIOD)
    expect(state.collections).toBe(1) // the heap is now 25 MiB
    state.taken++
    state.heap = 25 * MiB + 16 * MiB - 1
    vi.advanceTimersByTime(5 * PERIOD)
    expect(state.collections).toBe(1)
    state.heap = 25 * MiB + 16 * MiB
    vi.advanceTimersByTime(PERIOD)
    expect(state.collections).toBe(2)
    stop()
  })

  it('looks once a period, not sooner', () => {
    const { state, stop } = fakeProcess()
    state.heap = 60 * MiB
    vi.advanceTimersByTime(PERIOD - 1)
    expect(state.collections).toBe(0)
    vi.advanceTimersByTime(1)
    expect(state.collections).toBe(1)
    stop()
  })

  it('stops looking when stopped', () => {
    const { state, stop } = fakeProcess()
    stop()
    state.heap = 60 * MiB
    vi.advanceTimersByTime(10 * PERIOD)
    expect(state.collections).toBe(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('logs a collection that throws once, as a warning, and does not try again', () => {
    let tries = 0
    const { state, logged } = fakeProcess({
      collect: () => {
        tries++
        throw new Error('no gc here')
      },
    })
    state.heap = 60 * MiB
    vi.advanceTimersByTime(10 * PERIOD)
    expect(tries).toBe(1)
    expect(logged).toStrictEqual([
      { level: 'warn', fields: { err: 'no gc here' }, message: 'idle collection failed; not tried again' },
    ])
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe('--release-memory-after', () => {
  it('defaults to 10 seconds; a flag or TOOLBRIDGE_RELEASE_MEMORY_AFTER sets it, 0 turns it off', () => {
    expect(resolveSettings({}, {}).releaseMemoryAfterMs).toBe(10_000)
    expect(resolveSettings({ releaseMemoryAfter: '30' }, {}).releaseMemoryAfterMs).toBe(30_000)
    expect(resolveSettings({}, { TOOLBRIDGE_RELEASE_MEMORY_AFTER: '0' }).releaseMemoryAfterMs).toBe(0)
    expect(
      resolveSettings({ releaseMemoryAfter: '5' }, { TOOLBRIDGE_RELEASE_MEMORY_AFTER: '60' }).releaseMemoryAfterMs,
    ).toBe(5_000)
  })

  it('refuses what is not a whole number of seconds in range', () => {
    expect(() => resolveSettings({ releaseMemoryAfter: '2.5' }, {})).toThrow(
      '--release-memory-after: "2.5" must be an integer from 0 to 86400',
    )
    expect(() => resolveSettings({}, { TOOLBRIDGE_RELEASE_MEMORY_AFTER: '-1' })).toThrow(
      '--release-memory-after: "-1" must be an integer from 0 to 86400',
    )
  })
})

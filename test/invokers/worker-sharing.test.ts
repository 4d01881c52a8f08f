/**
 * A function with `invocationsPerWorker` above 1: each worker thread runs
 * several of its invocations at once, and the faults a function can commit
 * still end as Lambda's would — the invocation answered with an error, the
 * worker replaced when it cannot go on, every invocation it held answered
 * with an error and none of another worker's or another function's. Real
 * worker threads (test/fixtures/faults); assertions on answers and counts,
 * never on durations.
 */
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import { maxWorkers, WorkerThreadInvoker } from '../../bridge/invokers/worker-threads/worker-thread-invoker.ts'
import { type FixtureFunction, fixtureFunction } from '../support/fixture-functions.ts'
import { threadGate } from '../support/thread-gate.ts'

const FAULTS_DIR = fileURLToPath(new URL('../fixtures/faults', import.meta.url))
/** For the calls that must time out: short, so that the tests do not wait long for them. */
const SHORT_MS = 300

type Fn = FixtureFunction

const target = (name: string, perWorker: number, overrides: Partial<Fn> = {}): Fn =>
  fixtureFunction(name, 8, { invocationsPerWorker: perWorker, ...overrides })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(10)
}

let invoker: WorkerThreadInvoker | undefined
afterEach(() => invoker?.close())

function start(): WorkerThreadInvoker {
  invoker = new WorkerThreadInvoker(FAULTS_DIR)
  return invoker
}

const invoke = (on: WorkerThreadInvoker, fn: Fn, event: unknown = {}, onChunk: (text: string) => void = () => {}) =>
  on.invoke({ target: fn, event, onChunk })

/** The text an invocation answered with; fails the test on any other outcome. */
async function answer(outcome: Promise<Outcome>): Promise<string> {
  const result = await outcome
  if (!result.ok) throw new Error(`expected an answer, got ${result.kind}: ${result.message}`)
  return result.text
}

describe('how many workers a function gets', () => {
  it('one per invocation in flight when each runs one (Lambda), else enough for its concurrency, at most one per core', () => {
    expect(maxWorkers(64, 1, 2)).toBe(64)
    expect(maxWorkers(64, 16, 2)).toBe(2)
    expect(maxWorkers(64, 16, 8)).toBe(4)
    expect(maxWorkers(8, 16, 8)).toBe(1)
    expect(maxWorkers(9, 4, 8)).toBe(3)
  })
})

describe('several invocations per worker thread', () => {
  it('run at once in one worker, up to invocationsPerWorker, and the rest wait for a place', async () => {
    const pool = start()
    const fn = target('thread', 4, { concurrency: 4 })
    const held = threadGate()
    const answers = Promise.all(Array.from({ length: 6 }, () => answer(invoke(pool, fn, { gate: held.name }))))
    await until(() => held.inside() === 4)
    expect(pool.environments('thread')).toBe(1)
    held.open()
    const threads = await answers
    expect(threads).toHaveLength(6)
    expect(new Set(threads).size).toBe(1)
  })

  it('keep their streams apart: each gets its own chunks, whole and in order', async () => {
    const pool = start()
    const fn = target('slow-stream', 8, { response: 'stream' })
    const streams = Array.from({ length: 8 }, () => [] as string[])
    const outcomes = await Promise.all(
      streams.map((chunks, i) => invoke(pool, fn, { arguments: { ms: 20 * i } }, (text) => chunks.push(text))),
    )
    expect(outcomes.every((o) => o.ok && o.text === '')).toBe(true)
    for (const chunks of streams) expect(chunks).toStrictEqual(['started', ' done'])
    expect(pool.environments('slow-stream')).toBe(1)
  })

  it('a throw answers that invocation with its error; the others in the worker are answered normally', async () => {
    const pool = start()
    const echo = target('echo', 8)
    const throws = target('throws', 8)
    const outcomes = await Promise.all([
      invoke(pool, throws),
      ...Array.from({ length: 4 }, (_, n) => invoke(pool, echo, { arguments: { n } })),
      invoke(pool, throws),
    ])
    expect(outcomes[0]).toStrictEqual({ ok: false, kind: 'function-error', message: 'boom' })
    expect(outcomes[5]).toStrictEqual({ ok: false, kind: 'function-error', message: 'boom' })
    for (const [i, outcome] of outcomes.slice(1, 5).entries()) {
      expect(outcome.ok && JSON.parse(outcome.text).arguments).toStrictEqual({ n: i })
    }
  })

  it('one that hangs past its timeout is answered with a timeout; the worker keeps serving the others, not replaced', async () => {
    const pool = start()
    const fn = target('thread', 8, { timeoutMs: SHORT_MS })
    const never = threadGate() // never opened
    const hung = invoke(pool, fn, { gate: never.name })
    await until(() => never.inside() === 1)
    const before = await answer(invoke(pool, fn, { ms: 0 }))
    expect(await hung).toStrictEqual({
      ok: false,
      kind: 'timeout',
      message: `function "thread" timed out after ${SHORT_MS} ms`,
    })
    // The worker gave the hung invocation up and goes on: same thread, answers as before.
    await sleep(50)
    expect(await answer(invoke(pool, fn, { ms: 0 }))).toBe(before)
    expect(pool.environments('thread')).toBe(1)
  })

  it('a loop that never yields: every invocation the worker held gets an error, and the next call a new worker', async () => {
    const pool = start()
    const loops = target('loops', 4, { timeoutMs: SHORT_MS, concurrency: 4 })
    const other = target('thread', 4)
    const first = await answer(invoke(pool, loops, { arguments: { loop: false } }))
    const otherHeld = threadGate()
    const otherAnswers = Promise.all(
      Array.from({ length: 3 }, () => answer(invoke(pool, other, { gate: otherHeld.name }))),
    )
    // Sent in one turn: one message to the worker, the spinning call first, its neighbours stuck behind it.
    const stuck = await Promise.all([
      invoke(pool, loops, { arguments: { loop: true } }),
      invoke(pool, loops, { arguments: { loop: false } }),
      invoke(pool, loops, { arguments: { loop: false } }),
    ])
    expect(stuck[0]).toMatchObject({ ok: false, kind: 'timeout' })
    for (const outcome of stuck) expect(outcome.ok).toBe(false)
    // A call sent at once is not given to the worker that may be stuck: a new worker answers it.
    const after = await answer(invoke(pool, loops, { arguments: { loop: false } }))
    expect(after).toMatch(/^alive in thread \d+$/)
    expect(after).not.toBe(first)
    // Another function's invocations, held all along, are answered normally.
    otherHeld.open()
    expect(await otherAnswers).toHaveLength(3)
  })

  it('process.exit: every invocation the worker held gets a crash answer, each once; then a new worker serves', async () => {
    const pool = start()
    const fn = target('crashes', 4, { concurrency: 4 })
    const first = await answer(invoke(pool, fn, { arguments: { exit: false } }))
    const outcomes = await Promise.all([
      invoke(pool, fn, { arguments: { exit: false } }),
      invoke(pool, fn, { arguments: { exit: true } }),
      invoke(pool, fn, { arguments: { exit: false } }),
    ])
    expect(outcomes[1]).toStrictEqual({
      ok: false,
      kind: 'crash',
      message: 'function "crashes" crashed: its worker exited with code 3',
    })
    for (const outcome of outcomes)
      expect(outcome.ok ? outcome.text : outcome.kind).toMatch(/^(crash|alive in thread \d+)$/)
    const after = await answer(invoke(pool, fn, { arguments: { exit: false } }))
    expect(after).not.toBe(first)
    expect(
      await Promise.all(Array.from({ length: 8 }, () => answer(invoke(pool, fn, { arguments: { exit: false } })))),
    ).toHaveLength(8)
  })

  it('memorySize stays the worker heap limit: past it, the invocations it held get a crash answer, then a new worker serves', async () => {
    const pool = start()
    const fn = target('hogs-memory', 4, { concurrency: 4, memoryMb: 64 })
    const first = await answer(invoke(pool, fn, { arguments: { hog: false } }))
    const outcomes = await Promise.all([
      invoke(pool, fn, { arguments: { hog: true } }),
      invoke(pool, fn, { arguments: { hog: false } }),
    ])
    expect(outcomes[0]).toMatchObject({ ok: false, kind: 'crash' })
    expect(outcomes[0]!.ok || outcomes[0]!.message).toMatch(
      /^function "hogs-memory" crashed: it ran out of memory \(memorySize 64 MB/,
    )
    expect(outcomes[1]!.ok ? 'answered' : outcomes[1]!.kind).toMatch(/^(answered|crash)$/)
    const after = await answer(invoke(pool, fn, { arguments: { hog: false } }))
    expect(after).not.toBe(first)
  })
})

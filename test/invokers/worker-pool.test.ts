/**
 * How many worker threads a function has: started on demand, never more than
 * invocations need at once nor more than its `concurrency`, the idle ones
 * ended after --worker-idle-timeout down to --warm-workers, and never one
 * with an invocation in flight. Real worker threads; assertions on answers
 * and counts, never on durations.
 */
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import { WorkerThreadInvoker } from '../../bridge/invokers/worker-threads/worker-thread-invoker.ts'
import { resolveSettings, type WorkerPoolSettings } from '../../bridge/project/settings.ts'
import { type FixtureFunction, fixtureFunction } from '../support/fixture-functions.ts'
import { threadGate } from '../support/thread-gate.ts'

const FAULTS_DIR = fileURLToPath(new URL('../fixtures/faults', import.meta.url))
const target = (concurrency: number): FixtureFunction => fixtureFunction('thread', concurrency)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(10)
}

let invoker: WorkerThreadInvoker | undefined
afterEach(() => invoker?.close())

function start(sizing: Partial<WorkerPoolSettings> = {}): WorkerThreadInvoker {
  invoker = new WorkerThreadInvoker(FAULTS_DIR, { sizing })
  return invoker
}

/** The thread id an invocation ran in; fails the test on any other outcome. */
async function threadOf(outcome: Promise<Outcome>): Promise<string> {
  const result = await outcome
  if (!result.ok) throw new Error(`expected an answer, got ${result.kind}: ${result.message}`)
  return result.text
}

const call = (on: WorkerThreadInvoker, fn: FixtureFunction, event: { ms?: number; gate?: string } = {}) =>
  threadOf(on.invoke({ target: fn, event, onChunk: () => {} }))

/**
 * `count` invocations at once that each wait at a shared gate: resolves once
 * `running` of them are inside the function (so each is in a worker then),
 * with how to open the gate and the thread ids they answer with.
 */
async function heldAtOnce(on: WorkerThreadInvoker, fn: FixtureFunction, count: number, running = count) {
  const gate = threadGate()
  const answers = Promise.all(Array.from({ length: count }, () => call(on, fn, { gate: gate.name })))
  await until(() => gate.inside() === running)
  return {
    answers,
    open() {
      gate.open()
      return answers
    },
  }
}

describe('worker threads on demand', () => {
  it('start cold by default, as on Lambda: the check that the handler loads keeps no worker, the first invocation starts one', async () => {
    const pool = start()
    const fn = target(16)
    expect(await pool.prepare(fn)).toBeUndefined()
    expect(pool.environments('thread')).toBe(0)
    await call(pool, fn)
    expect(pool.environments('thread')).toBe(1)
  })

  it('serve one invocation at a time from the one warm worker, whatever the concurrency', async () => {
    const pool = start({ warm: 1 })
    const fn = target(16)
    expect(await pool.prepare(fn)).toBeUndefined()
    expect(pool.environments('thread')).toBe(1)
    const threads = new Set<string>()
    for (let i = 0; i < 10; i++) threads.add(await call(pool, fn))
    expect(threads.size).toBe(1)
    expect(pool.environments('thread')).toBe(1)
  })

  it('grow with the invocations in flight, up to concurrency, each in a worker of its own', async () => {
    const pool = start()
    const fn = target(4)
    const three = await heldAtOnce(pool, fn, 3)
    expect(pool.environments('thread')).toBe(3)
    expect(new Set(await three.open()).size).toBe(3) // one environment runs one invocation at a time
    const ten = await heldAtOnce(pool, fn, 10, 4)
    expect(pool.environments('thread')).toBe(4)
    const answers = await ten.open()
    expect(answers).toHaveLength(10)
    expect(new Set(answers).size).toBe(4)
    expect(pool.environments('thread')).toBe(4)
  })
})

describe('a call behind a slow one', () => {
  it('is answered while the slow one still holds its worker: the pool starts another', async () => {
    const pool = start({ warm: 1 })
    const fn = target(4)
    expect(await pool.prepare(fn)).toBeUndefined()
    const slow = await heldAtOnce(pool, fn, 1)
    const quick = await Promise.all(Array.from({ length: 20 }, () => call(pool, fn)))
    expect(quick).toHaveLength(20)
    const [held] = await slow.open()
    expect(quick).not.toContain(held)
    expect(pool.environments('thread')).toBeGreaterThan(1)
  })

  it('gets a worker of its own while every worker holds a slow one, up to concurrency', async () => {
    const pool = start({ warm: 1 })
    const fn = target(3)
    expect(await pool.prepare(fn)).toBeUndefined()
    const first = await heldAtOnce(pool, fn, 1)
    const second = await heldAtOnce(pool, fn, 1)
    const third = await heldAtOnce(pool, fn, 1)
    expect(pool.environments('thread')).toBe(3)
    const threads = [...(await first.open()), ...(await second.open()), ...(await third.open())]
    expect(new Set(threads).size).toBe(3)
  })
})

describe('idle worker threads', () => {
  it('are ended after the idle timeout down to the warm one, which then serves, and the pool grows again', async () => {
    const pool = start({ idleTimeoutMs: 50, warm: 1 })
    const fn = target(8)
    const first = await (await heldAtOnce(pool, fn, 4)).open()
    expect(new Set(first).size).toBe(4)
    await until(() => pool.environments('thread') === 1)
    const kept = await call(pool, fn)
    expect(first).toContain(kept)
    const again = await (await heldAtOnce(pool, fn, 3)).open()
    expect(new Set(again).size).toBe(3)
    // Besides the warm one, the workers are new: the ended ones are gone for good.
    expect(again.filter((thread) => thread !== kept).every((thread) => !first.includes(thread))).toBe(true)
  })

  it('with no warm worker kept, all end, and the next invocation starts one', async () => {
    const pool = start({ idleTimeoutMs: 0, warm: 0 })
    const fn = target(4)
    const first = await call(pool, fn)
    await until(() => pool.environments('thread') === 0)
    const next = await call(pool, fn)
    expect(next).not.toBe(first)
  })

  it('are never ended while they run an invocation: every call of a churning pool is answered', async () => {
    // Idle timeout 0 and no warm worker: a worker is ended the moment it is idle, so an ending
    // that could reach a busy one would answer its invocation with a crash here.
    const pool = start({ idleTimeoutMs: 0, warm: 0 })
    const fn = target(6)
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) => call(pool, fn, { ms: i * 20 })),
        call(pool, fn, { ms: 150 }),
      ])
      expect(answers).toHaveLength(7)
      for (const thread of answers) expect(thread).toMatch(/^\d+$/)
    }
  })
})

describe('--worker-idle-timeout and --warm-workers', () => {
  it('default to 60 seconds and no worker kept per function, from flags or the environment', () => {
    expect(resolveSettings({}, {}).workers).toStrictEqual({ idleTimeoutMs: 60_000, warm: 0 })
    expect(resolveSettings({ workerIdleTimeout: '5', warmWorkers: '1' }, {}).workers).toStrictEqual({
      idleTimeoutMs: 5_000,
      warm: 1,
    })
    expect(
      resolveSettings({}, { TOOLBRIDGE_WORKER_IDLE_TIMEOUT: '600', TOOLBRIDGE_WARM_WORKERS: '2' }).workers,
    ).toStrictEqual({ idleTimeoutMs: 600_000, warm: 2 })
  })

  it('refuse what is not a whole number in range', () => {
    expect(() => resolveSettings({ workerIdleTimeout: '1.5' }, {})).toThrow(
      '--worker-idle-timeout: "1.5" must be an integer from 0 to 86400',
    )
    expect(() => resolveSettings({ warmWorkers: '-1' }, {})).toThrow(
      '--warm-workers: "-1" must be an integer from 0 to 1024',
    )
  })
})

/**
 * Invocations waiting in line in a busy worker thread: a function whose
 * calls take microseconds gets its next calls sent to the worker running
 * one, in one message, and the worker runs them one at a time, in order.
 * Whatever ends the worker, the call it was running gets the error and the
 * calls in line behind it, which never started, are answered by another
 * worker, each once. Real worker threads; assertions on answers, threads
 * and messages, never on durations.
 */
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import { MAX_IN_LINE } from '../../bridge/invokers/worker-threads/call-pace.ts'
import { WorkerThreadInvoker } from '../../bridge/invokers/worker-threads/worker-thread-invoker.ts'
import { CORES } from '../../bridge/invokers/worker-threads/worker-pool.ts'
import { FAIL_SAFE_MS, type FixtureFunction, fixtureFunction } from '../support/fixture-functions.ts'
import { threadGate } from '../support/thread-gate.ts'

const FAULTS_DIR = fileURLToPath(new URL('../fixtures/faults', import.meta.url))
const HARDENING_DIR = fileURLToPath(new URL('../fixtures/hardening', import.meta.url))
type Fn = FixtureFunction

const target = (name: string, overrides: Partial<Fn> = {}): Fn => fixtureFunction(name, 4, overrides)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(10)
}

/** How many invocations each `invoke` message to a worker carried, in order. */
let batches: number[] = []
const postMessage = Worker.prototype.postMessage
beforeEach(() => {
  batches = []
  Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: unknown[]) {
    const posted = typeof message === 'string' ? (JSON.parse(message) as { type?: string; calls?: unknown[] }) : {}
    if (posted.type === 'invoke') batches.push(posted.calls!.length)
    return (postMessage as (...args: unknown[]) => void).call(this, message, ...rest)
  } as Worker['postMessage']
})

let invoker: WorkerThreadInvoker | undefined
afterEach(async () => {
  Worker.prototype.postMessage = postMessage
  await invoker?.close()
})

function start(baseDir = FAULTS_DIR, giveBackMs?: number): WorkerThreadInvoker {
  invoker = new WorkerThreadInvoker(baseDir, { sizing: { warm: 1 }, giveBackMs })
  return invoker
}

const invoke = (on: WorkerThreadInvoker, fn: Fn, event: unknown): Promise<Outcome> =>
  on.invoke({ target: fn, event, onChunk: () => {} })

function text(outcome: Outcome): string {
  if (!outcome.ok) throw new Error(`expected an answer, got ${outcome.kind}: ${outcome.message}`)
  return outcome.text
}

/** Loads the function in its warm worker and shows the pool that its calls are quick; returns that worker's answer. */
async function quickAndWarm(on: WorkerThreadInvoker, fn: Fn, quickEvent: unknown): Promise<string> {
  expect(await on.prepare(fn)).toBeUndefined()
  let answer = ''
  for (let i = 0; i < 60; i++) answer = text(await invoke(on, fn, quickEvent))
  batches = []
  return answer
}

/** Whether a message to a worker carried more than one invocation: calls sent while it ran one. */
const lined = () => batches.some((calls) => calls > 1)

describe('a burst on a cold function whose calls may wait in line', () => {
  // What the pool decided first, read before that worker has started: later starts wait for it (worker-pool.ts).
  it.each([
    [1 + MAX_IN_LINE, 1],
    [2 + MAX_IN_LINE, Math.min(2, CORES)],
  ])('starts workers for %i calls as if each held 1 + MAX_IN_LINE: %i at first', async (calls, first) => {
    const pool = start()
    const fn = target('echo', { concurrency: 64 })
    const answers = Promise.all(Array.from({ length: calls }, (_, n) => invoke(pool, fn, { n })))
    await until(() => pool.environments('echo') > 0)
    expect(pool.environments('echo')).toBe(first)
    expect((await answers).map(text)).toStrictEqual(Array.from({ length: calls }, (_, n) => JSON.stringify({ n })))
  })
})

describe('a quick function in worker threads', () => {
  it('gets calls sent to its busy worker in one message, run there in order, one at a time', async () => {
    // Never taken back: on a loaded machine a quick call may hold its line past the 2 ms default.
    const pool = start(FAULTS_DIR, FAIL_SAFE_MS)
    const fn = target('counter', { concurrency: 8 })
    const before = Number(await quickAndWarm(pool, fn, {}))
    const answers = await Promise.all(Array.from({ length: 6 }, () => invoke(pool, fn, {})))
    // One environment counted them all, in the order they were sent.
    expect(answers.map(text)).toStrictEqual(['1', '2', '3', '4', '5', '6'].map((n) => String(before + Number(n))))
    expect(batches).toStrictEqual([1, 5])
    expect(pool.environments('counter')).toBe(1)
  })

  it('has the calls in line behind one that waits long given back, and another worker answers them meanwhile', async () => {
    const pool = start()
    const fn = target('thread')
    const warm = await quickAndWarm(pool, fn, {})
    const gate = threadGate()
    const held = invoke(pool, fn, { gate: gate.name })
    const behind = Promise.all(Array.from({ length: 3 }, () => invoke(pool, fn, {})))
    await until(() => gate.inside() === 1)
    const others = (await behind).map(text) // answered while the gate is shut
    expect(lined()).toBe(true)
    expect(others).not.toContain(warm)
    gate.open()
    expect(text(await held)).toBe(warm)
    gate.close()
  })

  it('reports a call taken back from a line once, as run by the worker that ran it, cold only if first there', async () => {
    const pool = start()
    const fn = target('thread')
    expect(await pool.prepare(fn)).toBeUndefined()
    const reports: { invocationId?: string; coldStart?: boolean }[][] = []
    const traced = (event: unknown) => {
      const facts: (typeof reports)[number] = []
      reports.push(facts)
      return pool.invoke({
        target: fn,
        event,
        onChunk: () => {},
        trace: { headers: {}, observed: (f) => facts.push(f) },
      })
    }
    for (let i = 0; i < 60; i++) text(await traced({})) // quick, in one warm worker
    batches = []
    const gate = threadGate()
    const held = traced({ gate: gate.name })
    const behind = Promise.all(Array.from({ length: 3 }, () => traced({})))
    await until(() => gate.inside() === 1)
    await behind // run by a second worker: sent to the first's line, then taken back
    gate.open()
    text(await held)
    gate.close()
    expect(lined()).toBe(true)
    expect(pool.environments('thread')).toBe(2)
    expect(reports.map((facts) => facts.length)).toStrictEqual(reports.map(() => 1))
    expect(new Set(reports.map(([facts]) => facts!.invocationId)).size).toBe(reports.length)
    const cold = reports.map(([facts]) => facts!.coldStart)
    expect(cold.slice(0, 61)).toStrictEqual([true, ...Array.from({ length: 60 }, () => false)]) // the held one: warm
    expect(cold.slice(61).filter(Boolean)).toHaveLength(1) // the second worker's first
  })

  it('has the calls in line behind one that never yields taken back, and another worker answers them meanwhile', async () => {
    const pool = start()
    const fn = target('spins', { concurrency: 2 })
    const warm = await quickAndWarm(pool, fn, {})
    const answered: string[] = []
    const note = (name: string) => (outcome: Outcome) => {
      answered.push(name)
      return outcome
    }
    const spinning = invoke(pool, fn, { ms: 1000 }).then(note('spinning'))
    const behind = Promise.all(Array.from({ length: 3 }, () => invoke(pool, fn, {}).then(note('behind'))))
    const others = (await behind).map(text)
    expect(answered).toStrictEqual(['behind', 'behind', 'behind']) // while the first still spins
    expect(lined()).toBe(true)
    expect(others).not.toContain(warm)
    expect(text(await spinning)).toBe(warm)
  })

  it('counts the timeout of a call that started in line from when the one before it ended', async () => {
    const pool = start()
    // Two calls of 600 ms in one line, the main thread too busy meanwhile to take the second back:
    // the second ends 1,200 ms after it was sent, within its 1,000 ms from when it started.
    const fn = target('spins', { timeoutMs: 1000, concurrency: 1 })
    const warm = await quickAndWarm(pool, fn, {})
    const both = Promise.all([invoke(pool, fn, { ms: 600 }), invoke(pool, fn, { ms: 600 })])
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve))
    expect(batches).toStrictEqual([1, 1]) // both sent: one running, one in line
    const busyUntil = Date.now() + 700
    while (Date.now() < busyUntil) {
      // the main thread busy
    }
    expect((await both).map(text)).toStrictEqual([warm, warm])
  })
})

describe.each([
  ['taken back from the line after 2 ms', undefined],
  // Never taken back: they are in the line when the worker exits, and it is the settling at exit that sends them on.
  ['still in line when the worker exits', FAIL_SAFE_MS],
])('a fault with calls in line behind it, %s', (_, giveBackMs) => {
  /**
   * Warms `fn` with quick calls (`quickArguments`) in a pool on `dir`, then sends one call with `faultArguments`
   * and `inLine` quick calls behind it: the fault's outcome, the answers of the calls behind it, and the warm
   * worker's own answer.
   */
  async function faultWithLine(dir: string, fn: Fn, quickArguments: object, faultArguments: object, inLine = 2) {
    const pool = start(dir, giveBackMs)
    const quick = { arguments: quickArguments }
    const fault = { arguments: faultArguments }
    const warm = await quickAndWarm(pool, fn, quick)
    const [outcome, ...behind] = await Promise.all([
      invoke(pool, fn, fault),
      ...Array.from({ length: inLine }, () => invoke(pool, fn, quick)),
    ])
    return { outcome: outcome!, answers: behind.map(text), warm }
  }

  /** The calls that waited in line behind the fault were answered by one worker, not the warm one. */
  function answeredByOneNewWorker(answers: string[], warm: string) {
    expect(new Set(answers).size).toBe(1)
    expect(answers[0]).not.toBe(warm)
    expect(lined()).toBe(true)
  }

  it('process.exit: that call gets a crash answer; those behind it, never started, are answered by a new worker', async () => {
    const fn = target('crashes', { concurrency: 1 })
    const { outcome, answers, warm } = await faultWithLine(FAULTS_DIR, fn, { exit: false }, { exit: true }, 3)
    expect(outcome).toMatchObject({ ok: false, kind: 'crash' })
    expect((outcome as { message: string }).message).toBe('function "crashes" crashed: its worker exited with code 3')
    expect(answers[0]).toMatch(/^alive in thread \d+$/)
    expect(batches[0]).toBe(1)
    answeredByOneNewWorker(answers, warm)
  })

  it('a loop that never yields: a timeout answer; the calls in line behind it are answered by a new worker', async () => {
    const fn = target('loops', { concurrency: 1, timeoutMs: 1000 })
    const { outcome, answers, warm } = await faultWithLine(FAULTS_DIR, fn, { loop: false }, { loop: true })
    expect(outcome).toStrictEqual({ ok: false, kind: 'timeout', message: 'function "loops" timed out after 1000 ms' })
    answeredByOneNewWorker(answers, warm)
  })

  it('past memorySize on the heap: a crash answer; the calls in line behind it are answered by a new worker', async () => {
    const fn = target('hogs-memory', { concurrency: 1, memoryMb: 64 })
    const { outcome, answers, warm } = await faultWithLine(FAULTS_DIR, fn, { hog: false }, { hog: true })
    expect(outcome).toMatchObject({ ok: false, kind: 'crash' })
    expect((outcome as { message: string }).message).toMatch(/^function "hogs-memory" crashed: it ran out of memory/)
    answeredByOneNewWorker(answers, warm)
  })

  it('Buffer memory kept past memorySize: that call’s error; the worker starts nothing after it, a new one answers the rest', async () => {
    const fn = target('buffers', { concurrency: 1, memoryMb: 128 })
    const { outcome, answers, warm } = await faultWithLine(HARDENING_DIR, fn, { mb: 0 }, { mb: 256 })
    expect(outcome).toMatchObject({ ok: false, kind: 'crash' })
    expect((outcome as { message: string }).message).toMatch(
      /^function "buffers" crashed: it ran out of memory \(25[6-9] MB of Buffer\/ArrayBuffer memory kept after the invocation; memorySize 128 MB\)$/,
    )
    // Had the old worker run them, they would say 256 MiB.
    expect(answers[0]).toMatch(/^holds 0 MiB in thread \d+$/)
    answeredByOneNewWorker(answers, warm)
  })
})

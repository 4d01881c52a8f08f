/**
 * When a function's pool starts another worker thread, which one takes the
 * next invocation, and when idle ones end: the pool's rules alone, on
 * stand-in environments whose start and end the test decides, under a fake
 * clock (timers and performance.now(); immediates are real, as the pool
 * decides to grow in one after the turn's messages). The real workers'
 * behaviour is in worker-pool.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  type EnvironmentHooks,
  Pool,
  type PooledEnvironment,
} from '../../bridge/invokers/worker-threads/worker-pool.ts'

class StandIn implements PooledEnvironment {
  held = 0
  /** As the test sets it (the function's pace, for a real environment). */
  places = 1
  spare = false
  paused = false
  idleSince = 0
  dead = false
  ended = false
  readonly ready: Promise<string | undefined>
  readonly hooks: EnvironmentHooks<StandIn>
  private markReady: (loadError: string | undefined) => void = () => {}

  constructor(hooks: EnvironmentHooks<StandIn>) {
    this.hooks = hooks
    this.ready = new Promise((resolve) => (this.markReady = resolve))
  }

  /** Its handler loaded (or not). */
  start(loadError?: string): void {
    this.markReady(loadError)
  }

  /** One invocation it ran is answered. */
  free(): void {
    this.hooks.onFree(this)
  }

  /** It may be stuck (a timed-out invocation not yet given up): it takes no new invocations until it resumes. */
  pause(): void {
    this.paused = true
    this.hooks.onPause(this)
  }

  resume(): void {
    this.paused = false
    this.hooks.onResume(this)
  }

  end(): Promise<number> {
    this.dead = true
    this.ended = true
    return Promise.resolve(0)
  }
}

const SIZING = { warm: 0, idleTimeoutMs: 60_000 }

let created: StandIn[]
let pools: Pool<StandIn>[]

function pool(max: number, { perWorker = 1, startsAtOnce = 2, warm = 0 } = {}): Pool<StandIn> {
  const made = new Pool<StandIn>(
    max,
    perWorker,
    { ...SIZING, warm },
    (hooks) => {
      const env = new StandIn(hooks)
      env.places = perWorker
      created.push(env)
      return env
    },
    startsAtOnce,
  )
  pools.push(made)
  return made
}

/** Calls that asked for a place, and the environment each was given (once given). */
function ask(from: Pool<StandIn>, count: number) {
  const given: (StandIn | undefined)[] = Array.from({ length: count }, () => undefined)
  for (let i = 0; i < count; i++) void from.acquire().then((env) => (given[i] = env))
  return given
}

/** Lets promise callbacks and the immediates queued so far run: the rest of a turn of the event loop. */
async function turn(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setImmediate(resolve))
}

/** Starts these environments after `ms` of the fake clock, as if their start took that long. */
async function startAfter(ms: number, envs: StandIn[]): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms)
  for (const env of envs) env.start()
  await turn()
}

/** Asks as `ask` does and lets the turn run: the calls then have the places given in that turn. */
async function askThenTurn(from: Pool<StandIn>, count: number) {
  const given = ask(from, count)
  await turn()
  return given
}

/** Asks the pool for `count` places and starts, 10 ms later, every environment made so far. */
async function started(fn: Pool<StandIn>, count: number): Promise<StandIn[]> {
  await askThenTurn(fn, count)
  await startAfter(10, created)
  return created
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  created = []
  pools = []
})

afterEach(async () => {
  for (const each of pools) await each.close()
  vi.useRealTimers()
})

describe('a burst on a cold function', () => {
  it('starts no more environments at once than it may, and none before the turn has read its messages', async () => {
    const fn = pool(16)
    ask(fn, 8)
    expect(created).toHaveLength(0)
    await turn()
    expect(created).toHaveLength(2)
  })

  it('gives the first environments as long as their start took to take the burst before starting more', async () => {
    const fn = pool(16)
    const given = await askThenTurn(fn, 8)
    await startAfter(30, created.slice(0, 2))
    expect(given.filter(Boolean)).toHaveLength(2)
    // Six still wait, all longer than a start takes, but the two just started may take them.
    expect(created).toHaveLength(2)
    await vi.advanceTimersByTimeAsync(29)
    expect(created).toHaveLength(2)
    await vi.advanceTimersByTimeAsync(1)
    await turn()
    expect(created).toHaveLength(4)
  })

  it('starts none more when the first environments take the whole burst within that time', async () => {
    const fn = pool(16)
    const given = await askThenTurn(fn, 8)
    const [first, second] = created as [StandIn, StandIn]
    await startAfter(30, [first, second])
    for (let round = 0; round < 3; round++) {
      await vi.advanceTimersByTimeAsync(5)
      first.free()
      second.free()
      await turn()
    }
    expect(given.every(Boolean)).toBe(true)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(created).toHaveLength(2)
  })

  it('with every environment still starting, starts one per waiting invocation up to the limit as each start ends', async () => {
    const fn = pool(3, { startsAtOnce: 2 })
    const given = await askThenTurn(fn, 5)
    expect(created).toHaveLength(2)
    await startAfter(10, created.slice(0, 2))
    await vi.advanceTimersByTimeAsync(10)
    await turn()
    expect(created).toHaveLength(3) // never more than max
    created[2]?.start()
    await turn()
    expect(given.filter(Boolean)).toHaveLength(3)
  })
})

describe('steady load', () => {
  it('starts another environment for a queue that never empties, though each call in it waits less than a start', async () => {
    const fn = pool(16)
    await askThenTurn(fn, 1)
    const [env] = created as [StandIn]
    await startAfter(30, [env])
    const asked = [ask(fn, 2)]
    for (let tick = 0; tick < 5; tick++) {
      await vi.advanceTimersByTimeAsync(10)
      env.free() // the oldest waiting call takes it, after 20 ms in the queue
      asked.push(ask(fn, 1))
      await turn()
      if (tick < 2) expect(created).toHaveLength(1)
    }
    expect(created).toHaveLength(3) // one for each call waiting then
    expect(asked.flat().slice(0, 5)).toEqual([env, env, env, env, env])
  })

  it('starts none while the queue empties within a start, however often it fills', async () => {
    const fn = pool(16)
    await askThenTurn(fn, 1)
    const [env] = created as [StandIn]
    await startAfter(30, [env])
    for (let tick = 0; tick < 20; tick++) {
      ask(fn, 1)
      await vi.advanceTimersByTimeAsync(25)
      env.free()
      await turn()
    }
    expect(created).toHaveLength(1)
  })
})

describe('a pause of the main thread', () => {
  it('does not start an environment for an invocation whose environment was freed during the pause', async () => {
    const fn = pool(16)
    await askThenTurn(fn, 1)
    const [env] = created as [StandIn]
    await startAfter(30, [env])
    const [behind] = ask(fn, 1)
    await turn()
    expect(behind).toBeUndefined()
    // The main thread stalls past the wait that starts another (30 ms); meanwhile the worker finished, and
    // its message is read in the same turn as the timer fires, after it.
    vi.advanceTimersToNextTimer()
    env.free()
    await turn()
    expect(created).toHaveLength(1)
  })

  it('starts one for an invocation that really waited that long', async () => {
    await vi.advanceTimersByTimeAsync(1_000) // a clock that does not start at zero
    const fn = pool(16)
    await askThenTurn(fn, 1)
    await startAfter(30, created.slice(0, 1))
    const behind = await askThenTurn(fn, 1)
    await vi.advanceTimersByTimeAsync(29)
    await turn()
    expect(created).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(1)
    await turn()
    expect(created).toHaveLength(2)
    await startAfter(30, created.slice(1))
    expect(behind).toEqual([created[1]])
  })
})

describe('places', () => {
  it('an environment given places back one by one is handed out no more than it has', async () => {
    const fn = pool(1, { perWorker: 3 })
    const [env] = (await started(fn, 3)) as [StandIn]
    env.free()
    env.free()
    const next = await askThenTurn(fn, 3)
    expect(next).toEqual([env, env, undefined])
  })

  it('go to the environment most recently given one back, and waiting invocations in arrival order', async () => {
    const fn = pool(3, { startsAtOnce: 3 })
    const [a, b, c] = (await started(fn, 3)) as [StandIn, StandIn, StandIn]
    const waiting = ask(fn, 2)
    b.free()
    a.free()
    await turn()
    expect(waiting).toEqual([b, a])
    a.free()
    c.free()
    b.free()
    const next = await askThenTurn(fn, 3)
    expect(next).toEqual([b, c, a])
  })

  it('with several invocations per environment, fill one before another starts, and give none more than it holds', async () => {
    const fn = pool(4, { perWorker: 3 })
    const given = await askThenTurn(fn, 3)
    expect(created).toHaveLength(1)
    await startAfter(10, created)
    const [env] = created as [StandIn]
    expect(given).toEqual([env, env, env])
    const fourth = await askThenTurn(fn, 1)
    expect(fourth).toEqual([undefined])
    env.free()
    await turn()
    expect(fourth).toEqual([env])
    env.free()
    const fifth = await askThenTurn(fn, 1)
    expect(fifth).toEqual([env])
    expect(created).toHaveLength(1)
  })

  it('an environment whose places grew hands the new ones to waiting invocations as it gives one back', async () => {
    const fn = pool(1)
    const [env] = (await started(fn, 1)) as [StandIn]
    const waiting = await askThenTurn(fn, 4)
    expect(waiting).toEqual([undefined, undefined, undefined, undefined])
    env.places = 4 // its function turned out quick: three may wait in line behind the one running
    env.free()
    await turn()
    expect(waiting).toEqual([env, env, env, env])
    expect(env.held).toBe(4)
    expect(created).toHaveLength(1)
  })

  it('an environment whose places shrank is handed out no more until it holds fewer than it has', async () => {
    const fn = pool(2, { startsAtOnce: 1 })
    const [env] = (await started(fn, 1)) as [StandIn]
    env.places = 3
    env.free()
    const two = await askThenTurn(fn, 2)
    expect(two).toEqual([env, env])
    env.places = 1 // the invocation it runs turned out slow
    const next = await askThenTurn(fn, 1)
    expect(next).toEqual([undefined])
    env.free()
    await turn()
    expect(next).toEqual([undefined])
    env.free()
    await turn()
    expect(next).toEqual([env])
    expect(env.held).toBe(1)
  })

  it('an environment whose places shrank to what it holds is not handed out; the next most recent one is', async () => {
    const fn = pool(2, { perWorker: 3, startsAtOnce: 2 })
    const [first, second] = (await started(fn, 4)) as [StandIn, StandIn]
    expect([first.held, second.held]).toEqual([3, 1])
    first.free() // the most recent to give one back: 2 held of 3
    first.places = 2
    const next = await askThenTurn(fn, 1)
    expect(next).toEqual([second])
  })

  it('one given a place back while it was full comes first after, also with another given one back before it', async () => {
    const fn = pool(2, { startsAtOnce: 2 })
    const [a, b] = (await started(fn, 2)) as [StandIn, StandIn]
    b.free()
    a.free()
    const both = await askThenTurn(fn, 2)
    expect(both).toEqual([a, b])
    a.free()
    b.free() // while a is spare again, b comes back last: it is the one to use next
    const next = await askThenTurn(fn, 1)
    expect(next).toEqual([b])
  })

  it('a load error is given to the oldest waiting invocation, and an environment nobody waits for is ended', async () => {
    const fn = pool(4, { startsAtOnce: 2 })
    const first = await askThenTurn(fn, 1)
    const [failing] = created as [StandIn]
    failing.start('SyntaxError: nope')
    await turn()
    expect(first).toEqual([failing])
    const two = await askThenTurn(fn, 2)
    const [, works, spare] = created as [StandIn, StandIn, StandIn]
    works.start()
    await turn()
    works.free()
    await turn()
    expect(two).toEqual([works, works])
    spare.start('SyntaxError: nope')
    await turn()
    expect(spare.ended).toBe(true)
    expect(works.ended).toBe(false)
  })
})

describe('an environment that ends', () => {
  it('is forgotten, and invocations waiting for a place get a new one at once when no other runs', async () => {
    const fn = pool(2, { startsAtOnce: 1 })
    const [env] = (await started(fn, 1)) as [StandIn]
    const waiting = await askThenTurn(fn, 2)
    env.dead = true
    env.hooks.onDeath(env)
    expect(fn.size).toBe(0)
    await turn()
    expect(created).toHaveLength(2)
    await startAfter(10, created.slice(1))
    expect(waiting).toEqual([created[1], undefined])
    env.free() // a place given back by one that ended is not a place
    await turn()
    expect(waiting).toEqual([created[1], undefined])
  })

  it('one that ended on a load error is ended by discard and no longer counted', async () => {
    const fn = pool(2, { startsAtOnce: 1 })
    const first = await askThenTurn(fn, 1)
    const [env] = created as [StandIn]
    env.start('SyntaxError: nope')
    await turn()
    expect(first).toEqual([env])
    fn.discard(env)
    expect(env.ended).toBe(true)
    expect(fn.size).toBe(0)
  })
})

describe('an environment that ends (more)', () => {
  it('while it starts, leaves the invocation waiting for it to another one started at once', async () => {
    const fn = pool(2, { startsAtOnce: 1 })
    const waiting = await askThenTurn(fn, 1)
    const [dying] = created as [StandIn]
    dying.dead = true
    dying.hooks.onDeath(dying)
    await turn()
    expect(created).toHaveLength(2)
    await startAfter(10, created.slice(1))
    expect(waiting).toEqual([created[1]])
  })

  it('while idle, is never handed out again', async () => {
    const fn = pool(2, { startsAtOnce: 1 })
    await askThenTurn(fn, 1)
    const [env] = created as [StandIn]
    await startAfter(10, [env])
    env.free()
    env.dead = true
    env.hooks.onDeath(env)
    const next = await askThenTurn(fn, 1)
    await startAfter(10, created.slice(1))
    expect(next).toEqual([created[1]])
  })
})

describe('an environment that may be stuck', () => {
  it('takes no invocation while paused, even with a place free', async () => {
    const fn = pool(1, { perWorker: 2 })
    const [env] = (await started(fn, 1)) as [StandIn]
    env.pause()
    const waiting = await askThenTurn(fn, 1)
    expect(waiting).toEqual([undefined])
  })

  it('pausing one that has no free place leaves the others as they were', async () => {
    const fn = pool(2, { startsAtOnce: 2 })
    const [a, b] = (await started(fn, 2)) as [StandIn, StandIn]
    a.free()
    b.pause() // b holds its one place: it is not among the spare ones
    const next = await askThenTurn(fn, 1)
    expect(next).toEqual([a])
  })

  it('takes no invocation while paused; its free places go to waiting invocations when it resumes', async () => {
    const fn = pool(1, { perWorker: 2 })
    const first = await askThenTurn(fn, 2)
    await startAfter(10, created)
    const [env] = created as [StandIn]
    expect(first).toEqual([env, env])
    env.pause()
    env.free() // one of its invocations timed out and was given up
    const waiting = await askThenTurn(fn, 1)
    expect(waiting).toEqual([undefined])
    env.resume()
    expect(waiting).toEqual([undefined])
    await turn()
    expect(waiting).toEqual([env])
  })

  it('resumed with no invocation waiting, takes new ones again', async () => {
    const fn = pool(1, { perWorker: 2 })
    const [env] = (await started(fn, 2)) as [StandIn]
    env.pause()
    env.free()
    env.free()
    env.resume()
    const next = await askThenTurn(fn, 3)
    expect(next).toEqual([env, env, undefined])
  })
})

describe('an environment that resumes', () => {
  it('gives its waiting invocations exactly the places it has free, and takes no more after', async () => {
    const fn = pool(1, { perWorker: 3 })
    const [env] = (await started(fn, 3)) as [StandIn]
    env.pause()
    env.free()
    env.free()
    const waiting = await askThenTurn(fn, 3)
    env.resume()
    await turn()
    expect(waiting).toEqual([env, env, undefined])
    const later = await askThenTurn(fn, 1)
    expect(later).toEqual([undefined])
    env.free()
    await turn()
    expect(waiting).toEqual([env, env, env])
    expect(later).toEqual([undefined])
  })

  it('with nothing left to run, is idle: ended after the idle timeout', async () => {
    const fn = pool(1, { perWorker: 2 })
    const [env] = (await started(fn, 1)) as [StandIn]
    env.pause()
    env.free()
    env.resume()
    await vi.advanceTimersByTimeAsync(SIZING.idleTimeoutMs)
    expect(env.ended).toBe(true)
    expect(fn.size).toBe(0)
  })

  it('of a replaced pool, ends once it has nothing left to run', async () => {
    const fn = pool(1, { perWorker: 2 })
    const [env] = (await started(fn, 2)) as [StandIn]
    env.pause()
    fn.replace()
    env.free()
    env.resume()
    expect(env.ended).toBe(false) // one invocation still runs
    env.free()
    expect(env.ended).toBe(true)
  })

  it('of a replaced pool, with everything it held given up, ends as it resumes', async () => {
    const fn = pool(1, { perWorker: 2 })
    const [env] = (await started(fn, 1)) as [StandIn]
    env.pause()
    fn.replace()
    env.free()
    expect(env.ended).toBe(false)
    env.resume()
    expect(env.ended).toBe(true)
  })

  it('after it ended, gives nothing', async () => {
    const fn = pool(1, { perWorker: 2, startsAtOnce: 1 })
    const [env] = (await started(fn, 2)) as [StandIn]
    env.pause()
    env.free()
    const waiting = await askThenTurn(fn, 1)
    env.dead = true
    env.hooks.onResume(env)
    await turn()
    expect(waiting).toEqual([undefined])
  })
})

describe('a pool replaced by newer code', () => {
  it('ends its idle environments at once and each busy one once it has answered what waits for it', async () => {
    const fn = pool(3, { startsAtOnce: 3 })
    const [a, b, c] = (await started(fn, 3)) as [StandIn, StandIn, StandIn]
    a.free()
    const waiting = await askThenTurn(fn, 2)
    expect(waiting).toEqual([a, undefined])
    fn.replace()
    expect(created.map((env) => env.ended)).toEqual([false, false, false])
    b.free()
    await turn()
    expect(waiting).toEqual([a, b])
    expect(b.ended).toBe(false)
    b.free()
    c.free()
    expect([a.ended, b.ended, c.ended]).toEqual([false, true, true])
    a.free()
    expect(a.ended).toBe(true)
    expect(fn.size).toBe(0)
  })

  it('keeps a busy environment with a free place until it has nothing left to run', async () => {
    const fn = pool(1, { perWorker: 3 })
    const [env] = (await started(fn, 2)) as [StandIn]
    fn.replace()
    expect(env.ended).toBe(false)
    env.free()
    expect(env.ended).toBe(false)
    env.free()
    expect(env.ended).toBe(true)
  })

  it('ends an idle environment at once', async () => {
    const fn = pool(2, { startsAtOnce: 2 })
    const [a, b] = (await started(fn, 2)) as [StandIn, StandIn]
    a.free()
    fn.replace()
    expect([a.ended, b.ended]).toEqual([true, false])
  })
})

describe('idle environments', () => {
  it('end after the idle timeout, down to the warm ones, longest idle first', async () => {
    const fn = pool(3, { startsAtOnce: 3, warm: 1 })
    const [a, b, c] = (await started(fn, 3)) as [StandIn, StandIn, StandIn]
    b.free()
    await vi.advanceTimersByTimeAsync(1_000)
    a.free()
    await vi.advanceTimersByTimeAsync(1_000)
    c.free()
    await vi.advanceTimersByTimeAsync(SIZING.idleTimeoutMs - 2_001)
    expect(created.filter((env) => env.ended)).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect([a.ended, b.ended, c.ended]).toEqual([false, true, false])
    await vi.advanceTimersByTimeAsync(1_000)
    expect([a.ended, b.ended, c.ended]).toEqual([true, true, false])
    await vi.advanceTimersByTimeAsync(10 * SIZING.idleTimeoutMs)
    expect(fn.size).toBe(1)
    expect(c.ended).toBe(false)
  })

  it('longest idle first, also when an environment with several places went idle after another', async () => {
    const fn = pool(2, { perWorker: 2, startsAtOnce: 2, warm: 1 })
    const [a, b] = (await started(fn, 4)) as [StandIn, StandIn]
    a.free() // a is spare first, still running one
    await vi.advanceTimersByTimeAsync(10)
    b.free()
    b.free() // b idle from here
    await vi.advanceTimersByTimeAsync(10)
    a.free() // a idle from here, after b
    await vi.advanceTimersByTimeAsync(SIZING.idleTimeoutMs - 10)
    expect([a.ended, b.ended]).toEqual([false, true])
  })

  it('down to the warm ones even when several are due at once', async () => {
    const fn = pool(2, { startsAtOnce: 2, warm: 1 })
    await started(fn, 2)
    for (const env of created) env.free()
    await vi.advanceTimersByTimeAsync(SIZING.idleTimeoutMs)
    expect(created.filter((env) => env.ended)).toHaveLength(1)
    expect(fn.size).toBe(1)
  })

  it('one with several places, running an invocation, is never ended', async () => {
    const fn = pool(1, { perWorker: 2 })
    await started(fn, 1)
    await vi.advanceTimersByTimeAsync(10 * SIZING.idleTimeoutMs)
    expect(created[0]?.ended).toBe(false)
  })

  it('an environment running an invocation is never ended', async () => {
    const fn = pool(2, { startsAtOnce: 2 })
    const [a] = (await started(fn, 2)) as [StandIn]
    a.free()
    await vi.advanceTimersByTimeAsync(10 * SIZING.idleTimeoutMs)
    expect(created.map((env) => env.ended)).toEqual([true, false])
  })
})

describe('a closed pool', () => {
  it('starts nothing for invocations that asked in the turn it closed', async () => {
    const fn = pool(4)
    ask(fn, 3)
    await fn.close()
    await turn()
    expect(created).toHaveLength(0)
  })

  it('ends no idle environment later: it ended them all', async () => {
    const fn = pool(2, { startsAtOnce: 2 })
    await started(fn, 2)
    for (const env of created) env.free()
    await fn.close()
    for (const env of created) env.ended = false // as if the ends were still under way
    await vi.advanceTimersByTimeAsync(10 * SIZING.idleTimeoutMs)
    expect(created.map((env) => env.ended)).toEqual([false, false])
  })

  it('starts nothing for invocations still waiting, and ends what it has', async () => {
    const fn = pool(4, { startsAtOnce: 1 })
    await started(fn, 3)
    await fn.close()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(created).toHaveLength(1)
    expect(created[0]?.ended).toBe(true)
  })
})

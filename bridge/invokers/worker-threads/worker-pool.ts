/**
 * The worker threads of one function (worker-thread-invoker.ts): how many it has, which
 * takes the next invocation, when another starts and when an idle one ends.
 * It knows an environment only by what it asks of it (PooledEnvironment).
 */
import { availableParallelism } from 'node:os'
import type { WorkerPoolSettings } from '../../project/settings.ts'

/** Environments of one function starting at once; also the most a function sharing its workers gets. */
export const CORES = availableParallelism()

/** What the pool reads and sets on an environment (worker-thread-invoker.ts's Environment). */
export interface PooledEnvironment {
  /** Resolves with a load error message, or undefined once the handler is loaded. */
  readonly ready: Promise<string | undefined>
  /** Places taken by the pool (invocations reserved, running, waiting in line, or being given up). */
  held: number
  /** Places it has now: may change with the function's pace (call-pace.ts). */
  readonly places: number
  /** Whether the pool has it among those with a free place. */
  spare: boolean
  /** Waiting for the worker to confirm it gave up timed-out invocations: no new ones meanwhile. */
  paused: boolean
  /** When it last became idle (performance.now()). */
  idleSince: number
  dead: boolean
  /** Ends it on purpose: no crash to report. */
  end(): Promise<number>
}

export interface EnvironmentHooks<E extends PooledEnvironment = PooledEnvironment> {
  /** One invocation's place in the worker is free again. */
  onFree(env: E): void
  /** The worker ended (crash, timeout, memory): the pool forgets it. */
  onDeath(env: E): void
  /** It may be stuck (a timed-out invocation not yet given up): it takes no new invocations until onResume. */
  onPause(env: E): void
  onResume(env: E): void
}

/**
 * The environments of one function, at most `max` of them, each holding up
 * to its `places` invocations, started on demand: one more only while
 * invocations wait for a place and the environments starting could not take
 * them all if each came to hold `mostPlaces`, and a free place (in a new
 * environment or one that finished an invocation) goes to the oldest waiting
 * invocation. Starting one is CPU
 * work, so no more start at once than the machine has cores: more would
 * only make each later. And one is started only once invocations have been
 * waiting without a break for as long as the last start took, counted from
 * when the newest environment became ready: a queue that the environments
 * empty within that time would gain nothing from a new one (the common case
 * for short calls on a busy main thread, and for the burst that started the
 * first ones), while a function whose environments are all held gets more
 * after that short wait, even if each call waits less than a start (calls
 * that keep the queue full, as under steady load). The decision is taken
 * after the event loop has read the messages already received: after a
 * pause of the main thread (a long collection, a burst of work), the timer
 * that finds invocations waiting fires before the loop reads the workers'
 * messages that their environments are free. Places are taken from the
 * environment most recently given one back, so that invocations gather in
 * few environments (several per message to them) and the others stay idle
 * and are ended after the idle timeout; an environment running an
 * invocation is never idle.
 */
export class Pool<E extends PooledEnvironment> {
  /** Started environments with a free place, the one to use next last. */
  private readonly spare: E[] = []
  private readonly all = new Set<E>()
  private readonly starting = new Set<E>()
  /** Invocations waiting for a place, oldest first. */
  private readonly waiting: ((env: E) => void)[] = []
  /** Since when invocations have been waiting without a break (performance.now()); read only while some wait. */
  private queuedSince = 0
  /** How long the last environment took to start, ms: how long an invocation waits before another starts for it. */
  private patienceMs = 0
  /** When an environment last became ready (performance.now()): waits count from then, as it may take them. */
  private readyAt = 0
  private growSoonPending = false
  private closed = false
  private growTimer: NodeJS.Timeout | undefined
  private retireTimer: NodeJS.Timeout | undefined
  private readonly max: number
  /** Environments that may be starting at once. */
  private readonly startsAtOnce: number
  /** The most places an environment may come to have: a burst starts as many as would hold it. */
  private readonly mostPlaces: number
  private readonly sizing: WorkerPoolSettings
  private readonly create: (hooks: EnvironmentHooks<E>) => E
  private readonly hooks: EnvironmentHooks<E> = {
    onFree: (env) => this.release(env),
    onDeath: (env) => this.forget(env),
    onPause: (env) => this.unspare(env),
    onResume: (env) => this.offer(env),
  }
  /** Replaced by a pool of newer code (reload): each environment ends once it has no invocation to run. */
  private replaced = false

  constructor(
    max: number,
    mostPlaces: number,
    sizing: WorkerPoolSettings,
    create: (hooks: EnvironmentHooks<E>) => E,
    startsAtOnce = CORES,
  ) {
    this.startsAtOnce = startsAtOnce
    this.max = max
    this.mostPlaces = mostPlaces
    this.sizing = sizing
    this.create = create
  }

  get size(): number {
    return this.all.size
  }

  /** A place in an environment that has started (or failed to: its `ready` says which). */
  acquire(): Promise<E> {
    let env = this.spare.at(-1)
    while (env && env.held >= env.places) {
      this.unspare(env) // its places shrank since it became spare
      env = this.spare.at(-1)
    }
    if (env) {
      this.hold(env)
      return Promise.resolve(env)
    }
    return new Promise((resolve) => {
      if (this.waiting.length === 0) this.queuedSince = performance.now()
      this.waiting.push(resolve)
      this.growSoon()
    })
  }

  /** Gives back one place in an environment. */
  release(env: E): void {
    env.held--
    this.offer(env)
  }

  /** Ends an environment (load failure); a waiting invocation gets a fresh one. */
  discard(env: E): void {
    if (!env.dead) void env.end()
    this.forget(env)
  }

  /**
   * New invocations go to another pool from now on: idle environments end at once, busy ones when
   * their invocation (and those already waiting here) are answered, on the code they loaded.
   */
  replace(): void {
    this.replaced = true
    for (const env of this.idle()) this.discard(env)
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.retireTimer)
    clearTimeout(this.growTimer)
    await Promise.all([...this.all].map((env) => env.end()))
  }

  /** An environment's free places, to waiting invocations first; then it is spare, or idle. */
  private offer(env: E): void {
    if (env.dead || env.paused) return // a paused one's places are handed out again on resume
    while (env.held < env.places) {
      const next = this.waiting.shift()
      if (!next) break
      env.held++
      next(env)
    }
    if (this.replaced) {
      if (env.held === 0) this.discard(env)
      return
    }
    if (env.held < env.places && !env.spare) {
      env.spare = true
      this.spare.push(env)
    }
    if (env.held === 0) {
      env.idleSince = performance.now()
      this.scheduleRetirement()
    }
  }

  private unspare(env: E): void {
    if (!env.spare) return
    env.spare = false
    this.spare.splice(this.spare.lastIndexOf(env), 1)
  }

  private hold(env: E): void {
    env.held++
    if (env.held >= env.places) this.unspare(env)
  }

  /** Grows once this turn's messages are read (the check phase runs after the poll phase that reads them). */
  private growSoon(): void {
    if (this.growSoonPending) return
    this.growSoonPending = true
    setImmediate(() => {
      this.growSoonPending = false
      this.grow()
    })
  }

  private grow(): void {
    if (this.closed || this.waiting.length === 0) return
    // With no environment started (all starting, or none), none can free up: the wait is over at once.
    const running = this.all.size > this.starting.size
    const since = Math.max(this.queuedSince, this.readyAt)
    const now = performance.now()
    if (!running || now - since >= this.patienceMs) {
      while (
        this.starting.size * this.mostPlaces < this.waiting.length &&
        this.starting.size < this.startsAtOnce &&
        this.all.size < this.max
      )
        this.spawn()
    } else if (this.growTimer === undefined && this.all.size < this.max) {
      this.growTimer = setTimeout(
        () => {
          this.growTimer = undefined
          this.growSoon()
        },
        since + this.patienceMs - now,
      )
    }
  }

  private spawn(): void {
    const startedAt = performance.now()
    const env = this.create(this.hooks)
    this.all.add(env)
    this.starting.add(env)
    void env.ready.then((loadError) => {
      this.starting.delete(env)
      if (loadError === undefined) {
        this.readyAt = performance.now()
        this.patienceMs = this.readyAt - startedAt
        this.offer(env) // every place of the new environment, to waiting invocations first
      } else {
        // The oldest waiting invocation answers the load error; without one, nobody needs it.
        const next = this.waiting.shift()
        if (next) next(env)
        else this.discard(env)
      }
      this.growSoon()
    })
  }

  private forget(env: E): void {
    if (!this.all.delete(env)) return
    this.starting.delete(env)
    this.unspare(env)
    this.growSoon()
  }

  /** Idle environments, longest idle first. */
  private idle(): E[] {
    return [...this.spare].filter((env) => env.held === 0).sort((a, b) => a.idleSince - b.idleSince)
  }

  /** One timer per pool, for its longest-idle environment, while it has more than `warm`. */
  private scheduleRetirement(): void {
    if (this.retireTimer !== undefined || this.all.size <= this.sizing.warm) return
    const oldest = this.idle()[0]
    if (!oldest) return
    const due = oldest.idleSince + this.sizing.idleTimeoutMs - performance.now()
    this.retireTimer = setTimeout(() => this.retire(), Math.max(0, due))
    this.retireTimer.unref() // idle environments never keep the process alive
  }

  private retire(): void {
    this.retireTimer = undefined
    const now = performance.now()
    for (const env of this.idle()) {
      if (this.all.size <= this.sizing.warm || env.idleSince + this.sizing.idleTimeoutMs > now) break
      this.forget(env)
      void env.end()
    }
    this.scheduleRetirement()
  }
}

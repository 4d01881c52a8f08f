/**
 * Runs handlers in worker threads, Lambda-like: each worker is one execution
 * environment of one function, handles one invocation at a time and keeps
 * its module state between them. A function that throws becomes an error
 * response; one that times out, loops forever, floods a stream, outgrows its
 * memorySize or kills its thread has its worker terminated and replaced, and
 * the bridge keeps serving. A worker sees only its function's environment
 * variables (function-environment.ts). Worker threads share the bridge's
 * process: they contain faults, they are not a security boundary.
 */
import { randomUUID } from 'node:crypto'
import { getCompileCacheDir } from 'node:module'
import { availableParallelism } from 'node:os'
import { setFlagsFromString } from 'node:v8'
import { Worker, type ResourceLimits } from 'node:worker_threads'
import {
  DEFAULT_WARM_WORKERS,
  DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS,
  type WorkerPoolSettings,
} from '../project/settings.ts'
import type { HandlerLocation } from '../project/tool-services.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import { functionEnvironment } from './function-environment.ts'
import {
  functionError,
  type FunctionTarget,
  type Invocation,
  type InvocationTrace,
  type Invoker,
  type Outcome,
} from './invoker.ts'
import { DEFAULT_MAX_STREAM_BYTES } from './run-handler.ts'
import type { FromWorker, ToWorker, WorkerSetup } from './worker.ts'

const WORKER_SCRIPT = new URL('./worker-entry.js', import.meta.url)
/** Environments of one function starting at once. */
const STARTING_AT_ONCE = availableParallelism()
const MB = 1024 * 1024
const CREDIT: ToWorker = { type: 'credit' }

interface Running {
  finish(outcome: Outcome): void
  onChunk(text: string): void
}

interface EnvironmentOptions {
  setup: WorkerSetup
  memoryMb: number | undefined
  env: Record<string, string>
  logger: Logger
}

/** One worker thread and the invocation it is running, if any. */
class Environment {
  readonly worker: Worker
  /** Resolves with a load error message, or undefined once the handler is loaded. */
  readonly ready: Promise<string | undefined>
  running: Running | undefined
  dead = false
  private readonly options: EnvironmentOptions
  private readonly onDeath: (env: Environment) => void
  private markReady: (error: string | undefined) => void = () => {}
  /** The heap limit V8 gave the worker, as the worker measured it. */
  private heapLimitMb: number | undefined

  constructor(options: EnvironmentOptions, onDeath: (env: Environment) => void) {
    this.options = options
    this.onDeath = onDeath
    this.ready = new Promise((resolve) => (this.markReady = resolve))
    this.worker = new Worker(WORKER_SCRIPT, {
      workerData: options.setup,
      env: options.env,
      stdout: false,
      stderr: false,
      resourceLimits: resourceLimitsFor(options.memoryMb),
    })
    this.worker.on('message', (message: FromWorker) => this.take(message))
    this.worker.on('error', (err: Error & { code?: string }) =>
      this.die(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `it ran out of memory (${this.limits()})`
          : `${err.name}: ${err.message}`,
      ),
    )
    this.worker.on('exit', (code) => this.die(`its worker exited with code ${code}`))
  }

  private take(message: FromWorker): void {
    switch (message.type) {
      case 'ready':
        this.heapLimitMb = Math.round(message.heapLimitBytes / MB)
        return this.markReady(undefined)
      case 'load-error':
        this.dead = true // ended on purpose: the pool discards it
        this.markReady(message.message)
        return void this.worker.terminate()
      case 'chunk':
        this.worker.postMessage(CREDIT)
        return this.running?.onChunk(message.text)
      default: {
        const { memoryMb } = this.options
        if (memoryMb !== undefined && message.arrayBufferBytes > memoryMb * MB) {
          void this.worker.terminate()
          const kept = Math.round(message.arrayBufferBytes / MB)
          return this.die(
            `it ran out of memory (${kept} MB of Buffer/ArrayBuffer memory kept after the invocation; memorySize ${memoryMb} MB)`,
          )
        }
        return this.running?.finish(
          message.type === 'done'
            ? { ok: true, text: message.text }
            : message.type === 'too-large'
              ? { ok: false, kind: 'too-large', message: message.message }
              : functionError(message.errorType, message.errorMessage),
        )
      }
    }
  }

  private limits(): string {
    const heap = this.heapLimitMb === undefined ? '' : `heap limit ${this.heapLimitMb} MB`
    if (this.options.memoryMb === undefined) return heap || 'no memorySize'
    return `memorySize ${this.options.memoryMb} MB${heap && `, ${heap}`}`
  }

  private die(message: string): void {
    if (this.dead) return
    this.dead = true
    this.markReady(message)
    const { functionName } = this.options.setup
    if (this.running) {
      this.running.finish({ ok: false, kind: 'crash', message: `function "${functionName}" crashed: ${message}` })
    } else {
      this.options.logger.warn(
        { fn: functionName },
        `function "${functionName}": a worker thread ended between invocations (${message}); the next invocation starts a new one`,
      )
    }
    this.onDeath(this)
  }

  /** Ends the environment on purpose (timeout, load failure, shutdown): no crash to report. */
  end(): Promise<number> {
    this.dead = true
    return this.worker.terminate()
  }
}

/**
 * The environments of one function, at most `max` of them, started on
 * demand: one more only while invocations wait for an environment and fewer
 * are starting than wait, and whichever environment is free first (a new one
 * or one that finished) takes the oldest waiting invocation. Starting one is
 * CPU work, so no more start at once than the machine has cores: more would
 * only make each later. And one is started only for an invocation that has
 * waited as long as the last start took: one that an environment frees up
 * within that time would gain nothing from a new one (the common case for
 * short calls on a busy main thread), while a function that really holds its
 * environments gets more after that short wait. Idle ones are
 * used most recently freed first, so that the others stay idle and are ended
 * after the idle timeout; an environment running an invocation is never idle.
 */
class Pool {
  /** Free environments, the most recently freed last. */
  private readonly idle: Environment[] = []
  /** When each idle environment was freed. */
  private readonly idleSince = new WeakMap<Environment, number>()
  private readonly all = new Set<Environment>()
  private readonly starting = new Set<Environment>()
  private readonly waiting: { take: (env: Environment) => void; since: number }[] = []
  /** How long the last environment took to start, ms: how long an invocation waits before another starts for it. */
  private patienceMs = 0
  private growTimer: NodeJS.Timeout | undefined
  private readonly max: number
  private readonly sizing: WorkerPoolSettings
  private readonly create: (onDeath: (env: Environment) => void) => Environment
  private retireTimer: NodeJS.Timeout | undefined

  constructor(max: number, sizing: WorkerPoolSettings, create: (onDeath: (env: Environment) => void) => Environment) {
    this.max = max
    this.sizing = sizing
    this.create = create
  }

  get size(): number {
    return this.all.size
  }

  /** An environment that has started (or failed to: its `ready` says which). */
  acquire(): Promise<Environment> {
    const env = this.idle.pop()
    if (env) return Promise.resolve(env)
    return new Promise((resolve) => {
      this.waiting.push({ take: resolve, since: performance.now() })
      this.grow()
    })
  }

  release(env: Environment): void {
    if (env.dead) return
    const next = this.waiting.shift()
    if (next) return next.take(env)
    this.idle.push(env)
    this.idleSince.set(env, performance.now())
    this.scheduleRetirement()
  }

  /** Ends an environment (timeout, load failure); a waiting invocation gets a fresh one. */
  discard(env: Environment): void {
    if (!env.dead) void env.end()
    this.forget(env)
  }

  async close(): Promise<void> {
    clearTimeout(this.retireTimer)
    clearTimeout(this.growTimer)
    await Promise.all([...this.all].map((env) => env.end()))
  }

  private grow(): void {
    const now = performance.now()
    // Waiters are in arrival order: those that waited long enough come first. With no environment
    // started (all starting, or none), none can free up and every waiter is due at once.
    const running = this.all.size > this.starting.size
    let due = 0
    while (due < this.waiting.length && (!running || now - (this.waiting[due]?.since ?? now) >= this.patienceMs)) due++
    while (this.starting.size < Math.min(due, STARTING_AT_ONCE) && this.all.size < this.max) this.spawn()
    // The others are looked at again once the oldest of them has waited long enough.
    const next = this.waiting[due]
    if (next && this.growTimer === undefined && this.all.size < this.max) {
      this.growTimer = setTimeout(
        () => {
          this.growTimer = undefined
          this.grow()
        },
        next.since + this.patienceMs - now,
      )
    }
  }

  private spawn(): void {
    const startedAt = performance.now()
    const env = this.create((dead) => this.forget(dead))
    this.all.add(env)
    this.starting.add(env)
    void env.ready.then((loadError) => {
      this.starting.delete(env)
      if (loadError === undefined) {
        this.patienceMs = performance.now() - startedAt
        this.release(env)
      } else {
        // The oldest waiting invocation answers the load error; without one, nobody needs it.
        const next = this.waiting.shift()
        if (next) next.take(env)
        else this.discard(env)
      }
      this.grow()
    })
  }

  private forget(env: Environment): void {
    if (!this.all.delete(env)) return
    const at = this.idle.indexOf(env)
    if (at >= 0) this.idle.splice(at, 1)
    this.grow()
  }

  /** One timer per pool, for its longest-idle environment, while it has more than `warm`. */
  private scheduleRetirement(): void {
    if (this.retireTimer !== undefined || this.all.size <= this.sizing.warm) return
    const oldest = this.idle[0]
    if (!oldest) return
    const due = (this.idleSince.get(oldest) ?? 0) + this.sizing.idleTimeoutMs - performance.now()
    this.retireTimer = setTimeout(() => this.retire(), Math.max(0, due))
    this.retireTimer.unref() // idle environments never keep the process alive
  }

  private retire(): void {
    this.retireTimer = undefined
    const now = performance.now()
    for (;;) {
      const oldest = this.idle[0]
      if (!oldest || this.all.size <= this.sizing.warm) break
      if ((this.idleSince.get(oldest) ?? 0) + this.sizing.idleTimeoutMs > now) break
      this.idle.shift()
      this.all.delete(oldest)
      void oldest.end()
    }
    this.scheduleRetirement()
  }
}

/**
 * A worker's heap limits from the function's `memorySize`, as Lambda limits
 * an execution environment: past it, the environment is stopped and the
 * invocation answered with a crash. The young generation is kept small so
 * that many environments do not each grow a large one.
 */
function resourceLimitsFor(memoryMb: number | undefined): ResourceLimits | undefined {
  if (memoryMb === undefined) return undefined
  return {
    maxOldGenerationSizeMb: memoryMb,
    maxYoungGenerationSizeMb: Math.min(YOUNG_GENERATION_MB, Math.max(1, Math.floor(memoryMb / 8))),
  }
}
const YOUNG_GENERATION_MB = 8

/**
 * `--max-old-space-size` and its kin (from NODE_OPTIONS, say) are V8 flags of
 * the whole process, and V8 lets them override every worker's
 * resourceLimits: a 128 MB function would get the bridge's heap. Cleared
 * before any worker starts so that memorySize is each worker's limit; the
 * main thread's heap was sized when the process started and keeps its limit.
 */
function clearHeapSizeFlags(): void {
  for (const flag of ['--max-old-space-size=0', '--max-semi-space-size=0', '--max-heap-size=0'])
    setFlagsFromString(flag)
}

export interface WorkerThreadOptions {
  logger?: Logger
  /** Bytes one invocation may stream (default DEFAULT_MAX_STREAM_BYTES). */
  maxStreamBytes?: number
  /** Environments kept per function, and how long an idle one above that is kept (defaults: 1, 60 s). */
  sizing?: Partial<WorkerPoolSettings>
}

export class WorkerThreadInvoker implements Invoker<HandlerLocation> {
  private readonly pools = new Map<string, Pool>()
  private readonly baseDir: string
  private readonly logger: Logger
  private readonly maxStreamBytes: number
  private readonly sizing: WorkerPoolSettings

  constructor(baseDir: string, options: WorkerThreadOptions = {}) {
    this.baseDir = baseDir
    this.logger = options.logger ?? silentLogger
    this.maxStreamBytes = options.maxStreamBytes ?? DEFAULT_MAX_STREAM_BYTES
    this.sizing = {
      warm: options.sizing?.warm ?? DEFAULT_WARM_WORKERS,
      idleTimeoutMs: options.sizing?.idleTimeoutMs ?? DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS * 1000,
    }
    clearHeapSizeFlags()
  }

  async prepare(target: FunctionTarget<HandlerLocation>): Promise<string | undefined> {
    const pool = this.poolFor(target)
    const env = await pool.acquire()
    const loadError = await env.ready
    if (loadError) pool.discard(env)
    else pool.release(env)
    return loadError
  }

  async invoke({ target, event, onChunk, trace }: Invocation<HandlerLocation>): Promise<Outcome> {
    const pool = this.poolFor(target)
    const env = await pool.acquire()
    const loadError = await env.ready
    if (loadError) {
      pool.discard(env)
      return { ok: false, kind: 'unavailable', message: `function "${target.functionName}" cannot load: ${loadError}` }
    }
    return new Promise<Outcome>((resolve) => {
      // Fires even while the function floods a stream: chunk credit keeps the main thread's event loop turning.
      const timer = setTimeout(() => {
        pool.discard(env) // the only way to stop code that may never yield
        finish({
          ok: false,
          kind: 'timeout',
          message: `function "${target.functionName}" timed out after ${target.timeoutMs} ms`,
        })
      }, target.timeoutMs)
      const finish = (outcome: Outcome) => {
        if (env.running !== running) return
        clearTimeout(timer)
        env.running = undefined
        pool.release(env)
        resolve(outcome)
      }
      const running: Running = { finish, onChunk }
      env.running = running
      const message: ToWorker = { type: 'invoke', requestId: randomUUID(), timeoutMs: target.timeoutMs, event }
      if (trace !== undefined) this.traceInto(message, env, trace)
      env.worker.postMessage(message)
    })
  }

  /** Environments that have run an invocation: the first one in each is a cold start. */
  private readonly invoked = new WeakSet<Environment>()

  private traceInto(message: Extract<ToWorker, { type: 'invoke' }>, env: Environment, trace: InvocationTrace): void {
    message.traceHeaders = trace.headers
    trace.observed({ invocationId: message.requestId, coldStart: !this.invoked.has(env) })
    this.invoked.add(env)
  }

  /** Worker threads a function has now, starting or started. */
  environments(functionName: string): number {
    return this.pools.get(functionName)?.size ?? 0
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()))
    this.pools.clear()
  }

  private poolFor(target: FunctionTarget<HandlerLocation>): Pool {
    let pool = this.pools.get(target.functionName)
    if (!pool) {
      const options: EnvironmentOptions = {
        setup: {
          baseDir: this.baseDir,
          handler: target.location.handler,
          functionName: target.functionName,
          maxStreamBytes: this.maxStreamBytes,
          compileCacheDir: getCompileCacheDir(),
          measureOffHeap: target.memoryMb !== undefined,
        },
        memoryMb: target.memoryMb,
        env: functionEnvironment(target, this.baseDir),
        logger: this.logger,
      }
      pool = new Pool(target.concurrency, this.sizing, (onDeath) => new Environment(options, onDeath))
      this.pools.set(target.functionName, pool)
    }
    return pool
  }
}

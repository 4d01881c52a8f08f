/**
 * Runs handlers in worker threads, Lambda-like: each worker is one execution
 * environment of one function and keeps its module state between
 * invocations. By default it runs one invocation at a time, as Lambda does;
 * for a function whose invocations take microseconds, a worker is sent the
 * next ones while it runs one, and they wait in line there (call-pace.ts
 * says how many), so that messages between the threads travel in batches.
 * A function with `invocationsPerWorker: N` (for async handlers that mostly
 * wait) lets each worker hold up to N at once, and then the function has no
 * more workers than the machine has cores.
 *
 * An invocation that runs for long has the ones waiting in line behind it
 * taken back after GIVE_BACK_MS (by default), for another worker
 * (line-claims.ts).
 *
 * A function that throws becomes an error response; one that times out,
 * loops forever, floods a stream, outgrows its memorySize or kills its
 * thread has its worker terminated and replaced, and the bridge keeps
 * serving. When a worker ends, the invocations it had started are answered
 * with an error, once the worker has exited and every message it posted has
 * been read; those waiting in line behind them never started and go to
 * another worker. With several invocations per worker, one that times
 * out is answered at once and given up inside the worker (its stream
 * closed, its result dropped); only if the worker does not confirm that
 * within CANCEL_GRACE_MS (code that never yields) is the worker terminated.
 * A worker sees only its function's environment variables
 * (function-environment.ts). Worker threads share the bridge's process:
 * they contain faults, they are not a security boundary.
 */
import { randomUUID } from 'node:crypto'
import { getCompileCacheDir } from 'node:module'
import { setFlagsFromString } from 'node:v8'
import { Worker, type ResourceLimits } from 'node:worker_threads'
import {
  DEFAULT_WARM_WORKERS,
  DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS,
  type WorkerPoolSettings,
} from '../../project/settings.ts'
import type { HandlerLocation } from '../../project/tool-services.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { CallPace, MAX_IN_LINE } from './call-pace.ts'
import { LineClaims } from './line-claims.ts'
import type { FunctionLogSink } from '../function-console.ts'
import { functionEnvironment } from '../function-environment.ts'
import {
  functionError,
  type FunctionTarget,
  type Invocation,
  type InvocationTrace,
  type Invoker,
  type Outcome,
  type Sources,
} from '../invoker.ts'
import { DEFAULT_MAX_STREAM_BYTES } from '../run-handler.ts'
import { CORES, type EnvironmentHooks, Pool, type PooledEnvironment } from './worker-pool.ts'
import {
  post,
  read,
  type FromWorker,
  type InvocationEnd,
  type Posted,
  type ToWorker,
  type WorkerCall,
  type WorkerSetup,
} from './worker-messages.ts'

const WORKER_SCRIPT = new URL('./worker-entry.js', import.meta.url)
const MB = 1024 * 1024
/**
 * How long a worker holding several invocations has to confirm that it gave
 * up one that timed out. A worker whose event loop turns answers within
 * milliseconds; one that does not is stuck in code that never yields.
 */
export const CANCEL_GRACE_MS = 1000
/**
 * How long an invocation may run with others waiting in line behind it before they are taken back
 * for another worker: a line is for invocations that take microseconds (call-pace.ts), and one that
 * turns out slow should not hold the rest.
 */
export const GIVE_BACK_MS = 2

/** An invocation's id and trace context, when tracing is on. */
interface TracedCall {
  requestId: string
  traceHeaders: Readonly<Record<string, string>>
}

interface Running {
  /** When the invocation times out (performance.now()); in line, not yet known (infinite). */
  deadline: number
  /** Settles the call: undefined when it never started and goes to another worker. */
  finish(outcome: Outcome | undefined): void
  onChunk(text: string): void
  onLog: FunctionLogSink | undefined
  /** Answered before its worker said it ended (a timeout, or memory kept past memorySize). */
  answered?: boolean
}

interface EnvironmentOptions {
  setup: WorkerSetup
  memoryMb: number | undefined
  env: Record<string, string>
  logger: Logger
  timeoutMs: number
  /** Invocations the worker may run at once. */
  perWorker: number
  /** The function's pace, shared by its workers, when they run invocations in order (perWorker 1). */
  pace: CallPace | undefined
  /** How long the first in line may hold the others before they are taken back. */
  giveBackMs: number
}

/** One worker thread and the invocations it is running. */
class Environment implements PooledEnvironment {
  readonly worker: Worker
  /** Resolves with a load error message, or undefined once the handler is loaded. */
  readonly ready: Promise<string | undefined>
  /**
   * Invocations sent to the worker and not ended, oldest first: they share one timeout, so their
   * deadlines are in this order too. In order (pace), the first is the one running.
   */
  private readonly calls = new Map<number, Running>()
  /** Invocations answered with a timeout that the worker has not yet confirmed it gave up. */
  private readonly cancelling = new Set<number>()
  /** Places taken by the pool (invocations reserved, running, or being given up). */
  held = 0
  /** Whether the pool has it among those with a free place. */
  spare = false
  /** Waiting for the worker to confirm it gave up timed-out invocations: no new ones meanwhile. */
  paused = false
  /** When it last became idle (performance.now()). */
  idleSince = 0
  dead = false
  /** Why it is ending, once a fault ended it (undefined: alive, or ended on purpose). */
  private fault: string | undefined
  /**
   * The last invocation id given out. Ids are the environment's own: in order, few invocations apart
   * are ever pending at once, so their claims' cells never collide.
   */
  private lastId = 0
  /** In order: which invocations sent to the worker have started. */
  private readonly claims: LineClaims | undefined
  /** In order: when the first invocation not ended started, as far as this thread knows (performance.now()). */
  private headSince = 0
  private lineTimer: NodeJS.Timeout | undefined
  /** Its line was taken back from an invocation running long: none waits behind it until it ends. */
  private slow = false
  private readonly options: EnvironmentOptions
  private readonly hooks: EnvironmentHooks<Environment>
  private markReady: (error: string | undefined) => void = () => {}
  /** The heap limit V8 gave the worker, as the worker measured it. */
  private heapLimitMb: number | undefined
  /** One timer for every timeout of the environment, armed for the oldest invocation's deadline. */
  private timeoutTimer: NodeJS.Timeout | undefined
  private graceTimer: NodeJS.Timeout | undefined
  /** Invocations to send in the next batch (several per worker only). */
  private outbox: WorkerCall[] = []

  constructor(options: EnvironmentOptions, hooks: EnvironmentHooks<Environment>) {
    this.options = options
    this.hooks = hooks
    this.ready = new Promise((resolve) => (this.markReady = resolve))
    this.claims = options.pace && new LineClaims()
    const setup: WorkerSetup = { ...options.setup, claims: this.claims?.cells }
    this.worker = new Worker(WORKER_SCRIPT, {
      workerData: setup,
      env: options.env,
      stdout: false,
      stderr: false,
      resourceLimits: resourceLimitsFor(options.memoryMb),
    })
    this.worker.on('message', (posted: Posted<FromWorker>) => this.take(read(posted)))
    this.worker.on('error', (err: Error & { code?: string }) =>
      this.fail(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `it ran out of memory (${this.limits()})`
          : `${err.name}: ${err.message}`,
      ),
    )
    // Node reads every message the worker posted before it emits `exit`: only then is it known which
    // invocations ended and which one was running.
    this.worker.on('exit', (code) => {
      this.fail(`its worker exited with code ${code}`)
      this.settle()
    })
  }

  /** Places the pool may take in it: invocations running and waiting in line. */
  get places(): number {
    const { perWorker, pace } = this.options
    if (pace === undefined) return perWorker
    return this.slow ? 1 : pace.places()
  }

  /** Runs one invocation in this worker; the pool reserved its place. */
  run(
    event: unknown,
    onChunk: (text: string) => void,
    signal: AbortSignal | undefined,
    traced: TracedCall | undefined,
    onLog?: FunctionLogSink,
  ): Promise<Outcome | undefined> {
    const id = ++this.lastId
    const { timeoutMs, pace } = this.options
    return new Promise<Outcome | undefined>((resolve) => {
      // The caller cancelled: the worker aborts the handler's context.signal; the call still ends and
      // answers. Posted a turn later, so that it follows the invocation's own message (flush).
      const abort = () =>
        setImmediate(() => {
          if (this.calls.has(id) && !this.dead) this.post({ type: 'abort', id })
        })
      const finish = (outcome: Outcome | undefined) => {
        signal?.removeEventListener('abort', abort)
        resolve(outcome)
      }
      if (signal?.aborted) abort()
      else signal?.addEventListener('abort', abort, { once: true })
      const first = this.calls.size === 0
      const now = performance.now()
      // In order, an invocation's time starts when the one before it ends (take).
      const deadline = first || !pace ? now + timeoutMs : Number.POSITIVE_INFINITY
      this.calls.set(id, { deadline, finish, onChunk, onLog })
      this.armTimeout()
      if (first) this.headSince = now
      else this.watchLine()
      this.claims?.sent(id)
      const call: WorkerCall = traced
        ? { id, requestId: traced.requestId, timeoutMs, event, traceHeaders: traced.traceHeaders }
        : { id, requestId: randomUUID(), timeoutMs, event }
      if (onLog) call.logs = true
      // An idle worker is woken at once; invocations for a busy one taken in one turn of the event
      // loop go to it in one message.
      if (first) return this.post({ type: 'invoke', calls: [call] })
      if (this.outbox.length === 0) setImmediate(() => this.flush())
      this.outbox.push(call)
    })
  }

  private flush(): void {
    const calls = this.outbox
    this.outbox = []
    if (!this.dead) this.post({ type: 'invoke', calls })
  }

  private post(message: ToWorker): void {
    this.worker.postMessage(post(message))
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
        if (!this.dead) this.post({ type: 'credit', id: message.id })
        return this.calls.get(message.id)?.onChunk(message.text)
      case 'log':
        return this.calls.get(message.id)?.onLog?.(message.level, message.text)
      case 'cancelled':
        for (const id of message.ids) if (this.cancelling.delete(id)) this.hooks.onFree(this)
        if (this.cancelling.size === 0) {
          clearTimeout(this.graceTimer)
          this.graceTimer = undefined
          this.paused = false
          this.hooks.onResume(this)
        }
        return
      case 'ended': {
        const { memoryMb, pace } = this.options
        if (memoryMb !== undefined && message.arrayBufferBytes > memoryMb * MB && !this.dead) {
          void this.worker.terminate()
          const kept = Math.round(message.arrayBufferBytes / MB)
          const fault = `it ran out of memory (${kept} MB of Buffer/ArrayBuffer memory kept after the invocation; memorySize ${memoryMb} MB)`
          // The invocations that kept it get the error. In order, the worker starts none after it, and
          // those in line go to another worker once it has exited (settle).
          for (const end of message.ends) this.answer(end.id, this.crashed(fault))
          return this.fail(fault)
        }
        for (const end of message.ends) {
          pace?.observe(end.us)
          const running = this.calls.get(end.id)
          if (!running) continue // given up already (timed out, several per worker)
          this.calls.delete(end.id)
          if (!running.answered) running.finish(outcomeOf(end))
          this.hooks.onFree(this)
        }
        if (pace) this.startNextClock()
        return
      }
    }
  }

  /** In order: the invocation now first in line started when the one before it ended. */
  private startNextClock(): void {
    this.slow = false
    const head = this.calls.values().next().value
    if (!head || head.deadline !== Number.POSITIVE_INFINITY) return
    this.headSince = performance.now()
    head.deadline = this.headSince + this.options.timeoutMs
    this.armTimeout()
    this.watchLine()
  }

  /** In order, with invocations in line: one timer, for when the first may have held them too long. */
  private watchLine(): void {
    if (!this.claims || this.lineTimer !== undefined || this.dead || this.calls.size < 2) return
    const due = this.headSince + this.options.giveBackMs - performance.now()
    this.lineTimer = setTimeout(() => this.checkLine(), Math.max(0, due))
    this.lineTimer.unref()
  }

  private checkLine(): void {
    this.lineTimer = undefined
    if (this.dead || this.calls.size < 2) return
    if (performance.now() - this.headSince < this.options.giveBackMs) return this.watchLine() // a newer one runs: its turn
    this.slow = true // first: the places taken back go to other workers, not to its line again
    let first = true
    for (const [id, running] of this.calls) {
      if (first) {
        first = false
        continue
      }
      // One that started is the one running: the first has ended, and its end is yet to be read.
      if (!this.claims!.takeBack(id)) continue
      this.calls.delete(id)
      running.finish(undefined)
      this.hooks.onFree(this)
    }
  }

  /** Answers an invocation the worker has not ended, keeping it until the worker says it did or exits. */
  private answer(id: number, outcome: Outcome): void {
    const running = this.calls.get(id)
    if (!running || running.answered) return
    running.answered = true
    running.finish(outcome)
  }

  private crashed(fault: string): Outcome {
    return { ok: false, kind: 'crash', message: `function "${this.options.setup.functionName}" crashed: ${fault}` }
  }

  private armTimeout(): void {
    if (this.timeoutTimer !== undefined || this.dead) return
    const oldest = this.calls.values().next().value
    if (!oldest || oldest.deadline === Number.POSITIVE_INFINITY) return
    this.timeoutTimer = setTimeout(() => this.expire(), Math.max(0, Math.ceil(oldest.deadline - performance.now())))
    this.timeoutTimer.unref() // the worker keeps the process alive while it runs
  }

  /** Answers every invocation past its deadline with a timeout, and stops it. */
  private expire(): void {
    this.timeoutTimer = undefined
    const now = performance.now()
    const expired: number[] = []
    for (const [id, running] of this.calls) {
      if (running.deadline > now) break
      expired.push(id)
    }
    if (expired.length === 0) return this.armTimeout()
    const { functionName } = this.options.setup
    const timedOut: Outcome = {
      ok: false,
      kind: 'timeout',
      message: `function "${functionName}" timed out after ${this.options.timeoutMs} ms`,
    }
    if (this.options.pace) {
      // Ending the worker is the only way to stop code that may never yield. The invocations in line
      // behind it never started: they go to another worker once it has exited (settle).
      this.answer(expired[0]!, timedOut)
      void this.worker.terminate()
      return this.fail(`it was ended when an invocation timed out after ${this.options.timeoutMs} ms`)
    }
    for (const id of expired) {
      this.calls.get(id)?.finish(timedOut)
      this.calls.delete(id)
      this.cancelling.add(id)
    }
    this.post({ type: 'cancel', ids: expired })
    if (!this.paused) {
      this.paused = true
      this.hooks.onPause(this)
    }
    this.graceTimer ??= setTimeout(() => this.unresponsive(), CANCEL_GRACE_MS)
    this.armTimeout()
  }

  /** The worker did not give up a timed-out invocation: its event loop is stuck. */
  private unresponsive(): void {
    this.graceTimer = undefined
    if (this.cancelling.size === 0 || this.dead) return
    void this.worker.terminate()
    this.fail(
      `a timed-out invocation did not give its worker back within ${CANCEL_GRACE_MS} ms (code that never yields), so the worker was ended`,
    )
  }

  private limits(): string {
    const heap = this.heapLimitMb === undefined ? '' : `heap limit ${this.heapLimitMb} MB`
    if (this.options.memoryMb === undefined) return heap || 'no memorySize'
    return `memorySize ${this.options.memoryMb} MB${heap && `, ${heap}`}`
  }

  /** A fault ends the environment: it takes nothing more; its invocations are settled at exit. */
  private fail(message: string): void {
    if (this.dead) return
    this.dead = true
    this.fault = message
    this.stopTimers()
    this.markReady(message)
    this.hooks.onDeath(this)
  }

  /**
   * After the worker exited from a fault: invocations that had started and not ended get the error.
   * In order, those it never started go to another worker; only the one running had started (it
   * may have been answered already: timed out, or kept too much memory).
   */
  private settle(): void {
    if (this.fault === undefined) return // ended on purpose
    const { functionName } = this.options.setup
    if (this.calls.size === 0) {
      return this.options.logger.warn(
        { fn: functionName },
        `function "${functionName}": a worker thread ended between invocations (${this.fault}); the next invocation starts a new one`,
      )
    }
    const crashed = this.crashed(this.fault)
    for (const [id, running] of this.calls) {
      if (running.answered) continue
      running.finish(this.claims?.takeBack(id) ? undefined : crashed)
    }
    this.calls.clear()
  }

  private stopTimers(): void {
    clearTimeout(this.timeoutTimer)
    clearTimeout(this.graceTimer)
    clearTimeout(this.lineTimer)
    this.timeoutTimer = undefined
    this.graceTimer = undefined
    this.lineTimer = undefined
  }

  /** Ends the environment on purpose (load failure, shutdown, idle): no crash to report. */
  end(): Promise<number> {
    this.dead = true
    this.stopTimers()
    return this.worker.terminate()
  }
}

function outcomeOf(end: InvocationEnd): Outcome {
  switch (end.type) {
    case 'done':
      return { ok: true, text: end.text }
    case 'too-large':
      return { ok: false, kind: 'too-large', message: end.message }
    case 'error':
      return functionError(end.errorType, end.errorMessage)
  }
}

/**
 * A worker's heap limits from the function's `memorySize`, as Lambda limits
 * an execution environment: past it, the environment is stopped and the
 * invocations it held answered with a crash. The young generation is kept
 * small so that many environments do not each grow a large one.
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

/**
 * How many workers a function may have: one per invocation in flight when
 * each holds one (Lambda's model), else enough for its `concurrency` but no
 * more than the machine has cores, as more threads than cores only take
 * turns.
 */
export function maxWorkers(concurrency: number, perWorker: number, cores = CORES): number {
  if (perWorker <= 1) return concurrency
  return Math.max(1, Math.min(Math.ceil(concurrency / perWorker), cores))
}

export interface WorkerThreadOptions {
  logger?: Logger
  /** Bytes one invocation may stream (default DEFAULT_MAX_STREAM_BYTES). */
  maxStreamBytes?: number
  /** Environments kept per function, and how long an idle one above that is kept (defaults: 0, 60 s). */
  sizing?: Partial<WorkerPoolSettings>
  /** How long an invocation may hold those in line behind it (default GIVE_BACK_MS); the tests lengthen it to see a line settled at exit. */
  giveBackMs?: number
}

export class WorkerThreadInvoker implements Invoker<HandlerLocation> {
  private readonly pools = new Map<string, Pool<Environment>>()
  /** Pools of code replaced by a reload, finishing what they had taken; closed with the invoker. */
  private readonly replaced = new Set<Pool<Environment>>()
  private readonly baseDir: string
  private readonly logger: Logger
  private readonly maxStreamBytes: number
  private readonly giveBackMs: number
  private readonly sizing: WorkerPoolSettings

  constructor(baseDir: string, options: WorkerThreadOptions = {}) {
    this.baseDir = baseDir
    this.logger = options.logger ?? silentLogger
    this.maxStreamBytes = options.maxStreamBytes ?? DEFAULT_MAX_STREAM_BYTES
    this.giveBackMs = options.giveBackMs ?? GIVE_BACK_MS
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
    // The handler loads. Beyond --warm-workers, the environment of this check is not kept: as on
    // Lambda, a function starts cold and idles at no cost until its first invocation.
    if (loadError || pool.size > this.sizing.warm) pool.discard(env)
    else pool.release(env)
    return loadError
  }

  async invoke({ target, event, onChunk, signal, trace, onLog }: Invocation<HandlerLocation>): Promise<Outcome> {
    const pool = this.poolFor(target)
    for (;;) {
      const env = await pool.acquire()
      const loadError = await env.ready
      if (loadError) {
        pool.discard(env)
        return {
          ok: false,
          kind: 'unavailable',
          message: `function "${target.functionName}" cannot load: ${loadError}`,
        }
      }
      // It may have ended between being handed out and now (its other invocation crashed it): take another.
      if (env.dead) continue
      const traced = trace && { requestId: randomUUID(), traceHeaders: trace.headers }
      const outcome = await env.run(event, onChunk, signal, traced, onLog)
      // Undefined: it waited in line and never started there (its worker ended, or its line was taken back).
      if (!outcome) continue
      if (trace && traced) this.observeRan(env, trace, traced.requestId)
      return outcome
    }
  }

  /**
   * Puts a function's code as it is on disk now in service (`toolbridge dev`, on a change): a new
   * worker loads it first. If it cannot load, the function's workers keep serving the code they have
   * and the load error is returned; otherwise new invocations go to workers of the new code and the
   * old workers end once the invocations they have taken are answered.
   */
  async reload(target: FunctionTarget<HandlerLocation>, sources?: Sources): Promise<string | undefined> {
    const fresh = this.newPool(target, sources)
    const env = await fresh.acquire()
    const loadError = await env.ready
    if (loadError) {
      fresh.discard(env)
      await fresh.close()
      return loadError
    }
    fresh.release(env)
    const old = this.pools.get(target.functionName)
    this.pools.set(target.functionName, fresh)
    for (const done of this.replaced) if (done.size === 0) this.replaced.delete(done)
    if (old) {
      old.replace()
      this.replaced.add(old)
    }
    return undefined
  }

  /** Environments that have run an invocation: the first one in each is a cold start. */
  private readonly invoked = new WeakSet<Environment>()

  /**
   * Told once an invocation has an outcome, by the environment that ran it: one taken back from a
   * line and run elsewhere is not reported by the first. A worker runs its calls in order and answers
   * each before starting the next, so the first outcome an environment gives is its first call's.
   */
  private observeRan(env: Environment, trace: InvocationTrace, requestId: string): void {
    trace.observed({ invocationId: requestId, coldStart: !this.invoked.has(env) })
    this.invoked.add(env)
  }

  /** Worker threads a function has now, starting or started. */
  environments(functionName: string): number {
    return this.pools.get(functionName)?.size ?? 0
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values(), ...this.replaced].map((pool) => pool.close()))
    this.pools.clear()
    this.replaced.clear()
  }

  private poolFor(target: FunctionTarget<HandlerLocation>): Pool<Environment> {
    let pool = this.pools.get(target.functionName)
    if (!pool) {
      pool = this.newPool(target)
      this.pools.set(target.functionName, pool)
    }
    return pool
  }

  private newPool(target: FunctionTarget<HandlerLocation>, sources?: Sources): Pool<Environment> {
    const perWorker = target.invocationsPerWorker ?? 1
    const options: EnvironmentOptions = {
      setup: {
        baseDir: this.baseDir,
        handler: target.location.handler,
        functionName: target.functionName,
        maxStreamBytes: this.maxStreamBytes,
        compileCacheDir: getCompileCacheDir(),
        offHeapLimitBytes: target.memoryMb === undefined ? undefined : target.memoryMb * MB,
        claims: undefined, // each environment's own
        sources,
      },
      memoryMb: target.memoryMb,
      env: functionEnvironment(target, this.baseDir),
      logger: this.logger,
      timeoutMs: target.timeoutMs,
      perWorker,
      pace: perWorker === 1 ? new CallPace() : undefined,
      giveBackMs: this.giveBackMs,
    }
    return new Pool(
      maxWorkers(target.concurrency, perWorker),
      // Calls that prove quick wait in line: a burst on a cold function starts one worker for the
      // first 1 + MAX_IN_LINE, and more once it has started only if they still wait (worker-pool.ts).
      options.pace ? 1 + MAX_IN_LINE : perWorker,
      this.sizing,
      (hooks) => new Environment(options, hooks),
    )
  }
}

/**
 * Runs handlers in worker threads, Lambda-like: each worker is one execution
 * environment of one function, handles one invocation at a time and keeps
 * its module state between them. A function that throws becomes an error
 * response; one that times out, loops forever or kills its thread has its
 * worker terminated and replaced, and the bridge keeps serving.
 */
import { randomUUID } from 'node:crypto'
import { Worker, type ResourceLimits } from 'node:worker_threads'
import { functionError, type FunctionTarget, type Invocation, type Invoker, type Outcome } from './invoker.ts'
import type { FromWorker, ToWorker, WorkerSetup } from './worker.ts'

// The build rewrites import specifiers, not URLs: from the package, this module and the worker are .js.
const WORKER_SCRIPT = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url)

interface Running {
  finish(outcome: Outcome): void
  onChunk(text: string): void
}

/** One worker thread and the invocation it is running, if any. */
class Environment {
  readonly worker: Worker
  /** Resolves with a load error message, or undefined once the handler is loaded. */
  readonly ready: Promise<string | undefined>
  running: Running | undefined
  dead = false

  constructor(setup: WorkerSetup, resourceLimits: ResourceLimits | undefined, onDeath: (env: Environment) => void) {
    this.worker = new Worker(WORKER_SCRIPT, { workerData: setup, stdout: false, stderr: false, resourceLimits })
    let markReady: (error: string | undefined) => void
    this.ready = new Promise((resolve) => (markReady = resolve))
    const die = (message: string) => {
      if (this.dead) return
      this.dead = true
      markReady(message)
      this.running?.finish({ ok: false, kind: 'crash', message: `function "${setup.functionName}" crashed: ${message}` })
      onDeath(this)
    }
    this.worker.on('message', (message: FromWorker) => {
      switch (message.type) {
        case 'ready':
          return markReady(undefined)
        case 'load-error':
          markReady(message.message)
          return void this.worker.terminate()
        case 'chunk':
          return this.running?.onChunk(message.text)
        case 'done':
          return this.running?.finish({ ok: true, text: message.text })
        case 'error':
          return this.running?.finish(functionError(message.errorType, message.errorMessage))
      }
    })
    this.worker.on('error', (err: Error & { code?: string }) =>
      die(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `it ran out of memory (memorySize ${resourceLimits?.maxOldGenerationSizeMb} MB)` : `${err.name}: ${err.message}`),
    )
    this.worker.on('exit', (code) => die(`its worker exited with code ${code}`))
  }
}

/** The environments of one function, at most `concurrency` of them. */
class Pool {
  private readonly idle: Environment[] = []
  private readonly all = new Set<Environment>()
  private readonly waiting: ((env: Environment) => void)[] = []
  private readonly setup: WorkerSetup
  private readonly max: number
  private readonly resourceLimits: ResourceLimits | undefined

  constructor(setup: WorkerSetup, max: number, resourceLimits: ResourceLimits | undefined) {
    this.setup = setup
    this.max = max
    this.resourceLimits = resourceLimits
  }

  acquire(): Promise<Environment> {
    const env = this.idle.pop()
    if (env) return Promise.resolve(env)
    if (this.all.size < this.max) return Promise.resolve(this.spawn())
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  release(env: Environment): void {
    if (env.dead) return
    const next = this.waiting.shift()
    if (next) next(env)
    else this.idle.push(env)
  }

  /** Ends an environment (timeout, load failure); a waiting invocation gets a fresh one. */
  discard(env: Environment): void {
    if (!env.dead) {
      env.dead = true
      void env.worker.terminate()
    }
    this.forget(env)
  }

  spawn(): Environment {
    const env = new Environment(this.setup, this.resourceLimits, (dead) => this.forget(dead))
    this.all.add(env)
    return env
  }

  async close(): Promise<void> {
    await Promise.all([...this.all].map((env) => env.worker.terminate()))
  }

  private forget(env: Environment): void {
    if (!this.all.delete(env)) return
    const at = this.idle.indexOf(env)
    if (at >= 0) this.idle.splice(at, 1)
    const next = this.waiting.shift()
    if (next) next(this.spawn())
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
  return { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(YOUNG_GENERATION_MB, Math.max(1, Math.floor(memoryMb / 8))) }
}
const YOUNG_GENERATION_MB = 8

export class WorkerThreadInvoker implements Invoker {
  private readonly pools = new Map<string, Pool>()
  private readonly baseDir: string

  constructor(baseDir: string) {
    this.baseDir = baseDir
  }

  async prepare(target: FunctionTarget): Promise<string | undefined> {
    if (!target.handler) return 'it has no "handler:" in serverless.yml'
    const pool = this.poolFor(target)
    const env = await pool.acquire()
    const loadError = await env.ready
    if (loadError) pool.discard(env)
    else pool.release(env)
    return loadError
  }

  async invoke({ target, event, onChunk }: Invocation): Promise<Outcome> {
    if (!target.handler) return { ok: false, kind: 'unavailable', message: `function "${target.functionName}" has no handler` }
    const pool = this.poolFor(target)
    const env = await pool.acquire()
    const loadError = await env.ready
    if (loadError) {
      pool.discard(env)
      return { ok: false, kind: 'unavailable', message: `function "${target.functionName}" cannot load: ${loadError}` }
    }
    return new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => {
        pool.discard(env) // the only way to stop code that may never yield
        finish({ ok: false, kind: 'timeout', message: `function "${target.functionName}" timed out after ${target.timeoutMs} ms` })
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
      env.worker.postMessage(message)
    })
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()))
    this.pools.clear()
  }

  private poolFor(target: FunctionTarget): Pool {
    let pool = this.pools.get(target.functionName)
    if (!pool) {
      const setup: WorkerSetup = { baseDir: this.baseDir, handler: target.handler!, functionName: target.functionName }
      pool = new Pool(setup, target.concurrency, resourceLimitsFor(target.memoryMb))
      this.pools.set(target.functionName, pool)
    }
    return pool
  }
}

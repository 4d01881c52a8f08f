/**
 * The one retrier for the whole project, shaped like kafkajs's `src/retry/index.js`:
 * `createRetry(options)` returns a function that runs `fn(bail, retryCount,
 * retryTime)` until it resolves, waiting a jittered, exponentially growing
 * time between attempts. Used by transport reconnects and Lambda throttling.
 *
 * What is never retried: a ToolbridgeError (or anything) with
 * `retriable: false`, and programming errors (TypeError, ReferenceError,
 * SyntaxError, RangeError) — trying again cannot fix a bug. Anything else,
 * such as a socket error, is retried until `retries` runs out; then the
 * retrier rejects with a RetriesExhaustedError holding the last error as
 * `cause`.
 *
 * An error that carries `retryAfterMs` (a server's Retry-After, such as
 * Lambda's `retryAfterSeconds`) makes the next wait at least that long.
 */
import { isToolbridgeError, ToolbridgeError } from '../../shared/errors.ts'

export interface RetryOptions {
  /** Attempts after the first one; `Infinity` retries until bailed or aborted. */
  retries?: number
  /** Wait before the first retry, in ms (before jitter). */
  initialRetryTime?: number
  /** Each wait is the previous one times this. */
  multiplier?: number
  /** Jitter: each wait is drawn from ±factor around its value (0.2 → ±20 %). */
  factor?: number
  /** No wait is longer than this, in ms. */
  maxRetryTime?: number
}

export const DEFAULT_RETRY: Required<RetryOptions> = {
  retries: 5,
  initialRetryTime: 300,
  multiplier: 2,
  factor: 0.2,
  maxRetryTime: 30_000,
}

/** Stops retrying: the retrier rejects with `error` at once. */
export type Bail = (error?: unknown) => never

export type Attempt<T> = (bail: Bail, retryCount: number, retryTime: number) => Promise<T>

export interface RetryHooks {
  /** Aborting stops the retrier while it waits; it rejects with the signal's reason. */
  signal?: AbortSignal
  /** Called before each wait, e.g. to log. */
  onRetry?: (error: unknown, retryCount: number, retryTime: number) => void
}

export type Retrier = <T>(fn: Attempt<T>, hooks?: RetryHooks) => Promise<T>

/** Retries ran out: `cause` is the last error. Never retried itself, so nested retriers do not multiply. */
export class RetriesExhaustedError extends ToolbridgeError {
  readonly retryCount: number
  readonly retryTime: number

  constructor(cause: unknown, retryCount: number, retryTime: number) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    super(isToolbridgeError(cause) ? cause.kind : 'unavailable', `gave up after ${retryCount} retries: ${reason}`, {
      cause,
      retriable: false,
    })
    this.name = 'RetriesExhaustedError'
    this.retryCount = retryCount
    this.retryTime = retryTime
  }
}

/**
 * A failed attempt worth another (throttled, a 5xx, a refused connection):
 * what an attempt throws to be retried, waiting at least `retryAfterMs`.
 */
export class RetryableAttempt extends ToolbridgeError {
  readonly retryAfterMs: number

  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super('unavailable', message, { cause: options.cause, retriable: true })
    this.name = 'RetryableAttempt'
    this.retryAfterMs = options.retryAfterMs ?? 0
  }
}

const PROGRAMMING_ERRORS = new Set(['TypeError', 'ReferenceError', 'SyntaxError', 'RangeError'])

/** Whether trying again could help: not a bug, and not marked `retriable: false`. */
export function isRetriable(error: unknown): boolean {
  if (error instanceof Error && PROGRAMMING_ERRORS.has(error.name)) return false
  if (typeof error === 'object' && error !== null && 'retriable' in error) return error.retriable !== false
  return true
}

/** The wait a failed attempt asked for (its `retryAfterMs`), or 0. */
export function retryAfterMs(error: unknown): number {
  if (typeof error !== 'object' || error === null || !('retryAfterMs' in error)) return 0
  const ms = error.retryAfterMs
  return typeof ms === 'number' && ms > 0 ? ms : 0
}

/** A wait of `retryTime` ± `factor`, as kafkajs draws it. */
const jitter = (factor: number, retryTime: number): number => {
  const delta = factor * retryTime
  return Math.ceil(retryTime - delta + Math.random() * 2 * delta)
}

/** The wait before the retry after one that waited `retryTime`. */
export const nextRetryTime = (options: Required<RetryOptions>, retryTime: number): number =>
  Math.min(jitter(options.factor, retryTime) * options.multiplier, options.maxRetryTime)

const BAILED = Symbol('bailed')

export function createRetry(options: RetryOptions = {}): Retrier {
  const config: Required<RetryOptions> = { ...DEFAULT_RETRY, ...options }
  if (!(config.retries >= 0)) throw new RangeError(`retry: "retries" must be >= 0, got ${config.retries}`)

  return async function retry<T>(fn: Attempt<T>, hooks: RetryHooks = {}): Promise<T> {
    const { signal, onRetry } = hooks
    let bailed: { error: unknown } | undefined
    const bail: Bail = (error?: unknown) => {
      bailed = { error: error ?? new ToolbridgeError('unavailable', 'retry: bailed out') }
      throw BAILED
    }
    let retryTime = Math.min(jitter(config.factor, config.initialRetryTime), config.maxRetryTime)
    for (let retryCount = 0; ; retryCount++) {
      signal?.throwIfAborted()
      try {
        return await fn(bail, retryCount, retryTime)
      } catch (error) {
        if (bailed) throw bailed.error
        if (!isRetriable(error)) throw error
        if (retryCount >= config.retries) throw new RetriesExhaustedError(error, retryCount, retryTime)
        const waitMs = Math.max(retryTime, retryAfterMs(error))
        onRetry?.(error, retryCount, waitMs)
        await wait(waitMs, signal)
        retryTime = nextRetryTime(config, retryTime)
      }
    }
  }
}

/** setTimeout that an AbortSignal cuts short (rejecting with its reason). */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** A broker's first connection: a few quick tries (a broker still starting), then give up. */
export const BROKER_CONNECT_RETRY: RetryOptions = {
  retries: 5,
  initialRetryTime: 200,
  multiplier: 2,
  factor: 0.2,
  maxRetryTime: 2_000,
}

/** A lost broker connection: tried until it works, never more than 2 s apart, so a restarted broker is found quickly. */
export const BROKER_RECONNECT_RETRY: RetryOptions = {
  retries: Number.POSITIVE_INFINITY,
  initialRetryTime: 100,
  multiplier: 2,
  factor: 0.2,
  maxRetryTime: 2_000,
}

/**
 * Jittered exponential backoff, and the loop that producers and consumers use
 * to (re)attach to their topic: try, wait, try again.
 */
import { isPulsarError, PulsarError } from './errors.ts'

export interface BackoffOptions {
  /** First wait, in ms. */
  initialMs: number
  /** No wait longer than this, in ms: a restarted broker is found within this of coming back. */
  maxMs: number
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 100, maxMs: 2_000 }

export class Backoff {
  private readonly options: BackoffOptions
  private current: number

  constructor(options: BackoffOptions) {
    this.options = options
    this.current = options.initialMs
  }

  /** The next wait: ±20 % around a value that doubles up to maxMs. */
  next(): number {
    const wait = this.current * (0.8 + Math.random() * 0.4)
    this.current = Math.min(this.current * 2, this.options.maxMs)
    return Math.min(wait, this.options.maxMs)
  }
}

export interface AttachLoop {
  backoff: BackoffOptions
  /** Give up on the first non-retriable error, or when this passes (epoch ms); undefined: retry forever. */
  deadline: number | undefined
  /** Stop when this turns true (the producer or consumer was closed). */
  stopped(): boolean
  onRetry(error: unknown, attempt: number, waitMs: number): void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export async function attachWithRetry(attempt: () => Promise<void>, loop: AttachLoop): Promise<void> {
  const backoff = new Backoff(loop.backoff)
  for (let n = 1; ; n++) {
    if (loop.stopped()) throw new PulsarError('AlreadyClosed', 'closed while connecting', { retriable: false })
    try {
      return await attempt()
    } catch (err) {
      const retriable = !isPulsarError(err) || err.retriable
      const wait = backoff.next()
      if (loop.deadline !== undefined && (!retriable || Date.now() + wait > loop.deadline)) throw err
      loop.onRetry(err, n, wait)
      await sleep(wait)
    }
  }
}

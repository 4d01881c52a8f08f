/**
 * The calls the gateway is answering, from admission to close: each holds a
 * slot of the in-flight cap while it runs, learns when its caller goes away,
 * and is waited for (or, past a deadline, given up) when the gateway closes.
 */
import type { ServerResponse } from 'node:http'
import { ToolbridgeError } from '../../shared/errors.ts'
import { InFlightCap } from './admission.ts'

const abandonedError = () =>
  new ToolbridgeError('unavailable', 'toolbridge stopped before this call was answered: try again', { retriable: true })

export class GatewayCalls {
  private readonly cap: InFlightCap
  /** Aborted by settle() for the calls it stops waiting for. */
  private readonly abandon = new AbortController()
  /** Calls being answered: settle() lets them finish. */
  private readonly active = new Set<Promise<void>>()
  /** Shutting down: routes that run tools refuse new calls. */
  draining = false

  constructor(maxInFlight: number) {
    this.cap = new InFlightCap(maxInFlight)
  }

  get inFlight(): number {
    return this.cap.inFlight
  }

  get max(): number {
    return this.cap.max
  }

  /**
   * Runs one call on `res` in a slot of the cap (a 429 HttpError when none is free). `gone` is
   * aborted when the caller goes away before the answer is written; its slot is freed at once.
   */
  run(res: ServerResponse, call: (gone: AbortController) => Promise<void>): Promise<void> {
    const release = this.cap.enter()
    const gone = new AbortController()
    res.once('close', () => {
      release()
      if (!res.writableFinished) gone.abort()
    })
    const running = call(gone)
    const tracked = running.catch(() => {}).finally(release)
    this.active.add(tracked)
    void tracked.then(() => this.active.delete(tracked))
    return running
  }

  /** The call's answer, or an `unavailable` error once settle() stops waiting for it. */
  untilAbandoned(call: Promise<string>): Promise<string> {
    const { signal } = this.abandon
    if (signal.aborted) return Promise.reject(abandonedError())
    return new Promise((resolve, reject) => {
      const onAbandon = () => reject(abandonedError())
      signal.addEventListener('abort', onAbandon, { once: true })
      call.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbandon))
    })
  }

  /** Waits for the calls in flight; with `abandonAfterMs`, those still unanswered by then get an error. */
  async settle(abandonAfterMs: number | undefined): Promise<void> {
    this.draining = true
    const timer = abandonAfterMs === undefined ? undefined : setTimeout(() => this.abandon.abort(), abandonAfterMs)
    await Promise.allSettled(this.active)
    clearTimeout(timer)
  }
}

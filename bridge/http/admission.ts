/**
 * How many HTTP calls the gateway takes on, and when each goes to the broker.
 *
 * - A cap on calls in flight (/tools/<tool> and /mcp together): past it the
 *   gateway answers 429 with Retry-After rather than holding more bodies
 *   and sockets.
 * - Per service, at most its `concurrency` calls are on the broker at once;
 *   the others wait here, in order. A request on the broker cannot be taken
 *   back, but one still waiting here can: when its caller goes away it is
 *   dropped without ever being sent, so callers that gave up do not keep
 *   the function busy for the callers that did not. (With replicas on a real
 *   broker, one gateway then sends a service no more than one replica
 *   takes at once.)
 */
import { ToolbridgeError } from '../../shared/errors.ts'
import { ToolCallTimeoutError } from '../trustgraph/request-client.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { HttpError } from './responses.ts'

/** What a refused caller is told to wait before trying again. */
const RETRY_AFTER_SECONDS = 1

export class InFlightCap {
  private taken = 0
  readonly max: number

  constructor(max: number) {
    this.max = max
  }

  get inFlight(): number {
    return this.taken
  }

  /** A release function (safe to call more than once), or a 429 HttpError when the cap is reached. */
  enter(): () => void {
    if (this.taken >= this.max) {
      throw new HttpError(429, `too many calls in flight (${this.max}); try again shortly`, {
        'retry-after': String(RETRY_AFTER_SECONDS),
      })
    }
    this.taken++
    let released = false
    return () => {
      if (released) return
      released = true
      this.taken--
    }
  }
}

/** The caller went away while its call waited: it was never sent (so nothing to retry). */
export class CallerGoneError extends ToolbridgeError {
  constructor(message: string) {
    super('unavailable', message)
    this.name = 'CallerGoneError'
  }
}

interface Waiter {
  start(): void
  cancel(error: Error): void
}

/** At most `slots` calls at once; the rest wait in order, and leave the line when their signal aborts. */
class Gate {
  private busy = 0
  private readonly waiting = new Set<Waiter>()
  private readonly slots: number

  constructor(slots: number) {
    this.slots = slots
  }

  get queued(): number {
    return this.waiting.size
  }

  /** Resolves with a release function once a slot is free; rejects if `signal` aborts or `waitMs` passes first. */
  acquire(signal: AbortSignal | undefined, waitMs: number): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new CallerGoneError('caller gone before the call was sent'))
    if (this.busy < this.slots) return Promise.resolve(this.take())
    return new Promise((resolve, reject) => {
      const leave = () => {
        this.waiting.delete(waiter)
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      const waiter: Waiter = {
        start: () => (leave(), resolve(this.take())),
        cancel: (error) => (leave(), reject(error)),
      }
      const onAbort = () => waiter.cancel(new CallerGoneError('caller gone before the call was sent'))
      const timer = setTimeout(
        () => waiter.cancel(new ToolCallTimeoutError(`not started within ${waitMs} ms: the service is busy`)),
        waitMs,
      )
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiting.add(waiter)
    })
  }

  private take(): () => void {
    this.busy++
    let released = false
    return () => {
      if (released) return
      released = true
      this.busy--
      const next = this.waiting.values().next()
      if (!next.done) next.value.start()
    }
  }
}

/**
 * The caller with each service's calls gated to its `concurrency`. A call
 * keeps its slot until its answer (or its timeout) even when its caller has
 * gone: the function is still running it.
 */
export function gatedCaller(caller: ToolCaller): ToolCaller & { readonly queued: number } {
  const gates = new Map<string, Gate>()
  for (const { spec } of caller.tools.values()) if (!gates.has(spec.id)) gates.set(spec.id, new Gate(spec.concurrency))
  return {
    tools: caller.tools,
    get queued() {
      return [...gates.values()].reduce((sum, gate) => sum + gate.queued, 0)
    },
    async call(name, request, options = {}) {
      const entry = caller.tools.get(name)
      const gate = entry && gates.get(entry.spec.id)
      if (!entry || !gate) return caller.call(name, request, options) // the caller's own "unknown tool" answer
      const release = await gate.acquire(options.signal, entry.spec.timeoutMs)
      try {
        return await caller.call(name, request, options)
      } finally {
        release()
      }
    },
    close: () => caller.close(),
  }
}

/**
 * Runs handlers in the bridge's own event loop: the fastest path, for
 * trusted code. A timeout answers the request and closes a streamed result
 * at its next chunk, but cannot stop a handler's own work; a handler that
 * blocks the loop blocks the bridge; functions share the bridge's
 * environment variables (their `environment:` is not applied) and its
 * process (the composition root keeps a late uncaught exception from
 * ending it). Use the worker-thread invoker (`worker-threads/worker-thread-invoker.ts`) for isolation.
 */
import { withFunctionConsole } from './function-console.ts'
import { randomUUID } from 'node:crypto'
import { messageOf } from '../../shared/errors.ts'
import {
  DEFAULT_MAX_STREAM_BYTES,
  describeError,
  lambdaContext,
  loadHandler,
  runHandler,
  StreamTooLarge,
  type LambdaHandler,
} from './run-handler.ts'
import type { HandlerLocation } from '../project/tool-services.ts'
import { functionError, type FunctionTarget, type Invocation, type Invoker, type Outcome } from './invoker.ts'

export class InProcessInvoker implements Invoker<HandlerLocation> {
  private readonly handlers = new Map<string, Promise<LambdaHandler>>()
  private readonly baseDir: string
  private readonly maxStreamBytes: number

  constructor(baseDir: string, options: { maxStreamBytes?: number } = {}) {
    this.baseDir = baseDir
    this.maxStreamBytes = options.maxStreamBytes ?? DEFAULT_MAX_STREAM_BYTES
  }

  async prepare(target: FunctionTarget<HandlerLocation>): Promise<string | undefined> {
    try {
      await this.handlerFor(target)
      return undefined
    } catch (err) {
      return messageOf(err)
    }
  }

  async invoke({ target, event, onChunk, signal, trace, onLog }: Invocation<HandlerLocation>): Promise<Outcome> {
    let handler: LambdaHandler
    try {
      handler = await this.handlerFor(target)
    } catch (err) {
      return {
        ok: false,
        kind: 'unavailable',
        message: `function "${target.functionName}" cannot load: ${messageOf(err)}`,
      }
    }
    // One promise and one timer per invocation; no Promise.race and no separate timeout promise.
    return new Promise<Outcome>((resolve) => {
      let finished = false
      // Aborted when the call's time is up and when its caller cancels it, as in a worker thread;
      // not when the handler ends by itself (an abort builds a DOMException: ~10 µs a call,
      // measured). The caller's abort is passed on by a listener (AbortSignal.any: ~2 µs a call).
      const over = new AbortController()
      const cancel = () => over.abort()
      const finish = (outcome: Outcome) => {
        if (finished) return
        finished = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', cancel)
        resolve(outcome)
      }
      const timer = setTimeout(() => {
        const message = `function "${target.functionName}" timed out after ${target.timeoutMs} ms`
        over.abort(new DOMException(message, 'TimeoutError'))
        finish({ ok: false, kind: 'timeout', message })
      }, target.timeoutMs)
      if (signal?.aborted) over.abort()
      else signal?.addEventListener('abort', cancel, { once: true })
      const requestId = randomUUID()
      trace?.observed({ invocationId: requestId })
      const context = lambdaContext(target.functionName, requestId, target.timeoutMs, over.signal, trace?.headers)
      const run = { maxStreamBytes: this.maxStreamBytes, signal: over.signal }
      withFunctionConsole(onLog, () =>
        runHandler(
          handler,
          event,
          context,
          (text) => {
            if (!finished) onChunk(text)
          },
          run,
        ),
      ).then(
        (text) => finish({ ok: true, text }),
        (error: unknown) => {
          if (error instanceof StreamTooLarge) return finish({ ok: false, kind: 'too-large', message: error.message })
          const { errorType, errorMessage } = describeError(error)
          finish(functionError(errorType, errorMessage))
        },
      )
    })
  }

  private handlerFor(target: FunctionTarget<HandlerLocation>): Promise<LambdaHandler> {
    let handler = this.handlers.get(target.functionName)
    if (!handler) {
      handler = loadHandler(this.baseDir, target.location.handler)
      // A failed load is retried on the next request rather than cached.
      handler.catch(() => this.handlers.delete(target.functionName))
      this.handlers.set(target.functionName, handler)
    }
    return handler
  }

  async close(): Promise<void> {
    this.handlers.clear()
  }
}

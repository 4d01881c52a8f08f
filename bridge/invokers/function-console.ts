/**
 * What a function writes with `console` while it runs, told to whoever
 * invoked it as well (an MCP client that set a log level sees it as
 * `notifications/message`). The lines still go where they always went; the
 * invocation they belong to is followed through the function's async work
 * with AsyncLocalStorage, so lines of concurrent invocations, and the
 * bridge's own logging (not through `console`), are never mixed in.
 *
 * Used in the thread that runs the handler: the bridge's main thread for
 * in-process functions, each worker thread for the others.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { format } from 'node:util'

export type FunctionLogLevel = 'debug' | 'info' | 'warning' | 'error'

export type FunctionLogSink = (level: FunctionLogLevel, text: string) => void

/** Longest line passed on (characters); longer ones are cut and say so. */
export const MAX_LOG_LINE = 4096

const LEVEL_OF_METHOD = { debug: 'debug', log: 'info', info: 'info', warn: 'warning', error: 'error' } as const

const current = new AsyncLocalStorage<FunctionLogSink>()
let patched = false

function patchConsole(): void {
  if (patched) return
  patched = true
  for (const [method, level] of Object.entries(LEVEL_OF_METHOD)) {
    const name = method as keyof typeof LEVEL_OF_METHOD
    const original = console[name].bind(console)
    console[name] = (...args: unknown[]) => {
      original(...args)
      const sink = current.getStore()
      if (sink === undefined) return
      const text = format(...args)
      try {
        sink(level, text.length > MAX_LOG_LINE ? `${text.slice(0, MAX_LOG_LINE)}… (cut)` : text)
      } catch {
        // A listener's failure is never the function's.
      }
    }
  }
}

/** Runs `fn`, telling `sink` each line it (and the async work it starts) writes with console. */
export function withFunctionConsole<T>(sink: FunctionLogSink | undefined, fn: () => T): T {
  if (sink === undefined) return fn()
  patchConsole()
  return current.run(sink, fn)
}

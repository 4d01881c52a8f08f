/**
 * The messages between the main thread (worker-thread-invoker.ts) and a worker thread
 * (worker.ts), both ways, and how they are posted: the protocol in one place.
 *
 * They travel as JSON text (post/read): posting a string costs the sending
 * thread a copy, while cloning an object walks it, a third to half of the
 * main thread's cost of a call through a worker (measured); events and
 * results are JSON anyway. Invocations and their ends travel in batches:
 * with several in flight, one message per turn of the event loop instead of
 * one per invocation, since each message may wake a sleeping thread.
 */

import type { FunctionLogLevel } from '../function-console.ts'

export interface WorkerSetup {
  baseDir: string
  handler: string
  functionName: string
  maxStreamBytes: number
  /** The bridge's compile cache, if it has one (worker-entry.js). */
  compileCacheDir: string | undefined
  /** The function's memorySize in bytes, what its off-heap memory is held to; undefined: not measured. */
  offHeapLimitBytes: number | undefined
  /**
   * Present when it runs its invocations one at a time, in the order sent (Lambda's model): those
   * sent while one runs wait in line, and these cells say which have started (line-claims.ts).
   */
  claims: Int32Array | undefined
  /** The texts of the function's own files, loaded instead of the disk's (pinned-sources.ts); undefined: from disk. */
  sources?: Readonly<Record<string, string>>
}

/** One invocation as sent to a worker; `id` names it in every message about it. */
export interface WorkerCall {
  id: number
  requestId: string
  timeoutMs: number
  event: unknown
  /** The invocation span's W3C headers, when tracing is on: the handler's context.clientContext.Custom. */
  traceHeaders?: Readonly<Record<string, string>>
  /** Someone listens to the function's console lines: post them (`log`). */
  logs?: true
}

export type ToWorker =
  | { type: 'invoke'; calls: WorkerCall[] }
  /** The main thread took one chunk message of this invocation (chunk-credit.ts). */
  | { type: 'credit'; id: number }
  /** The caller cancelled this invocation: its context's signal aborts; it still ends and answers. */
  | { type: 'abort'; id: number }
  /** These invocations timed out and were answered: stop their streams, drop their results, confirm. */
  | { type: 'cancel'; ids: number[] }

/** How an invocation ended, and how long its handler ran (µs; the function's pace, call-pace.ts). */
export type InvocationEnd = { id: number; us: number } & (
  | { type: 'done'; text: string }
  | { type: 'error'; errorType: string; errorMessage: string }
  | { type: 'too-large'; message: string }
)

export type FromWorker =
  | { type: 'ready'; heapLimitBytes: number }
  | { type: 'load-error'; message: string }
  | { type: 'chunk'; id: number; text: string }
  /** A line the function wrote with console during this invocation (function-console.ts). */
  | { type: 'log'; id: number; level: FunctionLogLevel; text: string }
  /** How invocations ended, with the Buffer/ArrayBuffer bytes the environment still holds after them (0: not measured). */
  | { type: 'ended'; ends: InvocationEnd[]; arrayBufferBytes: number }
  /** The invocations of a `cancel`, given up: the worker's event loop is turning. */
  | { type: 'cancelled'; ids: number[] }

/** A message as it is posted: JSON text, read back with JSON.parse on the other side. */
export type Posted<T> = string & { readonly message?: T }
export const post = <T>(message: T): Posted<T> => JSON.stringify(message)
export const read = <T>(posted: Posted<T>): T => JSON.parse(posted) as T

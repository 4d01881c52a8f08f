/**
 * How the bridge calls a function: in process, in a worker thread, on
 * Lambda, over HTTP. An invoker knows functions, not queues.
 */
import type { ErrorKind, Refusal } from '../../shared/errors.ts'
import { BAD_REQUEST_ERROR, INVALID_ARGUMENTS_ERROR, MISSING_CONFIG_ERROR } from '../../shared/handler.ts'
import type { ResponseMode } from '../../shared/tool-service-schema.ts'
import type { FunctionLocation } from '../project/tool-services.ts'

/** Which function to call, where it runs, and how long it may run. */
export interface FunctionTarget<L extends FunctionLocation = FunctionLocation> {
  /** Key under `functions:` or `custom.toolServices` in serverless.yml. */
  functionName: string
  location: L
  /** `stream`: the function's chunks are wanted as they come (on Lambda, InvokeWithResponseStream). */
  response: ResponseMode
  timeoutMs: number
  /** Upper bound on simultaneous invocations of this function. */
  concurrency: number
  /**
   * Invocations one worker thread may run at once (the `worker-threads` invoker); 1,
   * the default, is Lambda's one at a time.
   */
  invocationsPerWorker?: number | undefined
  /** Lambda's `memorySize` in MB, if set: in worker threads, each environment's heap limit. */
  memoryMb?: number | undefined
  /** Variables from serverless.yml `environment:` (provider's, then the function's); worker threads apply them. */
  environment?: Record<string, string> | undefined
}

import type { FunctionLogSink } from './function-console.ts'

export interface Invocation<L extends FunctionLocation = FunctionLocation> {
  target: FunctionTarget<L>
  /** The envelope, or what the service's event shape made of it (bridge/core/event-shapes.ts). */
  event: unknown
  /** Called once per streamed chunk, in order, as the function produces it. */
  onChunk: (text: string) => void
  /** Aborted when the caller cancels: the function reads it as `context.signal`; its answer still goes out. */
  signal?: AbortSignal | undefined
  /** Told each line the function writes with `console` (worker threads, in process); others do not. */
  onLog?: FunctionLogSink | undefined
  /** Present only when tracing is on (bridge/tracing). */
  trace?: InvocationTrace | undefined
}

/** The trace context a function is given, and what its invoker tells the trace about the call. */
export interface InvocationTrace {
  /** `traceparent`, and `tracestate` and `baggage` when the caller sent them: the invocation span's context. */
  readonly headers: Readonly<Record<string, string>>
  /** What only the invoker knows: the platform's id of this invocation, whether it started a new environment. */
  observed(facts: { invocationId?: string; coldStart?: boolean }): void
}

/** How every invocation ends, as data: the bridge turns it into messages. */
export type Outcome =
  | { ok: true /** The returned value as text; '' when the function streamed. */; text: string }
  | Refusal

/**
 * Calls functions at one kind of location (`L`), or at any. Properties rather
 * than methods, so that the compiler refuses an invoker for one kind where a
 * function at another may come (methods' parameters are not checked that strictly).
 */
export interface Invoker<L extends FunctionLocation = FunctionLocation> {
  invoke: (invocation: Invocation<L>) => Promise<Outcome>
  /** Warm up (and check) a function before requests arrive. Resolves with an error message if it cannot load. */
  prepare: (target: FunctionTarget<L>) => Promise<string | undefined>
  /**
   * Where an invoker can load a function's changed code while serving (`toolbridge dev`): resolves
   * with an error message if the new code cannot load, the old code serving on. `sources`: the
   * texts of the function's own files by path, which its environments load instead of the disk's.
   */
  reload?: (target: FunctionTarget<L>, sources?: Sources) => Promise<string | undefined>
  close(): Promise<void>
}

/** Errors the authoring helper raises keep their own kind on the wire. */
const KIND_BY_ERROR_TYPE: Record<string, ErrorKind> = {
  [INVALID_ARGUMENTS_ERROR]: 'invalid-arguments',
  [MISSING_CONFIG_ERROR]: 'missing-config',
  [BAD_REQUEST_ERROR]: 'bad-request',
}

/** A function's own error (thrown, FunctionError, ...) as an outcome: type and message, never a stack. */
export function functionError(errorType: string, message: string): Outcome {
  const kind = KIND_BY_ERROR_TYPE[errorType]
  if (kind) return { ok: false, kind, message }
  return {
    ok: false,
    kind: 'function-error',
    message: errorType && errorType !== 'Error' ? `${errorType}: ${message}` : message,
  }
}

/** The texts of a function's own files, by absolute path. */
export type Sources = Readonly<Record<string, string>>

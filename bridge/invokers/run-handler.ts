/**
 * Loading a `handler:` and running it the way Lambda's Node runtime would,
 * shared by the in-process invoker and the worker threads.
 */
import { existsSync } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { isChunkStream } from '../../shared/handler.ts'
import { resultText } from '../../shared/protocol.ts'
import { ToolbridgeError } from '../../shared/errors.ts'

export type LambdaHandler = (event: unknown, context: LambdaContext) => unknown

/** The part of Lambda's context object that handlers commonly read. */
export interface LambdaContext {
  functionName: string
  awsRequestId: string
  callbackWaitsForEmptyEventLoop: boolean
  getRemainingTimeInMillis(): number
  /** toolbridge's own: aborted when the caller cancels the call or its time is up, so the handler can stop. */
  signal: AbortSignal
  /**
   * What the caller put in Lambda's ClientContext. Here, when tracing is on:
   * `{ Custom: { traceparent, tracestate?, baggage? } }`, the shape OpenTelemetry's
   * Lambda instrumentation reads.
   */
  clientContext?: { Custom: Readonly<Record<string, string>> }
}

const EXTENSIONS = ['.ts', '.mts', '.mjs', '.js', '.cjs']

/** `functions/joke/handler.handler` -> the module file and the export name. */
export function resolveHandler(
  baseDir: string,
  handler: string,
  exists: (file: string) => boolean = existsSync,
): { file: string; exportName: string } {
  const dot = handler.lastIndexOf('.')
  if (dot <= 0) throw new Error(`handler "${handler}" must be <path>.<export>, e.g. functions/joke/handler.handler`)
  const base = resolve(baseDir, handler.slice(0, dot))
  // serverless.yml names modules of its own project, as a deployment package holds only those.
  const inside = relative(baseDir, base)
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new Error(
      `handler "${handler}" is outside the project directory; give a path relative to serverless.yml, inside it`,
    )
  }
  const found = EXTENSIONS.map((ext) => base + ext).filter((candidate) => exists(candidate))
  const insideDependency = base.split(sep).includes('node_modules')
  // Node strips types only outside node_modules: there, built JavaScript is the only module that can load.
  const file = insideDependency ? (found.find((f) => !isTypeScript(f)) ?? found[0]) : found[0]
  if (!file) throw new Error(`handler "${handler}": no module ${base}{${EXTENSIONS.join(',')}}`)
  if (insideDependency && isTypeScript(file)) throw new Error(`handler "${handler}": ${nodeModulesTypeScript(file)}`)
  return { file, exportName: handler.slice(dot + 1) }
}

const isTypeScript = (file: string) => file.endsWith('.ts') || file.endsWith('.mts')

const nodeModulesTypeScript = (file: string) =>
  `${file} is TypeScript inside node_modules, and Node runs TypeScript only outside node_modules ` +
  '(ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING); fix: have that package ship JavaScript (built, e.g. with tsc, its exports pointing at the .js), ' +
  'or keep the TypeScript in your own project, outside node_modules'

/** `exists`: whether a module file is there to load (a worker given its sources has them whatever the disk holds). */
export async function loadHandler(
  baseDir: string,
  handler: string,
  exists: (file: string) => boolean = existsSync,
): Promise<LambdaHandler> {
  const { file, exportName } = resolveHandler(baseDir, handler, exists)
  const module = (await import(pathToFileURL(file).href).catch((err: NodeJS.ErrnoException) => {
    // The handler is the user's own, but something it imports is TypeScript in a dependency.
    if (err.code === 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING') {
      const url = /for "(file:[^"]+)"/.exec(err.message)?.[1]
      const culprit = url === undefined ? 'a module it imports' : fileURLToPath(url)
      throw new Error(`handler "${handler}": ${nodeModulesTypeScript(culprit)}`, { cause: err })
    }
    throw err
  })) as Record<string, unknown>
  const fn = module[exportName] ?? (module.default as Record<string, unknown> | undefined)?.[exportName]
  if (typeof fn !== 'function')
    throw new Error(`handler "${handler}": ${file} has no exported function "${exportName}"`)
  return fn as LambdaHandler
}

/** For a context nobody cancels (a direct call, as in the benchmarks' baselines). */
const NEVER_ABORTED = new AbortController().signal

export function lambdaContext(
  functionName: string,
  requestId: string,
  timeoutMs: number,
  signal: AbortSignal = NEVER_ABORTED,
  traceHeaders?: Readonly<Record<string, string>>,
): LambdaContext {
  const deadline = Date.now() + timeoutMs
  const context: LambdaContext = {
    functionName,
    awsRequestId: requestId,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    signal,
  }
  if (traceHeaders !== undefined) context.clientContext = { Custom: traceHeaders }
  return context
}

/**
 * How many bytes one invocation may stream, like Lambda's limit on a
 * streamed response: past it the stream is closed and the invocation
 * answered with too-large, so a function that never stops cannot fill the
 * bridge's memory or the response queue.
 */
export const DEFAULT_MAX_STREAM_BYTES = 20 * 1024 * 1024

/** A stream went past its byte limit; the invokers answer it with too-large. */
export class StreamTooLarge extends ToolbridgeError {
  constructor(maxBytes: number) {
    super('too-large', `the function streamed more than ${maxBytes} bytes, the limit of one response`)
    this.name = 'StreamTooLarge'
  }
}

export interface RunOptions {
  maxStreamBytes: number
  /** Aborted when the invocation is over (timed out): a stream is closed at its next chunk. */
  signal?: AbortSignal | undefined
}

/**
 * Calls the handler; chunks of a streamed result go to `onChunk` (awaited,
 * so a slow consumer slows the producer). Resolves with the returned value
 * as text, '' when it streamed. Throws what the handler throws, and
 * StreamTooLarge past `maxStreamBytes`. Leaving the loop early (limit,
 * abort) calls the stream's `return()`, so its `finally` blocks run.
 */
export async function runHandler(
  handler: LambdaHandler,
  event: unknown,
  context: LambdaContext,
  onChunk: (text: string) => void | Promise<void>,
  { maxStreamBytes, signal }: RunOptions,
): Promise<string> {
  const result = await handler(event, context)
  if (!isChunkStream(result)) return resultText(result)
  let bytes = 0
  for await (const chunk of result) {
    if (signal?.aborted) break
    const text = resultText(chunk)
    if (text === '') continue
    bytes += Buffer.byteLength(text)
    if (bytes > maxStreamBytes) throw new StreamTooLarge(maxStreamBytes)
    await onChunk(text)
  }
  return ''
}

/** An error as Lambda reports it: `errorType` and `errorMessage`, no stack. */
export function describeError(error: unknown): { errorType: string; errorMessage: string } {
  if (error instanceof Error) return { errorType: error.name || 'Error', errorMessage: error.message }
  return {
    errorType: 'Error',
    errorMessage: typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error)),
  }
}

/**
 * Loading a `handler:` and running it the way Lambda's Node runtime would,
 * shared by the in-process invoker and the worker threads.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isChunkStream } from '../../shared/handler.ts'
import { resultText } from '../../shared/protocol.ts'

export type LambdaHandler = (event: unknown, context: LambdaContext) => unknown

/** The part of Lambda's context object that handlers commonly read. */
export interface LambdaContext {
  functionName: string
  awsRequestId: string
  callbackWaitsForEmptyEventLoop: boolean
  getRemainingTimeInMillis(): number
}

const EXTENSIONS = ['.ts', '.mts', '.mjs', '.js', '.cjs']

/** `functions/joke/handler.handler` -> the module file and the export name. */
export function resolveHandler(baseDir: string, handler: string): { file: string; exportName: string } {
  const dot = handler.lastIndexOf('.')
  if (dot <= 0) throw new Error(`handler "${handler}" must be <path>.<export>, e.g. functions/joke/handler.handler`)
  const base = resolve(baseDir, handler.slice(0, dot))
  const file = EXTENSIONS.map((ext) => base + ext).find((candidate) => existsSync(candidate))
  if (!file) throw new Error(`handler "${handler}": no module ${base}{${EXTENSIONS.join(',')}}`)
  return { file, exportName: handler.slice(dot + 1) }
}

export async function loadHandler(baseDir: string, handler: string): Promise<LambdaHandler> {
  const { file, exportName } = resolveHandler(baseDir, handler)
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>
  const fn = module[exportName] ?? (module.default as Record<string, unknown> | undefined)?.[exportName]
  if (typeof fn !== 'function') throw new Error(`handler "${handler}": ${file} has no exported function "${exportName}"`)
  return fn as LambdaHandler
}

export function lambdaContext(functionName: string, requestId: string, timeoutMs: number): LambdaContext {
  const deadline = Date.now() + timeoutMs
  return {
    functionName,
    awsRequestId: requestId,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  }
}

/**
 * Calls the handler; chunks of a streamed result go to `onChunk` (awaited,
 * so a slow consumer slows the producer). Resolves with the returned value
 * as text, '' when it streamed. Throws what the handler throws.
 */
export async function runHandler(
  handler: LambdaHandler,
  event: unknown,
  context: LambdaContext,
  onChunk: (text: string) => void | Promise<void>,
): Promise<string> {
  const result = await handler(event, context)
  if (!isChunkStream(result)) return resultText(result)
  for await (const chunk of result) {
    const text = resultText(chunk)
    if (text !== '') await onChunk(text)
  }
  return ''
}

/** An error as Lambda reports it: `errorType` and `errorMessage`, no stack. */
export function describeError(error: unknown): { errorType: string; errorMessage: string } {
  if (error instanceof Error) return { errorType: error.name || 'Error', errorMessage: error.message }
  return { errorType: 'Error', errorMessage: typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error)) }
}

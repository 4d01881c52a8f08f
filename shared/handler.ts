/**
 * defineToolService(): write a tool service as a plain Lambda handler with
 * typed `config` and `arguments`, checked against their declarations.
 *
 * @example
 * export const handler = defineToolService({
 *   config: { style: { type: 'string', default: 'pun' } },
 *   arguments: { topic: { type: 'string', required: true } },
 *   async handler({ user, config, arguments: args }) {
 *     return `Hey ${user}! A ${config.style} about ${args.topic}`
 *   },
 * })
 *
 * To stream, make `handler` return an async iterable (an async generator):
 * each yielded string is a chunk. On AWS Lambda, wrap it in
 * `lambdaStreaming()` as well. The result works under middy:
 * `middy(handler).use(...)`.
 */
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { assertArgumentType, checkArguments, type ArgumentRule } from './arguments.ts'
import { ToolbridgeError } from './errors.ts'
import { decodeEnvelope, resultText } from './protocol.ts'
import type { ArgumentType } from './tool-service-schema.ts'

export interface FieldDeclaration {
  type: ArgumentType
  required?: boolean
  default?: unknown
}
export type Declarations = Record<string, FieldDeclaration>

type ValueOf<T extends ArgumentType> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'object'
        ? Record<string, unknown>
        : unknown[]

type IsPresent<F extends FieldDeclaration> = F extends { required: true }
  ? true
  : F extends { default: {} }
    ? true
    : false

/** Declared fields typed; required ones and ones with a default are always present. */
export type Typed<D extends Declarations> = {
  [K in keyof D as IsPresent<D[K]> extends true ? K : never]: ValueOf<D[K]['type']>
} & {
  [K in keyof D as IsPresent<D[K]> extends true ? never : K]?: ValueOf<D[K]['type']>
} & Record<string, unknown>

export interface ToolEvent<C = Record<string, unknown>, A = Record<string, unknown>> {
  user: string
  config: C
  arguments: A
}

/** What a handler may return: a string, any JSON value, or chunks. */
export type ToolResult = unknown

export interface ToolServiceDefinition<C extends Declarations, A extends Declarations, Ctx> {
  config?: C
  arguments?: A
  handler: (event: ToolEvent<Typed<C>, Typed<A>>, context: Ctx) => ToolResult | Promise<ToolResult>
}

/** Names of errors that the bridge reports with their own wire type rather than `tool-service-error`. */
export const INVALID_ARGUMENTS_ERROR = 'InvalidArgumentsError'
export const MISSING_CONFIG_ERROR = 'MissingConfigError'
export const BAD_REQUEST_ERROR = 'BadRequestError'

function namedError(kind: 'invalid-arguments' | 'missing-config' | 'bad-request', name: string, message: string) {
  const error = new ToolbridgeError(kind, message)
  error.name = name
  return error
}

const rulesOf = (declarations: Declarations, label: string): ArgumentRule[] =>
  Object.entries(declarations).map(([name, d]) => {
    assertArgumentType(d.type, `defineToolService: ${label}.${name}.type`)
    return { name, type: d.type, required: d.required ?? false }
  })

function withDefaults(values: Record<string, unknown>, declarations: Declarations): Record<string, unknown> {
  let result = values
  for (const [name, d] of Object.entries(declarations)) {
    const present = Object.hasOwn(values, name) && values[name] !== undefined && values[name] !== null
    if (d.default !== undefined && !present) {
      if (result === values) result = { ...values }
      // A copy per call: a handler that changes its default array or object must not change the next call's.
      result[name] = structuredClone(d.default)
    }
  }
  return result
}

export function defineToolService<C extends Declarations = {}, A extends Declarations = {}, Ctx = unknown>(
  definition: ToolServiceDefinition<C, A, Ctx>,
): (event: unknown, context: Ctx) => Promise<ToolResult> {
  const configDecl: Declarations = definition.config ?? {}
  const argumentDecl: Declarations = definition.arguments ?? {}
  const configRules = rulesOf(configDecl, 'config')
  const argumentRules = rulesOf(argumentDecl, 'arguments')

  return async function toolServiceHandler(event: unknown, context: Ctx) {
    const envelope = decodeEnvelope(event)
    if (!envelope.ok) throw namedError('bad-request', BAD_REQUEST_ERROR, envelope.message)
    const { user } = envelope.value

    const config = checkArguments(envelope.value.config, configRules, 'config')
    if (!config.ok) {
      throw config.onlyMissing
        ? namedError('missing-config', MISSING_CONFIG_ERROR, config.message)
        : namedError('invalid-arguments', INVALID_ARGUMENTS_ERROR, config.message)
    }
    const args = checkArguments(envelope.value.arguments, argumentRules)
    if (!args.ok) throw namedError('invalid-arguments', INVALID_ARGUMENTS_ERROR, args.message)

    const typedEvent = {
      user,
      config: withDefaults(config.value, configDecl),
      arguments: withDefaults(args.value, argumentDecl),
    } as ToolEvent<Typed<C>, Typed<A>>
    return definition.handler(typedEvent, context)
  }
}

/** True for what a handler returns when it streams. */
export const isChunkStream = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value

/** The part of the Lambda Node.js runtime's `awslambda` global that response streaming uses. */
interface AwsLambdaGlobal {
  awslambda?: {
    streamifyResponse?: (
      handler: (event: unknown, responseStream: unknown, context: unknown) => Promise<unknown>,
    ) => unknown
  }
}

/**
 * Makes a handler stream on AWS Lambda (response streaming, what the
 * bridge's `InvokeWithResponseStream` reads): wrapped in
 * `awslambda.streamifyResponse`, each chunk it yields is written to the
 * response stream as it comes (a plain result is written whole), and an
 * error it throws, before or mid-stream, fails the invocation. Where there is
 * no `awslambda` global (in process, worker threads) the handler is returned
 * as it is. serverless-offline has the global but calls every handler as
 * `(event, context)`: then the chunks are joined and returned as one string.
 *
 * @example
 * export const handler = lambdaStreaming(defineToolService({
 *   async handler({ arguments: args }) {
 *     return (async function* () { yield 'Once upon a time, '; yield `${args.hero}...` })()
 *   },
 * }))
 */
export function lambdaStreaming<H extends (event: unknown, context: never) => unknown>(handler: H): H {
  const streamify = (globalThis as AwsLambdaGlobal).awslambda?.streamifyResponse
  if (!streamify) return handler
  const streaming = streamify(async (event, responseStream, context) => {
    if (!isWritable(responseStream)) {
      // Called as a plain handler, `(event, context)`, by a runtime that ignores the streaming mark.
      let text = ''
      for await (const chunk of chunkTexts(await handler(event, responseStream as never))) text += chunk
      return text
    }
    const result = await handler(event, context as never)
    // pipeline: backpressure, and on an error the response stream is destroyed with it.
    await pipeline(Readable.from(chunkTexts(result)), responseStream)
    return undefined
  })
  return streaming as H
}

const isWritable = (value: unknown): value is NodeJS.WritableStream =>
  typeof value === 'object' && value !== null && typeof (value as NodeJS.WritableStream).write === 'function'

async function* chunkTexts(result: unknown): AsyncGenerator<string> {
  if (!isChunkStream(result)) {
    const text = resultText(result)
    if (text !== '') yield text
    return
  }
  for await (const chunk of result) {
    const text = resultText(chunk)
    if (text !== '') yield text
  }
}

/**
 * The wire contract (docs/wire-contract.md): ToolServiceRequest / ToolServiceResponse
 * as UTF-8 JSON bytes, and the `id` property that correlates them.
 */
import { ERROR_KINDS, type ErrorKind, isRecord, messageOf, ToolbridgeError } from './errors.ts'
import { pythonJsonDumps, pythonJsonString } from './python-json.ts'

/** A request as the function sees it: config and arguments parsed to objects. */
export interface ToolRequest {
  user: string
  config: Record<string, unknown>
  arguments: Record<string, unknown>
}

export interface WireError {
  type: string
  message: string
}

export interface ToolResponse {
  error: WireError | null
  response: string
  end_of_stream: boolean
}

/** The property that carries the correlation id, and what TrustGraph echoes without one. */
export const ID_PROPERTY = 'id'
export const UNKNOWN_ID = 'unknown'

/** Wire `error.type` per kind. Function failures keep TrustGraph's own type. */
const WIRE_ERROR_TYPE: Record<ErrorKind, string> = {
  'bad-request': 'bad-request',
  'missing-config': 'missing-config',
  'invalid-arguments': 'invalid-arguments',
  'too-large': 'too-large',
  'function-error': 'tool-service-error',
  timeout: 'timeout',
  crash: 'tool-service-error',
  unavailable: 'unavailable',
  expired: 'expired',
  config: 'tool-service-error',
}

export const wireErrorType = (kind: ErrorKind): string => WIRE_ERROR_TYPE[kind]

/**
 * The kind a wire `error.type` stands for: the type itself where it names a
 * kind, otherwise (TrustGraph's `tool-service-error`, a service's own type)
 * a failure of the function.
 */
export const kindOfWireErrorType = (type: string): ErrorKind =>
  (ERROR_KINDS as readonly string[]).includes(type) ? (type as ErrorKind) : 'function-error'

export type Decoded<T> = { ok: true; value: T } | { ok: false; message: string }

/** Buffer.from: pooled allocation, ~10x faster than TextEncoder.encode for small messages. */
const utf8 = { encode: (text: string): Uint8Array => Buffer.from(text, 'utf8') }
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** Parses UTF-8 JSON bytes; invalid UTF-8 and invalid JSON are reported, not thrown. */
export function parseJsonBytes(bytes: Uint8Array): Decoded<unknown> {
  let text: string
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    return { ok: false, message: 'body is not valid UTF-8' }
  }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (err) {
    return { ok: false, message: `body is not valid JSON: ${messageOf(err)}` }
  }
}

/**
 * How deeply config and arguments may nest. Far beyond any tool's needs;
 * a value nested deeper would overflow the stack of whatever walks it
 * recursively (structured clone to a worker, JSON.stringify, a function's
 * own code). JSON.parse itself copes with any depth.
 */
export const MAX_NESTING_DEPTH = 100

/** Whether objects and arrays nest more than `limit` levels, walked without recursion. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (typeof item !== 'object' || item === null) continue
    if (depth > limit) return true
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1])
    }
  }
  return false
}

/** `config` / `arguments`: a JSON string of an object, an object, or empty/absent for `{}`. */
function decodeObjectField(name: string, value: unknown): Decoded<Record<string, unknown>> {
  const decoded = decodeObjectText(name, value)
  if (decoded.ok && nestsDeeperThan(decoded.value, MAX_NESTING_DEPTH)) {
    return { ok: false, message: `"${name}" nests deeper than ${MAX_NESTING_DEPTH} levels` }
  }
  return decoded
}

function decodeObjectText(name: string, value: unknown): Decoded<Record<string, unknown>> {
  if (value === undefined || value === null || value === '') return { ok: true, value: {} }
  if (isRecord(value)) return { ok: true, value }
  if (typeof value !== 'string') {
    return { ok: false, message: `"${name}" must be a JSON-encoded object string, got ${typeName(value)}` }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return { ok: false, message: `"${name}" is not valid JSON` }
  }
  if (!isRecord(parsed)) {
    return { ok: false, message: `"${name}" must encode a JSON object, got ${typeName(parsed)}` }
  }
  return { ok: true, value: parsed }
}

/**
 * Reads a ToolServiceRequest. TrustGraph's dataclass (trustgraph-base 2.11.1,
 * `schema/agent.py`), which it sends as JSON:
 *
 *   ToolServiceRequest
 *     config: str = ""       JSON text of an object: the tool's config values
 *     arguments: str = ""    JSON text of an object: the arguments from the LLM
 *     (user: str = ""        in earlier releases; still read, written when given)
 */
export function decodeRequest(bytes: Uint8Array): Decoded<ToolRequest> {
  const parsed = parseJsonBytes(bytes)
  return parsed.ok ? decodeEnvelope(parsed.value) : parsed
}

/** A request body, or a function's event, read leniently (docs/wire-contract.md#request-toolservicerequest). */
export function decodeEnvelope(body: unknown): Decoded<ToolRequest> {
  if (!isRecord(body)) return { ok: false, message: `request must be a JSON object, got ${typeName(body)}` }
  const user = body.user ?? ''
  if (typeof user !== 'string') return { ok: false, message: `"user" must be a string, got ${typeName(user)}` }
  const config = decodeObjectField('config', body.config)
  if (!config.ok) return config
  const args = decodeObjectField('arguments', body.arguments)
  if (!args.ok) return args
  return { ok: true, value: { user, config: config.value, arguments: args.value } }
}

/**
 * Writes a ToolServiceRequest (the dataclass above decodeRequest) as
 * TrustGraph does (Python `json.dumps`, see python-json.ts): config and
 * arguments as JSON strings; `user` only when given, as current TrustGraph
 * no longer sends it.
 * Throws a `bad-request` ToolbridgeError for config or arguments nested
 * deeper than MAX_NESTING_DEPTH.
 */
export function encodeRequest(request: { user?: string; config?: object; arguments?: object }): Uint8Array {
  // Encoding is recursive: refuse what would overflow the stack, as the bridge refuses it on arrival.
  for (const name of ['config', 'arguments'] as const) {
    if (nestsDeeperThan(request[name], MAX_NESTING_DEPTH)) {
      throw new ToolbridgeError('bad-request', `"${name}" nests deeper than ${MAX_NESTING_DEPTH} levels`)
    }
  }
  const wire: Record<string, string> = {}
  if (request.user !== undefined) wire.user = request.user
  wire.config = pythonJsonDumps(request.config ?? {})
  wire.arguments = pythonJsonDumps(request.arguments ?? {})
  return utf8.encode(pythonJsonDumps(wire))
}

/**
 * Writes a ToolServiceResponse byte-identical to what TrustGraph's
 * DynamicToolService sends: its field order, its JSON spelling. The
 * dataclasses (trustgraph-base 2.11.1, `schema/agent.py` and
 * `schema/core/primitives.py`):
 *
 *   ToolServiceResponse
 *     error: Error | None = None
 *     response: str = ""           the answer, or one chunk of it
 *     end_of_stream: bool = False
 *   Error
 *     type: str = ""
 *     message: str = ""
 */
export function encodeResponse(response: ToolResponse): Uint8Array {
  const error =
    response.error === null ? 'null' : pythonJsonDumps({ type: response.error.type, message: response.error.message })
  return utf8.encode(
    `{"error": ${error}, "response": ${pythonJsonString(response.response)}, "end_of_stream": ${response.end_of_stream}}`,
  )
}

export const chunkResponse = (text: string): ToolResponse => ({ error: null, response: text, end_of_stream: false })
export const finalResponse = (text: string): ToolResponse => ({ error: null, response: text, end_of_stream: true })
export const errorResponse = (kind: ErrorKind, message: string): ToolResponse => ({
  error: { type: wireErrorType(kind), message },
  response: '',
  end_of_stream: true,
})

/** Reads a ToolServiceResponse (the dataclasses above encodeResponse); missing fields take their defaults. */
export function decodeResponse(bytes: Uint8Array): Decoded<ToolResponse> {
  const parsed = parseJsonBytes(bytes)
  if (!parsed.ok) return parsed
  const body = parsed.value
  if (!isRecord(body)) return { ok: false, message: `response must be a JSON object, got ${typeName(body)}` }
  const { error, response, end_of_stream: endOfStream } = body
  let wireError: WireError | null = null
  if (error !== null && error !== undefined) {
    if (!isRecord(error)) return { ok: false, message: '"error" must be an object or null' }
    wireError = { type: String(error.type ?? ''), message: String(error.message ?? '') }
  }
  if (response !== undefined && response !== null && typeof response !== 'string') {
    return { ok: false, message: '"response" must be a string' }
  }
  return {
    ok: true,
    // An error always ends the stream, whatever the flag says.
    value: { error: wireError, response: response ?? '', end_of_stream: endOfStream === true || wireError !== null },
  }
}

/** A handler's result on the wire: strings as they are, anything else as its JSON text. */
export function resultText(result: unknown): string {
  if (typeof result === 'string') return result
  if (result === undefined) return ''
  return JSON.stringify(result) ?? ''
}

export function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

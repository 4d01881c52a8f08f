/**
 * The direct lane for MCP's commonest request: a stateless 2026-07-28
 * `tools/call` that wants its answer and nothing else (no progress, no log
 * lines, no task). The SDK serves every request alike: a server instance,
 * a transport and a streamed web Response each, its schemas run over the
 * whole message, about as much CPU as the rest of the call
 * (docs/bench-mcp.md). The answer such a call needs is one JSON object, the
 * one the SDK would write.
 *
 * The lane takes only a request it can check to the letter; whatever it is
 * unsure of goes to the SDK as before:
 * - no session; the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers
 *   naming exactly the revision, method and tool the body names; an Accept
 *   that takes both JSON and an event stream;
 * - the body's keys, and its params' keys, only the ones the revision
 *   defines for the call; an id that is a string or an integer; a tool this
 *   bridge serves; arguments that are an object;
 * - a `_meta` envelope with no key beyond the revision, the client's
 *   identity and capabilities (not declaring Tasks) and a trace context,
 *   and one the SDK has accepted before. The SDK judges envelopes: the
 *   first request with an envelope goes to it, and once it answers one with
 *   200 (it refuses an invalid envelope with 400 before anything runs), the
 *   same envelope, to the letter, is known good. A client sends the same
 *   envelope with every call, so the SDK sees it once.
 */
import type { ServerResponse } from 'node:http'
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  type CallToolResult,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
} from '@modelcontextprotocol/server'
import { isRecord } from '../../shared/errors.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { contextToPass } from '../tracing/trace-context.ts'
import { answerJsonRpcError, type RequestId } from './json-rpc-answers.ts'
import { MODERN_REVISION, SERVER_INFO } from './mcp-identity.ts'
import { envelopeDeclaresTasks } from './mcp-task-methods.ts'
import { failedCall, type McpToolSet } from './mcp-tools.ts'

/** Envelopes the SDK has accepted, kept at most: past this, the oldest is forgotten (and learnt again if sent again). */
export const MAX_KNOWN_ENVELOPES = 1000

const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params'])
const PARAMS_KEYS = new Set(['name', 'arguments', '_meta'])
const TRACE_KEYS = new Set(['traceparent', 'tracestate', 'baggage'])
const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY])

/** A call the lane answers. */
export interface DirectCall {
  id: RequestId
  name: string
  arguments: Record<string, unknown>
  meta: Record<string, unknown>
}

/** What the lane makes of a request: a call to answer, an envelope to learn from the SDK's answer, or neither. */
export type LaneVerdict = { call: DirectCall } | { envelope: string } | undefined

type Headers = Readonly<Record<string, string | string[] | undefined>>

const has = (value: string | string[] | undefined, part: string) => typeof value === 'string' && value.includes(part)

/** The headers of a stateless 2026-07-28 tools/call of `name`, and nothing the lane leaves to the SDK. */
function headersFit(headers: Headers, name: string): boolean {
  return (
    headers['mcp-session-id'] === undefined &&
    headers['mcp-protocol-version'] === MODERN_REVISION &&
    headers['mcp-method'] === 'tools/call' &&
    headers['mcp-name'] === name &&
    has(headers.accept, 'application/json') &&
    has(headers.accept, 'text/event-stream')
  )
}

/** The envelope as the SDK judged it (its trace context left out, which it does not judge), or undefined if the lane leaves it. */
function envelopeKey(meta: Record<string, unknown>): string | undefined {
  let judged: Record<string, unknown> = meta
  for (const key in meta) {
    if (TRACE_KEYS.has(key)) {
      if (typeof meta[key] !== 'string') return undefined
      if (judged === meta) judged = { ...meta }
      delete judged[key]
    } else if (!ENVELOPE_KEYS.has(key)) return undefined // a log level, a progress token, anything else
  }
  if (meta[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION || envelopeDeclaresTasks(meta)) return undefined
  return JSON.stringify(judged)
}

const onlyKeys = (value: Record<string, unknown>, allowed: Set<string>) => {
  for (const key in value) if (!allowed.has(key)) return false
  return true
}

export class DirectCalls {
  readonly #known = new Set<string>()
  readonly #caller: ToolCaller
  readonly #tools: McpToolSet

  constructor(caller: ToolCaller, tools: McpToolSet) {
    this.#caller = caller
    this.#tools = tools
  }

  /** What the lane makes of a POSTed message (already parsed and bounded). */
  judge(headers: Headers, message: unknown): LaneVerdict {
    if (!isRecord(message) || !onlyKeys(message, MESSAGE_KEYS)) return undefined
    const { id, params } = message
    if (message.jsonrpc !== '2.0' || message.method !== 'tools/call') return undefined
    if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined
    if (!isRecord(params) || !onlyKeys(params, PARAMS_KEYS)) return undefined
    const { name, arguments: args = {}, _meta: meta } = params
    if (typeof name !== 'string' || !this.#caller.tools.has(name) || !headersFit(headers, name)) return undefined
    if (!isRecord(args) || !isRecord(meta)) return undefined
    const envelope = envelopeKey(meta)
    if (envelope === undefined) return undefined
    if (!this.#known.has(envelope)) return { envelope }
    return { call: { id: id as RequestId, name, arguments: args, meta } }
  }

  /** The SDK answered a request with this envelope: with 200, the envelope passed its checks. */
  learn(envelope: string, status: number): void {
    if (status !== 200 || this.#known.has(envelope)) return
    if (this.#known.size >= MAX_KNOWN_ENVELOPES) this.#known.delete(this.#known.values().next().value!)
    this.#known.add(envelope)
  }

  /** Runs the call and writes its answer as the SDK would; resolves once it is written. */
  async answer(call: DirectCall, res: ServerResponse, signal: AbortSignal): Promise<void> {
    let result: CallToolResult
    try {
      const traceContext = contextToPass(call.meta)
      const text = await this.#caller.call(call.name, { arguments: call.arguments }, { signal, traceContext })
      result = this.#tools.result(call.name, text)
    } catch (err) {
      const failed = failedCall(err)
      if ('error' in failed) return answerJsonRpcError(res, 200, call.id, failed.error)
      result = failed.result
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(resultBody(call.id, result))
  }
}

/*
 * The SDK's 2026-07-28 result, key for key (its errors have answerJsonRpcError's
 * keys). A tools/call result is sent as
 * the tool's result is made, which always has a text block, so the SDK's
 * projection for this revision (a text block added where there is none)
 * leaves it as it is.
 */
const resultBody = (id: RequestId, result: CallToolResult) =>
  JSON.stringify({
    result: { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: SERVER_INFO } },
    jsonrpc: '2.0',
    id,
  })

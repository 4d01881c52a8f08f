/**
 * Calls a tool through the HTTP gateway of a running `toolbridge start`
 * (bridge/http/gateway.ts), so that `toolbridge invoke` on the same machine goes
 * through the bridge that is serving, whatever its invoker, rather than a
 * bridge of its own.
 */
import type { IncomingMessage, OutgoingHttpHeaders, RequestOptions } from 'node:http'
import { isRecord } from '../../shared/errors.ts'
import { ToolCallError, type CallOptions, type ToolCall } from '../trustgraph/request-client.ts'

/** How long to wait for a gateway that may not be there. */
const PROBE_TIMEOUT_MS = 500

/** What answers at a gateway's address: nothing (or not a toolbridge), one that wants a token, or one serving these tools. */
export type GatewayProbe = { found: 'nothing' } | { found: 'token-required' } | { found: 'tools'; names: string[] }

export async function probeGateway(url: string, token?: string): Promise<GatewayProbe> {
  try {
    const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS)
    const response = await send(new URL('/tools', url), { method: 'GET', headers: authorization(token), signal })
    const status = response.statusCode ?? 0
    if (status === 401) return { found: 'token-required' }
    if (status < 200 || status > 299) return { found: 'nothing' }
    const body: unknown = JSON.parse(await readAll(response, signal))
    if (!isRecord(body) || !Array.isArray(body.tools)) return { found: 'nothing' }
    return {
      found: 'tools',
      names: body.tools.flatMap((tool) => (isRecord(tool) && typeof tool.name === 'string' ? [tool.name] : [])),
    }
  } catch {
    return { found: 'nothing' } // nothing listening, or not a toolbridge gateway
  }
}

const authorization = (token: string | undefined): Record<string, string> =>
  token ? { authorization: `Bearer ${token}` } : {}

/** POST /tools/<name>: resolves to the answer, or rejects with ToolCallError for an error answer. */
export async function callThroughGateway(
  url: string,
  toolName: string,
  call: ToolCall,
  options: CallOptions & { token?: string } = {},
): Promise<string> {
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs)
  const response = await send(new URL(`/tools/${encodeURIComponent(toolName)}`, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authorization(options.token) },
    body: JSON.stringify({ user: call.user, arguments: call.arguments ?? {} }),
    signal,
  })
  // Newline-delimited JSON: {"chunk"} lines, then {"response"} or {"error"}; an early error is a whole JSON body.
  let pending = ''
  response.setEncoding('utf8')
  try {
    for await (const text of response as AsyncIterable<string>) {
      pending += text
      let newline: number
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        if (line.trim() === '') continue
        const final = readLine(line, options)
        if (final !== undefined) {
          response.destroy() // the answer is complete; whatever follows is not read
          return final
        }
      }
    }
  } catch (err) {
    throw timedOut(signal) ?? err
  }
  const final = pending.trim() === '' ? undefined : readLine(pending, options)
  if (final !== undefined) return final
  throw new Error(`${url}: HTTP ${response.statusCode}, the answer ended without a final line`)
}

interface Send {
  method: 'GET' | 'POST'
  headers: OutgoingHttpHeaders
  body?: string
  signal: AbortSignal | undefined
}

/**
 * One request on node:http (node:https for an https:// URL), resolving with
 * the response once its head arrives. Not fetch: loading fetch's HTTP client
 * costs `invoke --url` more start-up time than the whole call.
 */
async function send(url: URL, { method, headers, body, signal }: Send): Promise<IncomingMessage> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http')
  const options: RequestOptions = {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
    signal,
  }
  return new Promise((resolve, reject) => {
    const req = request(url, options, resolve)
    req.once('error', (err) => reject(timedOut(signal) ?? err))
    req.end(body)
  })
}

async function readAll(response: IncomingMessage, signal: AbortSignal): Promise<string> {
  let text = ''
  response.setEncoding('utf8')
  try {
    for await (const piece of response as AsyncIterable<string>) text += piece
  } catch (err) {
    throw timedOut(signal) ?? err
  }
  return text
}

/** The timeout's own error when the signal fired, as fetch reports it, rather than the socket's reset. */
const timedOut = (signal: AbortSignal | undefined): unknown => (signal?.aborted ? signal.reason : undefined)

/** A chunk goes to onChunk (undefined is returned); a final line is the answer, or throws its error. */
function readLine(line: string, options: CallOptions): string | undefined {
  const message: unknown = JSON.parse(line)
  if (!isRecord(message)) throw new Error(`unexpected line from the gateway: ${line.slice(0, 200)}`)
  if (typeof message.chunk === 'string') {
    options.onChunk?.(message.chunk)
    return undefined
  }
  if (typeof message.response === 'string') return message.response
  if (isRecord(message.error)) throw new ToolCallError(String(message.error.type), String(message.error.message))
  throw new Error(`unexpected line from the gateway: ${line.slice(0, 200)}`)
}

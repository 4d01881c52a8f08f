/**
 * Calls a tool through the HTTP gateway of a running `toolbridge start`
 * (bridge/http/gateway.ts), so that `toolbridge invoke` on the same machine goes
 * through the bridge that is serving, whatever its invoker, rather than a
 * bridge of its own.
 */
import { isRecord } from '../../shared/errors.ts'
import { ToolCallError, type CallOptions, type ToolCall } from '../trustgraph/request-client.ts'

/** How long to wait for a gateway that may not be there. */
const PROBE_TIMEOUT_MS = 500

/** What answers at a gateway's address: nothing (or not a toolbridge), one that wants a token, or one serving these tools. */
export type GatewayProbe = { found: 'nothing' } | { found: 'token-required' } | { found: 'tools'; names: string[] }

export async function probeGateway(url: string, token?: string): Promise<GatewayProbe> {
  try {
    const response = await fetch(new URL('/tools', url), { headers: authorization(token), signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
    if (response.status === 401) return { found: 'token-required' }
    if (!response.ok) return { found: 'nothing' }
    const body: unknown = await response.json()
    if (!isRecord(body) || !Array.isArray(body.tools)) return { found: 'nothing' }
    return { found: 'tools', names: body.tools.flatMap((tool) => (isRecord(tool) && typeof tool.name === 'string' ? [tool.name] : [])) }
  } catch {
    return { found: 'nothing' } // nothing listening, or not a toolbridge gateway
  }
}

const authorization = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {})

/** POST /tools/<name>: resolves to the answer, or rejects with ToolCallError for an error answer. */
export async function callThroughGateway(
  url: string,
  toolName: string,
  call: ToolCall,
  options: CallOptions & { token?: string } = {},
): Promise<string> {
  const response = await fetch(new URL(`/tools/${encodeURIComponent(toolName)}`, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authorization(options.token) },
    body: JSON.stringify({ user: call.user, arguments: call.arguments ?? {} }),
    signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
  })
  if (!response.body) throw new Error(`${url}: HTTP ${response.status} without a body`)
  // Newline-delimited JSON: {"chunk"} lines, then {"response"} or {"error"}; an early error is a whole JSON body.
  let pending = ''
  const decoder = new TextDecoder()
  for await (const bytes of response.body) {
    pending += decoder.decode(bytes, { stream: true })
    let newline: number
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      if (line.trim() === '') continue
      const final = readLine(line, options)
      if (final !== undefined) return final
    }
  }
  const final = pending.trim() === '' ? undefined : readLine(pending, options)
  if (final !== undefined) return final
  throw new Error(`${url}: HTTP ${response.status}, the answer ended without a final line`)
}

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

/**
 * A raw 2026-07-28 MCP request as a stateless client sends it, written from
 * the revision's text: one POST per request, the headers it asks for
 * (Mcp-Method, and Mcp-Name: the tool or task), and the envelope's `_meta`.
 * Shared by the tests that drive /mcp without an SDK client.
 */
import { TASKS_EXTENSION } from '../../bridge/http/mcp-tasks.ts'

export const MODERN = '2026-07-28'

export interface ModernCaller {
  /** Declares the Tasks extension in the request's capabilities (default yes). */
  tasks?: boolean
  /** The name in clientInfo. */
  client?: string
  authorization?: string
}

let nextId = 1

/** The headers of one request; `name` goes in Mcp-Name when it is a string. */
export const modernHeaders = (method: string, name: unknown, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': MODERN,
  'mcp-method': method,
  ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  ...extra,
})

/** Sends one request; its id, and the response once its head is in. */
export function postModern(
  url: string,
  method: string,
  params: Record<string, unknown>,
  as: ModernCaller & { defaultClient: string },
  signal?: AbortSignal,
): { id: number; sent: Promise<Response> } {
  const id = nextId++
  const capabilities = as.tasks === false ? {} : { extensions: { [TASKS_EXTENSION]: {} } }
  const sent = fetch(url, {
    method: 'POST',
    signal,
    headers: modernHeaders(
      method,
      params.name ?? params.taskId,
      as.authorization ? { authorization: as.authorization } : {},
    ),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientInfo': { name: as.client ?? as.defaultClient, version: '1' },
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
  })
  return { id, sent }
}

/** The one message of a reply: a JSON body, or an SSE stream's last event. */
export const lastMessage = (text: string) =>
  JSON.parse(text.startsWith('{') ? text : [...text.matchAll(/^data: (.*)$/gm)].at(-1)![1]!)

/** A fresh request id, for requests built by other means (a library's raw dispatch). */
export const nextRequestId = () => nextId++

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

/** A raw client's requests, as one test file's client (`defaultClient` in clientInfo) sends them, each answered in one message. */
export function modernClient<Reply extends { result?: Record<string, unknown> }>(defaultClient: string) {
  const request = async (
    url: string,
    method: string,
    params: Record<string, unknown>,
    as: ModernCaller = {},
  ): Promise<Reply> => lastMessage(await (await postModern(url, method, params, { ...as, defaultClient }).sent).text())
  const getTask = (url: string, taskId: string, as?: ModernCaller) => request(url, 'tasks/get', { taskId }, as)
  return {
    request,
    call: (url: string, name: string, args: Record<string, unknown>, as?: ModernCaller) =>
      request(url, 'tools/call', { name, arguments: args }, as),
    getTask,
    /** tasks/get until the task is no longer working (or 20 s pass). */
    async settled(url: string, taskId: string, as?: ModernCaller): Promise<Reply> {
      const deadline = Date.now() + 20_000
      for (;;) {
        const reply = await getTask(url, taskId, as)
        if (reply.result?.status !== 'working' || Date.now() > deadline) return reply
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
  }
}

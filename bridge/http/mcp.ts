/**
 * The tools as an MCP server (@modelcontextprotocol/sdk): every tool of
 * serverless.yml is an MCP tool whose `inputSchema` comes from its declared
 * arguments (shared/arguments.ts), whose config values are the ones its
 * declaration fixes, and whose call goes through the broker to the bridge
 * like any agent's (tool-caller.ts). A streaming tool's chunks are joined
 * into one text result, and also sent as progress notifications when the
 * client asked for them (a `progressToken`).
 *
 * Two ways in: stdio (`toolbridge mcp`) and Streamable HTTP at `/mcp` on the
 * gateway, stateless (a server per request, as TrustGraph's MCP tool service
 * opens a session per call), behind the gateway's Host, Origin and token
 * checks. One message per request: JSON-RPC batches were dropped from MCP
 * (2025-06-18) and would fan one request out into many calls.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Writable } from 'node:stream'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js'
import { inputSchema } from '../../shared/arguments.ts'
import { isRecord, messageOf } from '../../shared/errors.ts'
import { ToolCallError } from '../trustgraph/request-client.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { readJsonBody, requireJson } from './body.ts'
import { HttpError } from './responses.ts'
import { bounded } from '../support/bounded-text.ts'
import { jsonRpcLines } from './stdio-lines.ts'
import { contextToPass } from '../tracing/trace-context.ts'

const SERVER_INFO = { name: 'toolbridge', version: '0.1.0' }

/**
 * tools/call matched by its method only: the SDK's tools/call wrapper then
 * checks the params and answers bad ones with -32602 (invalid params); its
 * generic parse, with the full schema, would answer -32603.
 */
const CALL_TOOL_METHOD_ONLY = CallToolRequestSchema.pick({ method: true }).loose()

export function createMcpServer(caller: ToolCaller): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...caller.tools.values()].map(({ tool }) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: inputSchema(tool.arguments),
    })),
  }))

  server.setRequestHandler(CALL_TOOL_METHOD_ONLY, async (unchecked, extra): Promise<CallToolResult> => {
    const request = CallToolRequestSchema.parse(unchecked) // the SDK's tools/call wrapper has checked it already
    const { name } = request.params
    if (!caller.tools.has(name)) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name}"`)
    const args = request.params.arguments ?? {}
    if (!isRecord(args)) throw new McpError(ErrorCode.InvalidParams, '"arguments" must be an object')
    const progressToken = request.params._meta?.progressToken
    let progress = 0
    const onChunk =
      progressToken === undefined
        ? undefined
        : (chunk: string) =>
            void extra
              .sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress: ++progress, message: chunk },
              })
              .catch(() => {}) // a client that went away still gets nothing; the call finishes regardless
    try {
      // The SDK aborts extra.signal when the client goes away (the HTTP response closes).
      // MCP carries a traced client's context in _meta (traceparent, tracestate, baggage).
      const traceContext = request.params._meta === undefined ? undefined : contextToPass(request.params._meta)
      const text = await caller.call(name, { arguments: args }, { onChunk, signal: extra.signal, traceContext })
      return { content: [{ type: 'text', text }] }
    } catch (err) {
      // Arguments no service could take (nested too deep): the request is at fault, not the tool.
      if (err instanceof ToolCallError && err.type === 'bad-request')
        throw new McpError(ErrorCode.InvalidParams, bounded(err.message))
      // A failed tool is a result the model can read, not a protocol error.
      const text = err instanceof ToolCallError ? `${err.type}: ${err.message}` : messageOf(err)
      return { content: [{ type: 'text', text: bounded(text) }], isError: true }
    }
  })
  return server
}

/** JSON-RPC error codes per HTTP status of a refusal (the rest are the SDK's "connection closed"). */
const CODE_BY_STATUS: Record<number, number> = { 400: ErrorCode.ParseError }

export function jsonRpcError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code?: number,
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(
    JSON.stringify({
      jsonrpc: '2.0',
      error: { code: code ?? CODE_BY_STATUS[status] ?? ErrorCode.ConnectionClosed, message },
      id: null,
    }),
  )
}

export interface McpHttpOptions {
  /** Bodies over this many bytes get 413. */
  maxBodyBytes: number
}

/**
 * Serves Streamable HTTP at one path; resolves once the response is
 * complete. Refusals before the SDK sees the request are thrown as HttpError.
 */
export function mcpHttpHandler(caller: ToolCaller, options: McpHttpOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Stateless: no session to resume (GET) or end (DELETE).
    if (req.method !== 'POST')
      return jsonRpcError(res, 405, 'Method not allowed: this MCP endpoint is stateless, POST only', { allow: 'POST' })
    requireJson(req)
    const message = await readJsonBody(req, options.maxBodyBytes, undefined)
    if (message === undefined) throw new HttpError(400, 'Parse error: empty body')
    if (Array.isArray(message)) {
      return jsonRpcError(
        res,
        400,
        'Invalid Request: JSON-RPC batches are not supported; send one message per request',
        {},
        ErrorCode.InvalidRequest,
      )
    }
    const server = createMcpServer(caller)
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    const done = new Promise<void>((resolve) => res.once('close', resolve))
    res.once('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req, res, message)
    await done
  }
}

/**
 * Serves MCP on stdin/stdout until stdin ends. stdout then belongs to the
 * protocol: anything else written there (a function's console.log, in
 * process or from a worker thread) goes to stderr instead.
 */
export async function serveMcpStdio(caller: ToolCaller): Promise<void> {
  const write = process.stdout.write.bind(process.stdout) as (
    chunk: Uint8Array | string,
    callback: (err?: Error | null) => void,
  ) => boolean
  const protocolOut = new Writable({ write: (chunk: Uint8Array, _encoding, callback) => void write(chunk, callback) })
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  const server = createMcpServer(caller)
  const closed = new Promise<void>((resolve) => (server.onclose = resolve))
  const ended = new Promise<void>((resolve) => process.stdin.once('end', resolve))
  // Lines the SDK would drop silently (not JSON) or stop on (too long) get a JSON-RPC error instead.
  const lines = jsonRpcLines(
    process.stdin,
    (error) => void protocolOut.write(JSON.stringify({ jsonrpc: '2.0', error, id: null }) + '\n'),
  )
  await server.connect(new StdioServerTransport(lines, protocolOut))
  await Promise.race([closed, ended])
  await server.close()
}

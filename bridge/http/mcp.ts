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
 * opens a session per call), with an optional bearer token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Writable } from 'node:stream'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { inputSchema } from '../../shared/arguments.ts'
import { isRecord, messageOf } from '../../shared/errors.ts'
import { ToolCallError } from '../trustgraph/request-client.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { bearerMatches } from './bearer.ts'

const SERVER_INFO = { name: 'toolbridge', version: '0.1.0' }

export function createMcpServer(caller: ToolCaller): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...caller.tools.values()].map(({ tool }) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: inputSchema(tool.arguments),
    })),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
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
              .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message: chunk } })
              .catch(() => {}) // a client that went away still gets nothing; the call finishes regardless
    try {
      const text = await caller.call(name, { arguments: args }, { onChunk })
      return { content: [{ type: 'text', text }] }
    } catch (err) {
      // A failed tool is a result the model can read, not a protocol error.
      const text = err instanceof ToolCallError ? `${err.type}: ${err.message}` : messageOf(err)
      return { content: [{ type: 'text', text }], isError: true }
    }
  })
  return server
}

function jsonRpcError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: ErrorCode.ConnectionClosed, message }, id: null }))
}


export interface McpHttpOptions {
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string
}

/** Serves Streamable HTTP at one path; resolves once the response is complete. */
export function mcpHttpHandler(caller: ToolCaller, options: McpHttpOptions = {}) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (options.token && !bearerMatches(req.headers.authorization, options.token)) {
      return jsonRpcError(res, 401, 'missing or wrong bearer token', { 'www-authenticate': 'Bearer' })
    }
    // Stateless: no session to resume (GET) or end (DELETE).
    if (req.method !== 'POST') return jsonRpcError(res, 405, 'Method not allowed: this MCP endpoint is stateless, POST only', { allow: 'POST' })
    const server = createMcpServer(caller)
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    const done = new Promise<void>((resolve) => res.once('close', resolve))
    res.once('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req, res)
    await done
  }
}

/**
 * Serves MCP on stdin/stdout until stdin ends. stdout then belongs to the
 * protocol: anything else written there (a function's console.log, in
 * process or from a worker thread) goes to stderr instead.
 */
export async function serveMcpStdio(caller: ToolCaller): Promise<void> {
  const write = process.stdout.write.bind(process.stdout) as (chunk: Uint8Array | string, callback: (err?: Error | null) => void) => boolean
  const protocolOut = new Writable({ write: (chunk: Uint8Array, _encoding, callback) => void write(chunk, callback) })
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  const server = createMcpServer(caller)
  const closed = new Promise<void>((resolve) => (server.onclose = resolve))
  const ended = new Promise<void>((resolve) => process.stdin.once('end', resolve))
  await server.connect(new StdioServerTransport(process.stdin, protocolOut))
  await Promise.race([closed, ended])
  await server.close()
}

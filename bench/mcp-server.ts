/**
 * One server of the MCP bench (bench/mcp.bench.ts starts each in a process
 * of its own, so that this process's CPU time is the server's alone).
 *
 *   node bench/mcp-server.ts plain-sdk
 *   node bench/mcp-server.ts toolbridge <worker-threads|in-process>
 *
 * - `plain-sdk`: what a user writes on the official SDK
 *   (@modelcontextprotocol/server) without toolbridge: an McpServer per
 *   request from createMcpHandler (stateless in both eras), the tell-joke
 *   tool registered with its JSON Schema, its callback calling
 *   functions/joke's Lambda handler directly with serverless.yml's config
 *   (style=pun); on node:http, the body read and parsed once and handed to
 *   the SDK as `parsedBody` (its documented path for a body already read,
 *   and the one toolbridge's /mcp takes), the web Response piped back.
 * - `toolbridge <invoker>`: startRuntime() on serverless.yml as it is, on the
 *   embedded broker, HTTP on a free port: /mcp and /tools/<tool>.
 *
 * Says `{ type: 'ready', url }` over IPC once it listens; ends on `stop`.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import type { ReadableStream as NodeReadableStream } from 'node:stream/web'
import { pipeline } from 'node:stream/promises'
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import { INVOKERS, type InvokerKind, resolveSettings } from '../bridge/project/settings.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { handler as joke } from '../functions/joke/handler.ts'
import { resultText } from '../shared/protocol.ts'
import { loadJokeTool, TOOL_NAME } from './joke-tool.ts'

export type ServerReady = { type: 'ready'; url: string }
export type ToServer = { type: 'stop' }

const send = (message: ServerReady) => process.send!(message)

/** The plain SDK server; resolves with its address and the way to close it. */
async function startPlainSdk(): Promise<{ url: string; close(): Promise<void> }> {
  const { spec, tool } = loadJokeTool()
  const config = tool.config
  // Compiled once, as anyone would: not in the per-request factory.
  const inputSchema = fromJsonSchema<{ topic: string }>({
    type: 'object',
    properties: { topic: { type: 'string', description: 'The topic for the joke' } },
    required: ['topic'],
  })
  const mcp = createMcpHandler(() => {
    const server = new McpServer({ name: 'plain-joke', version: '1.0.0' })
    server.registerTool(TOOL_NAME, { description: 'Tell a joke on a given topic', inputSchema }, async (args) => {
      const event = { config, arguments: args }
      const result = await joke(event, lambdaContext(spec.functionName, randomUUID(), spec.timeoutMs))
      return { content: [{ type: 'text', text: resultText(result) }] }
    })
    return server
  })

  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== '/mcp') return void res.writeHead(404).end()
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    let parsedBody: unknown
    try {
      parsedBody = text === '' ? undefined : JSON.parse(text)
    } catch {
      return void res.writeHead(400).end()
    }
    const headers = new Headers()
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
      method: req.method,
      headers,
    })
    const response = await mcp.fetch(request, { parsedBody })
    const out: Record<string, string> = {}
    response.headers.forEach((value, name) => void (out[name] = value))
    res.writeHead(response.status, out)
    if (!response.body) return void res.end()
    await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => {})
  }
  const server = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await mcp.close()
      server.closeAllConnections()
      await new Promise<void>((closed) => server.close(() => closed()))
    },
  }
}

/** toolbridge's runtime on serverless.yml, as tests start it: embedded broker, HTTP on a free port. */
async function startToolbridge(invoker: InvokerKind): Promise<{ url: string; close(): Promise<void> }> {
  const { project } = loadJokeTool()
  const runtime = await startRuntime(project, resolveSettings({ port: '0', invoker }, {}))
  return { url: runtime.gateway!.url, close: () => runtime.stop() }
}

const [kind, invoker] = process.argv.slice(2)
let server: { url: string; close(): Promise<void> }
if (kind === 'plain-sdk') server = await startPlainSdk()
else if (kind === 'toolbridge' && (INVOKERS as readonly string[]).includes(invoker ?? ''))
  server = await startToolbridge(invoker as InvokerKind)
else throw new Error(`usage: mcp-server.ts plain-sdk | toolbridge <${INVOKERS.join('|')}>`)

// The bench gone (it failed, or was interrupted): nothing is left running.
process.on('disconnect', () => process.exit(0))
process.on('message', async (message: ToServer) => {
  if (message.type !== 'stop') return
  await server.close().catch(() => {})
  process.exit(0)
})
send({ type: 'ready', url: server.url })

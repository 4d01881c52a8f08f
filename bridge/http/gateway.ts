/**
 * HTTP access to the running bridge. A call goes through the broker like
 * any agent's would: the gateway is one more request/response client.
 *
 *   GET  /tools              the tools, as TrustGraph `tool` descriptors
 *   POST /tools/<tool-name>  {"arguments": {...}, "user": "..."} -> NDJSON:
 *                            {"chunk": "..."} per streamed chunk, then
 *                            {"response": "<whole answer>"} or {"error": {"type", "message"}}
 *   GET  /healthz            200 while the process serves
 *   GET  /readyz             200 while the bridge takes requests (broker connected, queues subscribed), else 503
 *   GET  /metrics            Prometheus text (bridge/support/metrics.ts)
 *   POST /mcp                the same tools over MCP Streamable HTTP (bridge/http/mcp.ts)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toolDescriptor } from '../project/descriptors.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { isRecord, messageOf, ToolbridgeError } from '../../shared/errors.ts'
import { ToolCallError, ToolCallTimeoutError } from '../trustgraph/request-client.ts'
import { bearerMatches } from './bearer.ts'
import { mcpHttpHandler } from './mcp.ts'
import type { Metrics } from '../support/metrics.ts'
import { createToolCaller } from '../trustgraph/tool-caller.ts'
import type { Transport } from '../transports/transport.ts'

export interface GatewayOptions {
  services: ToolServiceSpec[]
  transport: Transport
  host: string
  port: number
  /** Bearer token required on /tools and /mcp (health, readiness and metrics stay open); none: open. */
  httpToken?: string
  /** Bearer token required on /mcp instead of httpToken (TrustGraph's mcp `auth-token`). */
  mcpToken?: string
  metrics?: Metrics
  /** Whether the bridge takes requests now; default: always. */
  ready?: () => boolean
}

export interface Gateway {
  readonly url: string
  close(): Promise<void>
}

/** Status for an error answered before any chunk was sent. */
const STATUS_BY_ERROR_TYPE: Record<string, number> = {
  'bad-request': 400,
  'invalid-arguments': 422,
  'missing-config': 422,
  'too-large': 413,
  timeout: 504,
}

/** A request the gateway refuses, with the status to answer. */
export class HttpError extends ToolbridgeError {
  readonly status: number
  constructor(status: number, message: string) {
    super(status === 413 ? 'too-large' : 'bad-request', message)
    this.name = 'HttpError'
    this.status = status
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    let size = 0
    req.on('data', (part: Buffer) => {
      size += part.length
      if (size > limit) {
        reject(new HttpError(413, `request body over ${limit} bytes`))
        req.destroy()
      } else parts.push(part)
    })
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    req.on('error', reject)
  })
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body) + '\n')
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { services, transport } = options
  const caller = createToolCaller(services, transport)
  const { tools } = caller
  const mcp = mcpHttpHandler(caller, { token: options.mcpToken ?? options.httpToken })
  /** Calls being answered: close() lets them finish. */
  const active = new Set<Promise<void>>()

  async function callTool(name: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const entry = tools.get(name)
    if (!entry) throw new HttpError(404, `unknown tool "${name}"; GET /tools lists them`)
    let body: unknown
    try {
      body = JSON.parse((await readBody(req, transport.maxMessageBytes)) || '{}')
    } catch (err) {
      if (err instanceof HttpError) throw err
      throw new HttpError(400, 'body is not valid JSON')
    }
    if (!isRecord(body)) throw new HttpError(400, 'body must be a JSON object')
    const args = body.arguments ?? {}
    if (!isRecord(args)) throw new HttpError(400, '"arguments" must be an object')
    if (body.user !== undefined && typeof body.user !== 'string') throw new HttpError(400, '"user" must be a string')

    const line = (value: unknown) => res.write(JSON.stringify(value) + '\n')
    const startStream = () => {
      if (!res.headersSent) res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
    }
    try {
      const response = await caller.call(
        name,
        { user: body.user as string | undefined, arguments: args },
        {
          // Only a streaming service sends chunks; a single answer is just the final line.
          onChunk: (chunk) => {
            startStream()
            line({ chunk })
          },
        },
      )
      startStream()
      line({ response })
      res.end()
    } catch (err) {
      const error =
        err instanceof ToolCallError
          ? { type: err.type, message: err.message }
          : { type: err instanceof ToolCallTimeoutError ? 'timeout' : 'unavailable', message: messageOf(err) }
      if (res.headersSent) {
        line({ error })
        res.end()
      } else {
        sendJson(res, STATUS_BY_ERROR_TYPE[error.type] ?? 502, { error })
      }
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://gateway').pathname
    if (path === '/healthz' && req.method === 'GET') return sendJson(res, 200, { status: 'ok' })
    if (path === '/readyz' && req.method === 'GET') {
      const ready = options.ready?.() ?? true
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' })
    }
    if (path === '/metrics' && req.method === 'GET' && options.metrics) {
      const { contentType, body } = await options.metrics.render()
      res.writeHead(200, { 'content-type': contentType }).end(body)
      return
    }
    const match = /^\/tools\/([^/]+)$/.exec(path)
    if (options.httpToken && (path === '/tools' || match) && !bearerMatches(req.headers.authorization, options.httpToken)) {
      res.setHeader('www-authenticate', 'Bearer')
      throw new HttpError(401, 'missing or wrong bearer token')
    }
    if (path === '/tools' && req.method === 'GET') {
      return sendJson(res, 200, { tools: [...tools.values()].map(({ spec, tool }) => toolDescriptor(spec, tool)) })
    }
    if ((match && req.method === 'POST') || path === '/mcp') {
      const call = match ? callTool(decodeURIComponent(match[1]!), req, res) : mcp(req, res)
      const tracked = call.catch(() => {})
      active.add(tracked)
      void tracked.then(() => active.delete(tracked))
      return call
    }
    throw new HttpError(match || path === '/tools' ? 405 : 404, `no route for ${req.method} ${path}`)
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.end()
      const status = err instanceof HttpError ? err.status : 500
      sendJson(res, status, { error: { type: 'http', message: messageOf(err) } })
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, resolve)
  })
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      await Promise.allSettled(active) // calls in flight get their answers (each is bounded by its timeout)
      server.closeAllConnections()
      await closed
      await caller.close()
    },
  }
}

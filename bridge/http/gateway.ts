/**
 * HTTP access to the running bridge (its endpoints: the route table in
 * startGateway, matched by routes.ts). A call goes through the broker like
 * any agent's would: the gateway is one more request/response client.
 *
 *   GET  /tools              the tools, as TrustGraph `tool` descriptors
 *   POST /tools/<tool-name>  {"arguments": {...}, "user": "..."} -> NDJSON:
 *                            {"chunk": "..."} per streamed chunk, then
 *                            {"response": "<whole answer>"} or {"error": {"type", "message"}};
 *                            the header toolbridge-request-id: the request's id on the broker
 *   GET  /healthz            200 while the process serves (HEAD too)
 *   GET  /readyz             200 while the bridge takes requests (broker connected, queues subscribed), else 503
 *   GET  /metrics            Prometheus text (bridge/support/metrics.ts)
 *   POST /mcp                the same tools over MCP Streamable HTTP (bridge/http/mcp.ts)
 *   GET  /, /console/...     the web console, when given a feed (bridge/http/console/console-routes.ts)
 *   GET  /.well-known/oauth-protected-resource[/<path>]
 *                            with OAuth on /mcp: where to get a token (oauth.ts)
 *
 * /tools and /mcp run tools, so they take only JSON from an allowed Host
 * and Origin (host-origin.ts), with their token when one is set (or, on
 * /mcp, an OAuth access token: oauth.ts), never a token in the URL, at most
 * `maxInFlight` at a time (admission.ts); health, readiness and metrics
 * stay open to probes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isRecord, messageOf, ToolbridgeError } from '../../shared/errors.ts'
import { toolDescriptor } from '../project/descriptors.ts'
import {
  DEFAULT_GATEWAY_MAX_IN_FLIGHT,
  DEFAULT_MCP_MAX_TASKS,
  DEFAULT_MCP_TASK_AFTER_SECONDS,
  DEFAULT_MCP_TASK_TTL_SECONDS,
} from '../project/settings.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { bounded } from '../support/bounded-text.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import type { Metrics } from '../support/metrics.ts'
import type { Transport } from '../transports/transport.ts'
import { createToolCaller } from '../trustgraph/tool-caller.ts'
import { gatedCaller } from './admission.ts'
import { ConnectionLimit } from './connection-limit.ts'
import type { ConsoleFeed } from './console/console-feed.ts'
import { consoleRoutes } from './console/console-routes.ts'
import { createGatewayAccess, type GatewayAccessOptions } from './gateway-access.ts'
import { GatewayCalls } from './gateway-calls.ts'
import { jsonRpcError } from './json-rpc-answers.ts'
import { HttpError, sendJson } from './responses.ts'
import { answersMethod, findRoute, openRoute, type Route } from './routes.ts'
import { callTool, TOOL_PATH, type ToolCallRoute } from './tool-call.ts'

/** Host, port and who may reach them (gateway-access.ts), and the rest of the gateway's settings. */
export interface GatewayOptions extends GatewayAccessOptions {
  services: ToolServiceSpec[]
  transport: Transport
  port: number
  /** Calls (/tools/<tool>, /mcp) answered at once; more get 429. */
  maxInFlight?: number
  /** An MCP call or stream quiet this long gets a progress notification or keep-alive comment; default 15 s. */
  mcpHeartbeatMs?: number
  /** MCP Tasks (mcp-tasks.ts): a call of a declaring client still running after this long becomes a task. */
  mcpTaskAfterMs?: number
  /** How long a finished MCP task's result is kept. */
  mcpTaskTtlMs?: number
  /** MCP tasks held at once. */
  mcpMaxTasks?: number
  metrics?: Metrics
  logger?: Logger
  /** Whether the bridge takes requests now; default: always. */
  ready?: () => boolean
  /** Serve the web console at `/`, showing this feed; its data is guarded like /tools. */
  console?: ConsoleFeed
}

export interface Gateway {
  readonly url: string
  /** Calls being answered now (each holds one of `maxInFlight`). */
  readonly inFlight: number
  /** Shutting down: new calls get 503 `unavailable` with Retry-After; calls in flight go on. */
  drain(): void
  /**
   * Stops listening and ends the connections once the calls in flight are
   * answered; with `abandonAfterMs`, calls still unanswered by then get an
   * `unavailable` error instead (their requests were handed back to the broker).
   */
  close(options?: { abandonAfterMs?: number }): Promise<void>
}

/** A whole request, headers and body, must arrive within this (Node's default is 300 s). */
const REQUEST_TIMEOUT_MS = 60_000

/** What a caller refused during shutdown is told to wait before trying again (another replica may answer). */
const RETRY_LATER = { 'retry-after': '1' }

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { services, transport } = options
  const logger = options.logger ?? silentLogger
  const caller = gatedCaller(createToolCaller(services, transport))
  const { tools } = caller
  const calls = new GatewayCalls(options.maxInFlight ?? DEFAULT_GATEWAY_MAX_IN_FLIGHT)
  // The MCP SDK is loaded on the first /mcp request: a bridge only called on /tools or the broker never pays for it.
  let mcpModule: Promise<typeof import('./mcp.ts')> | undefined
  const loadMcp = () => (mcpModule ??= import('./mcp.ts'))
  let mcpHandler: ReturnType<typeof import('./mcp.ts').mcpHttpHandler> | undefined
  const mcp = async (req: IncomingMessage, res: ServerResponse) => {
    // MCP tool calls are given up with the others: their result says so, as an error.
    mcpHandler ??= (await loadMcp()).mcpHttpHandler(
      { ...caller, call: (...args) => calls.untilAbandoned(caller.call(...args)) },
      {
        maxBodyBytes: transport.maxMessageBytes,
        heartbeatMs: options.mcpHeartbeatMs,
        oauth: options.mcpOAuth !== undefined,
        onToolCall: options.metrics && ((path) => options.metrics!.mcpToolCall(path)),
        tasks: {
          afterMs: options.mcpTaskAfterMs ?? DEFAULT_MCP_TASK_AFTER_SECONDS * 1000,
          ttlMs: options.mcpTaskTtlMs ?? DEFAULT_MCP_TASK_TTL_SECONDS * 1000,
          maxTasks: options.mcpMaxTasks ?? DEFAULT_MCP_MAX_TASKS,
        },
      },
    )
    return mcpHandler(req, res)
  }
  // An output schema that does not compile fails the start, not every /mcp call after it.
  const declared = services.flatMap((spec) => spec.tools)
  if (declared.some((tool) => tool.output !== undefined)) (await import('./mcp-tools.ts')).describeTools(declared)
  const { guard, metadataRoutes } = await createGatewayAccess(options, logger)
  /** A call to a tool this gateway serves refused before it reached the broker: counted and shown. */
  const refused = (tool: string, status: number, outcome: string) => {
    const served = tools.get(tool)
    if (served === undefined) return
    options.metrics?.httpRefused(tool, status)
    options.console?.refused(served.spec.id, tool, outcome)
  }
  const toolCall: ToolCallRoute = {
    caller,
    maxBodyBytes: transport.maxMessageBytes,
    untilAbandoned: (call) => calls.untilAbandoned(call),
    refused,
  }

  /** A route that runs tools: refused while draining, else one slot of the cap for the call. */
  async function runTools(
    route: Route & { runsTools: true },
    req: IncomingMessage,
    res: ServerResponse,
    params: readonly string[],
  ): Promise<void> {
    if (calls.draining) {
      const message = 'toolbridge is shutting down: try again shortly (another replica may answer)'
      if (route.jsonRpc) return jsonRpcError(res, 503, message, RETRY_LATER)
      return sendJson(res, 503, { error: { type: 'unavailable', message } }, RETRY_LATER)
    }
    try {
      return await calls.run(res, (gone) => route.handle(req, res, params, gone))
    } catch (err) {
      // The tool route's one parameter is the tool's name; MCP's calls are counted by its own replies.
      const tool = route.jsonRpc ? undefined : params[0]
      if (tool !== undefined && err instanceof HttpError && err.status === 429) refused(tool, 429, 'too-many-requests')
      throw err
    }
  }

  /** Every endpoint; the first whose path matches answers. */
  const routes: Route[] = [
    openRoute('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' })),
    openRoute('/readyz', (_req, res) => {
      const ready = options.ready?.() ?? true
      sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' })
    }),
    ...(options.metrics
      ? [
          openRoute('/metrics', async (_req, res) => {
            const { contentType, body } = await options.metrics!.render()
            res.writeHead(200, { 'content-type': contentType }).end(body)
          }),
        ]
      : []),
    ...metadataRoutes,
    {
      path: '/tools',
      methods: ['GET'],
      access: '/tools',
      handle: (_req, res) =>
        sendJson(res, 200, { tools: [...tools.values()].map(({ spec, tool }) => toolDescriptor(spec, tool)) }),
    },
    { path: '/mcp', access: '/mcp', runsTools: true, jsonRpc: true, handle: (req, res) => mcp(req, res) },
    {
      path: (path) => TOOL_PATH.exec(path)?.slice(1),
      methods: ['POST'],
      access: '/tools',
      runsTools: true,
      handle: (req, res, [tool], gone) => callTool(toolCall, tool!, req, res, gone),
    },
    ...(options.console ? consoleRoutes(options.console, services) : []),
  ]

  async function answer(req: IncomingMessage, res: ServerResponse, found: ReturnType<typeof findRoute>, path: string) {
    if (found === undefined) throw new HttpError(404, `no route for ${req.method} ${bounded(path, 200)}`)
    const { route, params } = found
    if (await guard(route.access, req, res)) return
    if (!answersMethod(route, req.method)) {
      throw new HttpError(405, `no route for ${req.method} ${bounded(path, 200)}`, {
        allow: route.methods?.join(', ') ?? '',
      })
    }
    if (route.runsTools) return runTools(route, req, res, params)
    return route.handle(req, res, params)
  }

  const server: Server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
    const path = new URL(req.url ?? '/', 'http://gateway').pathname
    const found = findRoute(routes, path)
    answer(req, res, found, path).catch((err: unknown) => {
      if (res.headersSent) return void res.end()
      const status = err instanceof HttpError ? err.status : 500
      const headers = err instanceof HttpError ? err.headers : {}
      const message = bounded(messageOf(err))
      if (found?.route.jsonRpc) return jsonRpcError(res, status, message, headers)
      sendJson(res, status, { error: { type: 'http', message } }, headers)
    })
  })
  // Each connection costs a socket and its buffers even before it sends anything; probes still get in.
  new ConnectionLimit(Math.max(1024, 2 * calls.max), {
    evicted: () => options.metrics?.httpConnectionClosed('evicted-idle'),
    refused: () => options.metrics?.httpConnectionClosed('all-busy'),
  }).attach(server)
  const url = await listen(server, options.host, options.port).catch(async (err: unknown) => {
    await caller.close()
    throw err
  })
  return {
    url,
    get inFlight() {
      return calls.inFlight
    },
    drain() {
      calls.draining = true
      mcpHandler?.endStreams()
    },
    async close({ abandonAfterMs }: { abandonAfterMs?: number } = {}) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      // A stream of task notifications lasts as long as its tasks: it ends now, not when they do.
      mcpHandler?.endStreams()
      // Calls in flight get their answers (each is bounded by its timeout), or an error once abandoned.
      await calls.settle(abandonAfterMs)
      mcpHandler?.close()
      server.closeAllConnections()
      await closed
      await caller.close()
    },
  }
}

/** Listens on host:port; the gateway's URL. */
async function listen(server: Server, host: string, port: number): Promise<string> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, resolve)
    })
  } catch (err) {
    if (isRecord(err) && err.code === 'EADDRINUSE') {
      throw new ToolbridgeError(
        'config',
        `HTTP port ${host}:${port} is already in use (another toolbridge start?): choose another with --port, or --port off`,
      )
    }
    throw err
  }
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return `http://${shown}:${address.port}`
}

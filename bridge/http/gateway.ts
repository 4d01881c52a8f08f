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
import {
  DEFAULT_GATEWAY_MAX_IN_FLIGHT,
  DEFAULT_MCP_MAX_TASKS,
  DEFAULT_MCP_TASK_AFTER_SECONDS,
  DEFAULT_MCP_TASK_TTL_SECONDS,
  type McpOAuthSettings,
} from '../project/settings.ts'
import { toolDescriptor } from '../project/descriptors.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { isRecord, isToolbridgeError, messageOf, ToolbridgeError } from '../../shared/errors.ts'
import { ToolCallError, ToolCallTimeoutError } from '../trustgraph/request-client.ts'
import { CallerGoneError, gatedCaller, InFlightCap } from './admission.ts'
import { readJsonBody, requireJson } from './body.ts'
import { checkExposure, isLoopbackHost } from './exposure.ts'
import { ConnectionLimit } from './connection-limit.ts'
import { createHostOriginCheck } from './host-origin.ts'
import { NdjsonAnswer } from './ndjson-answer.ts'
import { HttpError, sendJson } from './responses.ts'
import { createAccessGuard } from './access-guard.ts'
import { answersMethod, findRoute, type PlainRoute, READ_METHODS, type Route } from './routes.ts'
import { bounded } from '../support/bounded-text.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import type { Metrics } from '../support/metrics.ts'
import { createToolCaller } from '../trustgraph/tool-caller.ts'
import type { ConsoleFeed } from './console/console-feed.ts'
import { isConsoleApi, isConsoleAsset, serveConsoleApi, serveConsoleAsset } from './console/console-routes.ts'
import type { Transport } from '../transports/transport.ts'
import { contextToPass } from '../tracing/trace-context.ts'

export interface GatewayOptions {
  services: ToolServiceSpec[]
  transport: Transport
  host: string
  port: number
  /** Bearer token required on /tools and /mcp (health, readiness and metrics stay open); none: open. */
  httpToken?: string
  /** Bearer token required on /mcp instead of httpToken (TrustGraph's mcp `auth-token`). */
  mcpToken?: string
  /** /mcp takes OAuth access tokens of this issuer instead of a static token (oauth.ts). */
  mcpOAuth?: McpOAuthSettings
  /** Host names /tools and /mcp answer besides IP addresses, `localhost` and `host` (host-origin.ts); `*`: any. */
  allowedHosts?: readonly string[]
  /** Origins whose browser requests /tools and /mcp accept; default none. */
  allowedOrigins?: readonly string[]
  /** Listen on a non-loopback address with /tools or /mcp open instead of refusing (exposure.ts). */
  allowUnauthenticated?: boolean
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

/** The request's `id` on the broker, as the bridge logs and reports it: the console finds its call's timing by it. */
export const REQUEST_ID_HEADER = 'toolbridge-request-id'

/** What a caller refused during shutdown is told to wait before trying again (another replica may answer). */
const RETRY_LATER = { 'retry-after': '1' }

/** Status for an error answered before any chunk was sent. */
const STATUS_BY_ERROR_TYPE: Record<string, number> = {
  'bad-request': 400,
  'invalid-arguments': 422,
  'missing-config': 422,
  'too-large': 413,
  timeout: 504,
}

/** The wire error of a failed call, its text bounded. */
function callError(err: unknown): { type: string; message: string } {
  if (err instanceof ToolCallError) return { type: err.type, message: bounded(err.message) }
  return { type: err instanceof ToolCallTimeoutError ? 'timeout' : 'unavailable', message: bounded(messageOf(err)) }
}

/** POST /tools/<tool-name>: the name as sent, percent-escapes and all. */
const TOOL_PATH = /^\/tools\/([^/]+)$/

const abandonedError = () =>
  new ToolbridgeError('unavailable', 'toolbridge stopped before this call was answered: try again', { retriable: true })

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { services, transport } = options
  const logger = options.logger ?? silentLogger
  const caller = gatedCaller(createToolCaller(services, transport))
  const { tools } = caller
  /** Aborted by close() for the calls it stops waiting for. */
  const abandon = new AbortController()
  // The MCP SDK is loaded on the first /mcp request: a bridge only called on /tools or the broker never pays for it.
  let mcpModule: Promise<typeof import('./mcp.ts')> | undefined
  const loadMcp = () => (mcpModule ??= import('./mcp.ts'))
  let mcpHandler: ReturnType<typeof import('./mcp.ts').mcpHttpHandler> | undefined
  const mcp = async (req: IncomingMessage, res: ServerResponse) => {
    // MCP tool calls are given up with the others: their result says so, as an error.
    mcpHandler ??= (await loadMcp()).mcpHttpHandler(
      { ...caller, call: (...args) => untilAbandoned(caller.call(...args)) },
      {
        maxBodyBytes: transport.maxMessageBytes,
        heartbeatMs: options.mcpHeartbeatMs,
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
  const cap = new InFlightCap(options.maxInFlight ?? DEFAULT_GATEWAY_MAX_IN_FLIGHT)
  const tokens = { httpToken: options.httpToken, mcpToken: options.mcpToken, mcpOAuth: options.mcpOAuth }
  await checkExposure(options.host, tokens, options.allowUnauthenticated ?? false)
  // jose is loaded only when /mcp takes OAuth access tokens.
  const oauth = options.mcpOAuth && { settings: options.mcpOAuth, ...(await import('./oauth.ts')) }
  const guard = createAccessGuard({
    hostOrigin: createHostOriginCheck({
      listenHost: options.host,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
      loopback: await isLoopbackHost(options.host),
    }),
    tokens,
    oauth: oauth && {
      settings: oauth.settings,
      verifier: oauth.createAccessTokenVerifier(oauth.settings),
      challenge: oauth.challenge,
    },
    logger,
  })
  const metadataPaths = new Set(
    oauth
      ? ['/.well-known/oauth-protected-resource', new URL(oauth.resourceMetadataUrl(oauth.settings.audience)).pathname]
      : [],
  )
  /** A call to a tool this gateway serves refused before it reached the broker: counted and shown. */
  const refused = (tool: string, status: number, outcome: string) => {
    const served = tools.get(tool)
    if (served === undefined) return
    options.metrics?.httpRefused(tool, status)
    options.console?.refused(served.spec.id, tool, outcome)
  }
  /** Calls being answered: close() lets them finish. */
  const active = new Set<Promise<void>>()
  let draining = false

  async function callTool(
    escapedName: string,
    req: IncomingMessage,
    res: ServerResponse,
    gone: AbortController,
  ): Promise<void> {
    let name: string
    try {
      name = decodeURIComponent(escapedName)
    } catch {
      throw new HttpError(400, `malformed percent-escape in the tool name "${bounded(escapedName, 200)}"`)
    }
    if (!tools.has(name)) throw new HttpError(404, `unknown tool "${bounded(name, 200)}"; GET /tools lists them`)
    requireJson(req)
    const body = await readJsonBody(req, transport.maxMessageBytes, {}).catch((err: unknown) => {
      if (err instanceof HttpError && err.status === 413) refused(name, 413, 'too-large')
      throw err
    })
    if (!isRecord(body)) throw new HttpError(400, 'body must be a JSON object')
    const args = body.arguments ?? {}
    if (!isRecord(args)) throw new HttpError(400, '"arguments" must be an object')
    if (body.user !== undefined && typeof body.user !== 'string') throw new HttpError(400, '"user" must be a string')

    // A client that stops reading is gone too: the rest of the stream is dropped. One controller, not
    // AbortSignal.any: that keeps finalization-registry cells per call until the collector clears them.
    const answer = new NdjsonAnswer(res, () => gone.abort())
    try {
      // Only a streaming service sends chunks; a single answer is just the final line.
      const response = await untilAbandoned(
        caller.call(
          name,
          { user: body.user as string | undefined, arguments: args },
          {
            onChunk: (chunk) => answer.chunk(chunk),
            signal: gone.signal,
            // A traced caller's context goes on with the request: the bridge's spans join its trace.
            traceContext: contextToPass(req.headers),
            // Sent before the answer's first byte: every answer of a call that was sent carries it.
            onId: (id) => res.setHeader(REQUEST_ID_HEADER, id),
          },
        ),
      )
      answer.end({ response })
    } catch (err) {
      if (err instanceof CallerGoneError) return
      const error = callError(err)
      if (res.headersSent) return answer.end({ error })
      // The broker refused the request for now (e.g. the embedded broker's queue is full): a retry may work.
      if (isToolbridgeError(err) && err.retriable) return sendJson(res, 503, { error }, { 'retry-after': '1' })
      const status = STATUS_BY_ERROR_TYPE[error.type] ?? 502
      // Refused here, never sent (no request id): the bridge cannot count it, so the gateway does.
      if (status === 422 && !res.hasHeader(REQUEST_ID_HEADER)) refused(name, status, error.type)
      sendJson(res, status, { error })
    }
  }

  /** The call's answer, or an `unavailable` error once close() stops waiting for it. */
  function untilAbandoned(call: Promise<string>): Promise<string> {
    if (abandon.signal.aborted) return Promise.reject(abandonedError())
    return new Promise((resolve, reject) => {
      const onAbandon = () => reject(abandonedError())
      abandon.signal.addEventListener('abort', onAbandon, { once: true })
      call.then(resolve, reject).finally(() => abandon.signal.removeEventListener('abort', onAbandon))
    })
  }

  /** A route that runs tools: refused while draining, else one slot of the cap for the call. */
  async function runTools(
    route: Route & { runsTools: true },
    req: IncomingMessage,
    res: ServerResponse,
    params: readonly string[],
  ): Promise<void> {
    if (draining) {
      const message = 'toolbridge is shutting down: try again shortly (another replica may answer)'
      if (route.jsonRpc) return (await loadMcp()).jsonRpcError(res, 503, message, RETRY_LATER)
      return sendJson(res, 503, { error: { type: 'unavailable', message } }, RETRY_LATER)
    }
    let release: () => void
    try {
      release = cap.enter()
    } catch (err) {
      // The tool route's one parameter is the tool's name; MCP's calls are counted by its own replies.
      const tool = route.jsonRpc ? undefined : params[0]
      if (tool !== undefined && err instanceof HttpError) refused(tool, err.status, 'too-many-requests')
      throw err
    }
    // A caller that goes away frees its slot at once; a call it left waiting is never sent (admission.ts).
    const gone = new AbortController()
    res.once('close', () => {
      release()
      if (!res.writableFinished) gone.abort()
    })
    const call = route.handle(req, res, params, gone)
    const tracked = call.catch(() => {}).finally(release)
    active.add(tracked)
    void tracked.then(() => active.delete(tracked))
    return call
  }

  const open = (path: string, handle: PlainRoute['handle']): Route => ({
    path,
    methods: READ_METHODS,
    access: 'open',
    handle,
  })
  /** Every endpoint; the first whose path matches answers. */
  const routes: Route[] = [
    open('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' })),
    open('/readyz', (_req, res) => {
      const ready = options.ready?.() ?? true
      sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' })
    }),
    ...(options.metrics
      ? [
          open('/metrics', async (_req, res) => {
            const { contentType, body } = await options.metrics!.render()
            res.writeHead(200, { 'content-type': contentType }).end(body)
          }),
        ]
      : []),
    // Public, and read by browser-based clients before they have a token.
    ...[...metadataPaths].map((path) =>
      open(path, (_req, res) =>
        sendJson(res, 200, oauth!.protectedResourceMetadata(oauth!.settings), { 'access-control-allow-origin': '*' }),
      ),
    ),
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
      handle: (req, res, [tool], gone) => callTool(tool!, req, res, gone),
    },
    ...(options.console ? consoleRoutes(options.console) : []),
  ]

  /** The web console: its page holds no data, so only its Host is checked; what it shows comes from the guarded API. */
  function consoleRoutes(feed: ConsoleFeed): Route[] {
    return [
      {
        path: (path) => (isConsoleAsset(path) ? [path] : undefined),
        methods: READ_METHODS,
        access: 'page',
        handle: (_req, res, [path]) => serveConsoleAsset(path!, res),
      },
      {
        path: (path) => (isConsoleApi(path) ? [path] : undefined),
        access: '/tools',
        handle: (req, res, [path]) => serveConsoleApi(path!, req, res, { feed, services }),
      },
    ]
  }

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
    answer(req, res, found, path).catch(async (err: unknown) => {
      if (res.headersSent) return void res.end()
      const status = err instanceof HttpError ? err.status : 500
      const headers = err instanceof HttpError ? err.headers : {}
      const message = bounded(messageOf(err))
      if (found?.route.jsonRpc) return (await loadMcp()).jsonRpcError(res, status, message, headers)
      sendJson(res, status, { error: { type: 'http', message } }, headers)
    })
  })
  // Each connection costs a socket and its buffers even before it sends anything; probes still get in.
  new ConnectionLimit(Math.max(1024, 2 * cap.max), {
    evicted: () => options.metrics?.httpConnectionClosed('evicted-idle'),
    refused: () => options.metrics?.httpConnectionClosed('all-busy'),
  }).attach(server)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, options.host, resolve)
    })
  } catch (err) {
    await caller.close()
    if (isRecord(err) && err.code === 'EADDRINUSE') {
      throw new ToolbridgeError(
        'config',
        `HTTP port ${options.host}:${options.port} is already in use (another toolbridge start?): choose another with --port, or --port off`,
      )
    }
    throw err
  }
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}`,
    get inFlight() {
      return cap.inFlight
    },
    drain() {
      draining = true
    },
    async close({ abandonAfterMs }: { abandonAfterMs?: number } = {}) {
      draining = true
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      // Calls in flight get their answers (each is bounded by its timeout), or an error once abandoned.
      const timer = abandonAfterMs === undefined ? undefined : setTimeout(() => abandon.abort(), abandonAfterMs)
      await Promise.allSettled(active)
      clearTimeout(timer)
      mcpHandler?.close()
      server.closeAllConnections()
      await closed
      await caller.close()
    },
  }
}

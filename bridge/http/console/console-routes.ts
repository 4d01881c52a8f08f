/**
 * The web console's routes on the gateway: the page and its script and
 * style (static: no data in them, so a page opened before the token is
 * given shows nothing), and the data it reads, behind the same Host, Origin
 * and token checks as /tools (the gateway guards them). Calls themselves go
 * to POST /tools/<tool> like any client's.
 *
 *   GET /                      the page (assets/index.html)
 *   GET /console/app.js|css    its script (and the module it imports) and style
 *   GET /console/api/tools     services, tools, their TrustGraph descriptors and MCP schemas
 *   GET /console/api/events    server-sent events: `request` per answered request, `status` of the code
 *                              (event-streams.ts: how many at once, and a reader that falls behind)
 *   GET /console/api/stats     per tool and minute: requests, errors, p50/p99 latency
 */
import { readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { inputSchema } from '../../../shared/arguments.ts'
import { toolDescriptor, toolServiceDescriptor } from '../../project/descriptors.ts'
import type { ToolServiceSpec } from '../../project/tool-services.ts'
import { sendJson } from '../responses.ts'
import { READ_METHODS, type Route } from '../routes.ts'
import type { ConsoleFeed } from './console-feed.ts'

const asset = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url))

/** Read once: the console is four small files. */
const ASSETS = new Map<string, { type: string; body: Buffer }>([
  ['/', { type: 'text/html; charset=utf-8', body: asset('index.html') }],
  ['/console/app.js', { type: 'text/javascript; charset=utf-8', body: asset('app.js') }],
  ['/console/awaited-reports.js', { type: 'text/javascript; charset=utf-8', body: asset('awaited-reports.js') }],
  ['/console/app.css', { type: 'text/css; charset=utf-8', body: asset('app.css') }],
])

/**
 * Only the console's own files run, and no other site may frame it (a click on a framed
 * "Call" would be a call by the user); everything shown is set as text by app.js.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
}

/** The console's entries of the gateway's route table: its page holds no data, so only its Host is checked. */
export function consoleRoutes(feed: ConsoleFeed, services: readonly ToolServiceSpec[]): Route[] {
  return [
    {
      path: (path) => (ASSETS.has(path) ? [path] : undefined),
      methods: READ_METHODS,
      access: 'page',
      handle: (_req, res, [path]) => serveConsoleAsset(path!, res),
    },
    {
      path: (path) => (path.startsWith('/console/api/') ? [path] : undefined),
      access: '/tools',
      handle: (req, res, [path]) => serveConsoleApi(path!, req, res, { feed, services }),
    },
  ]
}

function serveConsoleAsset(path: string, res: ServerResponse): void {
  const found = ASSETS.get(path)!
  res.writeHead(200, { 'content-type': found.type, ...PAGE_HEADERS }).end(found.body)
}

/** What the console lists: every service and tool as serverless.yml declares them, and what each produces. */
export function consoleTools(services: readonly ToolServiceSpec[]) {
  return services.map((spec) => ({
    id: spec.id,
    functionName: spec.functionName,
    response: spec.response,
    concurrency: spec.concurrency,
    timeoutMs: spec.timeoutMs,
    configParams: spec.configParams,
    descriptor: toolServiceDescriptor(spec),
    tools: spec.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      config: tool.config,
      arguments: tool.arguments,
      descriptor: toolDescriptor(spec, tool),
      mcp: {
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema ?? inputSchema(tool.arguments),
      },
    })),
  }))
}

/** Answers GET /console/api/<what>, or 404. */
function serveConsoleApi(
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  context: { feed: ConsoleFeed; services: readonly ToolServiceSpec[] },
): void {
  const { feed } = context
  if (req.method !== 'GET')
    return sendJson(res, 405, { error: { type: 'http', message: `no route for ${req.method}` } })
  if (path === '/console/api/tools') return sendJson(res, 200, { services: consoleTools(context.services) })
  if (path === '/console/api/stats') return sendJson(res, 200, { tools: feed.stats.series(Date.now()) })
  if (path === '/console/api/events') return streamEvents(req, res, feed)
  sendJson(res, 404, { error: { type: 'http', message: `no console route ${path}` } })
}

function streamEvents(req: IncomingMessage, res: ServerResponse, feed: ConsoleFeed): void {
  const after = Number(new URL(req.url ?? '/', 'http://console').searchParams.get('after') ?? 0) || 0
  if (feed.streams.open(res, after)) return
  res.setHeader('retry-after', '10')
  sendJson(res, 503, {
    error: {
      type: 'http',
      message:
        `${feed.streams.size} console event streams are open, the most there may be at once; ` +
        'close a console tab, or try again once one has closed',
    },
  })
}

/**
 * The gateway's routes as data: each endpoint is one entry (its path, the
 * methods it answers, who may reach it, and its handler), so adding one is
 * adding an entry, and what guards it is read off the table, not off a
 * chain of ifs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * Who may reach a route:
 * - `open`: anyone (probes, metrics, OAuth metadata);
 * - `page`: a request from an allowed Host (and Origin), no token: the console's files hold no data;
 * - `/tools`, `/mcp`: Host, Origin and that endpoint's token (or OAuth access token), CORS answered.
 */
export type Access = 'open' | 'page' | '/tools' | '/mcp'

interface RouteBase {
  /** The path, or a test of it that returns the path's parameters (undefined: another route's). */
  path: string | ((path: string) => string[] | undefined)
  /** The methods it answers; another gets 405, after the guard, so a refused caller learns nothing. Absent: any. */
  methods?: readonly string[]
  access: Access
  /** Its errors are answered as JSON-RPC (MCP's Streamable HTTP), not as the gateway's JSON. */
  jsonRpc?: boolean
}

/** An endpoint that answers by itself. */
export interface PlainRoute extends RouteBase {
  runsTools?: false
  handle(req: IncomingMessage, res: ServerResponse, params: readonly string[]): Promise<void> | void
}

/**
 * An endpoint that runs tools: refused while the gateway drains, each call holding a slot of the
 * in-flight cap, and told by `gone` when its caller goes away.
 */
interface ToolRoute extends RouteBase {
  runsTools: true
  handle(req: IncomingMessage, res: ServerResponse, params: readonly string[], gone: AbortController): Promise<void>
}

export type Route = PlainRoute | ToolRoute

export const READ_METHODS = ['GET', 'HEAD'] as const

export interface Found {
  route: Route
  params: readonly string[]
}

/** The first route whose path matches (methods are checked by the caller, after the route's guard). */
export function findRoute(routes: readonly Route[], path: string): Found | undefined {
  for (const route of routes) {
    if (typeof route.path === 'string') {
      if (route.path === path) return { route, params: [] }
      continue
    }
    const params = route.path(path)
    if (params) return { route, params }
  }
  return undefined
}

/** Whether a found route answers this method (a CORS preflight is answered by the guard before this). */
export const answersMethod = (route: Route, method: string | undefined): boolean =>
  route.methods === undefined || route.methods.includes(method ?? '')

/** A route anyone may read (GET, HEAD): probes, metrics, OAuth metadata. */
export const openRoute = (path: string, handle: PlainRoute['handle']): Route => ({
  path,
  methods: READ_METHODS,
  access: 'open',
  handle,
})

/**
 * Who may reach the endpoints that run tools from a browser. Without these
 * checks any web page could call a gateway on the developer's machine: a
 * cross-site POST runs a tool (the page cannot read the answer, but the tool
 * has run), and a DNS-rebinding page (its own name re-pointed at 127.0.0.1)
 * can call and read as if it were same-origin.
 *
 * - `Host` must be an IP address, `localhost`, the name the gateway listens
 *   on, this machine's name when listening on every interface, or one of
 *   the allowed hosts. A rebinding page can only send a name its owner
 *   controls, never an IP address.
 * - `Origin`, which browsers send on cross-site and rebinding requests (and
 *   tools such as curl do not), must be one of the allowed origins, or the
 *   gateway's own origin, `http://<Host>`, when the Host is one allowed by
 *   name or address: a browser sends Origin even on a page's calls to its
 *   own server (the console's, a local web client's), and a rebinding page
 *   cannot have such a Host. On a loopback bind, any origin on this machine
 *   (`localhost`, `127.0.0.1`, `[::1]`, any port, http or https) is allowed
 *   too, as MCP's own SDKs allow: only a page this machine serves has one,
 *   and the gateway is reachable from nowhere else anyway.
 *   A page of an allowed origin gets the CORS headers it needs to read the
 *   answers (corsHeaders), its preflight included.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { hostname } from 'node:os'

export interface HostOriginPolicy {
  /** The address or name the gateway listens on. */
  listenHost: string
  /** Extra host names (lower case); `*` allows any. */
  allowedHosts: readonly string[]
  /** Allowed origins (lower case, `scheme://host[:port]`). */
  allowedOrigins: readonly string[]
  /** The gateway listens on a loopback address only: origins on this machine are allowed. */
  loopback?: boolean
}

/** What a refused request is told: the header at fault and how to allow it. */
export interface Refusal {
  status: 403
  message: string
}

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', ''])

/** The names an origin on this machine has. */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1'])

/** Whether `origin` is `http(s)://` one of this machine's names, with any port. */
function isLoopbackOrigin(origin: string): boolean {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  return LOOPBACK_NAMES.has(url.hostname.replace(/^\[|\]$/g, '').toLowerCase())
}

/** The name part of a Host header: `[::1]:8080` -> `::1`, `Example.com:80` -> `example.com`. */
export function hostName(header: string): string {
  const lower = header.trim().toLowerCase()
  if (lower.startsWith('[')) return lower.slice(1, lower.indexOf(']') >= 0 ? lower.indexOf(']') : undefined)
  const colon = lower.lastIndexOf(':')
  return (colon >= 0 ? lower.slice(0, colon) : lower).replace(/\.$/, '')
}

export function createHostOriginCheck(policy: HostOriginPolicy): (req: IncomingMessage) => Refusal | undefined {
  // On every interface the gateway is reached by this machine's name; `0.0.0.0`, `::` or an empty name is no name.
  const listenName = WILDCARDS.has(policy.listenHost) ? hostname().toLowerCase() : hostName(policy.listenHost)
  const names = new Set(['localhost', listenName, ...policy.allowedHosts])
  const anyHost = policy.allowedHosts.includes('*')
  const origins = new Set(policy.allowedOrigins)

  return (req) => {
    const host = req.headers.host
    const named = host !== undefined && (isIP(hostName(host)) !== 0 || names.has(hostName(host)))
    // HTTP/1.0 may leave Host out; browsers always send it.
    if (host !== undefined && !anyHost) {
      if (!named) {
        return {
          status: 403,
          message: `Host "${host.slice(0, 200)}" is not allowed: add it with --allowed-hosts (env TOOLBRIDGE_ALLOWED_HOSTS)`,
        }
      }
    }
    const origin = req.headers.origin
    const own = named && origin?.toLowerCase() === `http://${host?.trim().toLowerCase()}`
    const local = policy.loopback === true && origin !== undefined && isLoopbackOrigin(origin)
    if (origin !== undefined && !origins.has(origin.toLowerCase()) && !own && !local) {
      return {
        status: 403,
        message: `Origin "${origin.slice(0, 200)}" is not allowed: add it with --allowed-origins (env TOOLBRIDGE_ALLOWED_ORIGINS)`,
      }
    }
    return undefined
  }
}

/** What a browser page may send: MCP's own headers of both eras, the token, and W3C trace context. */
const ALLOWED_REQUEST_HEADERS =
  'authorization, content-type, accept, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id, traceparent, tracestate'

/** What a browser page may read besides the safelisted headers: the token challenge, when to retry, its call's request id (gateway.ts). */
const EXPOSED_HEADERS = 'www-authenticate, retry-after, mcp-session-id, toolbridge-request-id'

/** How long a browser may reuse a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = '600'

/**
 * The CORS headers for a request that passed the check: none without an
 * `Origin` (not a browser, or same-origin), else the origin echoed (never
 * `*`, so a token may be sent) with `Vary: Origin`, and for a preflight
 * (`OPTIONS`) the methods and headers a page may use.
 */
export function corsHeaders(method: string | undefined, origin: string | undefined): Record<string, string> {
  if (origin === undefined) return {}
  const headers: Record<string, string> = {
    'access-control-allow-origin': origin,
    vary: 'Origin',
    'access-control-expose-headers': EXPOSED_HEADERS,
  }
  if (method !== 'OPTIONS') return headers
  return {
    ...headers,
    'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
    'access-control-allow-headers': ALLOWED_REQUEST_HEADERS,
    'access-control-max-age': PREFLIGHT_MAX_AGE,
  }
}

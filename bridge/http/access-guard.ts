/**
 * Who may reach a route (routes.ts's `Access`), checked before its handler
 * runs: Host and Origin (host-origin.ts) for the console's page and the
 * endpoints that run tools, and for those also CORS, their bearer token or,
 * on /mcp, an OAuth access token (oauth.ts). A refusal is thrown as an
 * HttpError; who tried is logged, never what they sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { McpOAuthSettings } from '../project/settings.ts'
import type { Logger } from '../support/logger.ts'
import { bearerMatches } from './bearer.ts'
import { type EndpointTokens, endpointGuards } from './exposure.ts'
import { corsHeaders, type Refusal as HostRefusal } from './host-origin.ts'
import type { AccessTokenVerifier, Refusal as TokenRefusal } from './oauth.ts'
import { HttpError } from './responses.ts'
import type { Access } from './routes.ts'

/** What a caller refused for now is told to wait before trying again. */
const RETRY_LATER = { 'retry-after': '1' }

export interface AccessGuardOptions {
  hostOrigin: (req: IncomingMessage) => HostRefusal | undefined
  tokens: EndpointTokens
  /** /mcp takes this issuer's access tokens instead of a static token. */
  oauth:
    | {
        settings: McpOAuthSettings
        verifier: AccessTokenVerifier
        challenge: (refusal: TokenRefusal, settings: McpOAuthSettings) => string
      }
    | undefined
  logger: Logger
}

export type AccessGuard = (access: Access, req: IncomingMessage, res: ServerResponse) => Promise<boolean>

export function createAccessGuard({ hostOrigin, tokens, oauth, logger }: AccessGuardOptions): AccessGuard {
  const tokenFor = new Map(endpointGuards(tokens).map((e) => [e.path, e.token]))
  /**
   * What a route's access asks, checked: for `page` the Host and Origin; for /tools and /mcp also
   * their token, with CORS headers set. Throws the refusal; true when it has answered the request
   * itself (a CORS preflight).
   */
  return async function guard(access: Access, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    if (access === 'open') return false
    const refusal = hostOrigin(req)
    if (refusal) throw new HttpError(refusal.status, refusal.message)
    if (access === 'page') return false
    const path = access
    // Set before anything answers: every answer to an allowed page carries them, refusals included.
    for (const [name, value] of Object.entries(corsHeaders(req.method, req.headers.origin))) res.setHeader(name, value)
    // A preflight carries no token: it asks what the page may send, and runs nothing.
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end()
      return true
    }
    // RFC 6750 allows a token in the URL; OAuth 2.1 and MCP forbid it: URLs end up in logs and histories.
    if (new URL(req.url ?? '/', 'http://gateway').searchParams.has('access_token')) {
      throw new HttpError(400, 'send the access token in the Authorization header, never in the URL', {
        'www-authenticate': 'Bearer error="invalid_request"',
      })
    }
    if (path === '/mcp' && oauth) {
      const refused = await oauth.verifier.check(req.headers.authorization)
      if (refused) {
        logger.warn(
          { path, method: req.method, remoteAddress: req.socket.remoteAddress, why: refused.description },
          'MCP request refused: access token',
        )
        const headers =
          refused.status === 503 ? RETRY_LATER : { 'www-authenticate': oauth.challenge(refused, oauth.settings) }
        throw new HttpError(refused.status, refused.description, headers)
      }
    }
    const token = tokenFor.get(path)
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      // Who tried, never what they sent.
      logger.warn(
        { path, method: req.method, remoteAddress: req.socket.remoteAddress },
        'HTTP request refused: missing or wrong bearer token',
      )
      throw new HttpError(401, 'missing or wrong bearer token', { 'www-authenticate': 'Bearer' })
    }
    return false
  }
}

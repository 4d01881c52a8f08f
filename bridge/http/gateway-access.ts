/**
 * Who may reach the gateway, settled at its start: the exposure check (no
 * open tool endpoints on a non-loopback address), the Host and Origin check,
 * the endpoints' tokens or OAuth, and the public OAuth metadata routes.
 */
import type { McpOAuthSettings } from '../project/settings.ts'
import type { Logger } from '../support/logger.ts'
import { type AccessGuard, createAccessGuard } from './access-guard.ts'
import { checkExposure, isLoopbackHost } from './exposure.ts'
import { createHostOriginCheck } from './host-origin.ts'
import { sendJson } from './responses.ts'
import { openRoute, type Route } from './routes.ts'

export interface GatewayAccessOptions {
  /** The address listened on: a loopback one takes local origins (host-origin.ts), another needs a token (exposure.ts). */
  host: string
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
}

export async function createGatewayAccess(
  options: GatewayAccessOptions,
  logger: Logger,
): Promise<{ guard: AccessGuard; metadataRoutes: Route[] }> {
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
  if (!oauth) return { guard, metadataRoutes: [] }
  const paths = new Set([
    '/.well-known/oauth-protected-resource',
    new URL(oauth.resourceMetadataUrl(oauth.settings.audience)).pathname,
  ])
  // Public, and read by browser-based clients before they have a token.
  const metadataRoutes = [...paths].map((path) =>
    openRoute(path, (_req, res) =>
      sendJson(res, 200, oauth.protectedResourceMetadata(oauth.settings), { 'access-control-allow-origin': '*' }),
    ),
  )
  return { guard, metadataRoutes }
}

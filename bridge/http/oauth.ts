/**
 * /mcp as an OAuth 2.1 resource server (MCP's authorization section): the
 * client gets a token from the authorization server (any OpenID Connect or
 * RFC 8414 issuer) and sends it as `Authorization: Bearer`; the gateway
 * checks it and keeps it. Nothing of the token reaches a function.
 *
 * - A JWT signed by a key of the issuer's JWKS (found through its metadata,
 *   or given), with an asymmetric algorithm only (no `none`, no HMAC keyed
 *   with a public key), from that issuer (`iss`), for this resource (`aud`,
 *   RFC 8707), not expired (`exp` required), with every required scope.
 * - Refusals as RFC 6750 and RFC 9728 say: 401 with `WWW-Authenticate:
 *   Bearer resource_metadata="…"` (and `error="invalid_token"` when a token
 *   was sent), 403 `insufficient_scope` naming the scopes needed.
 * - The Protected Resource Metadata document (RFC 9728) that tells clients
 *   where to get a token.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose'
import type { McpOAuthSettings } from '../project/settings.ts'

type OAuthSettings = McpOAuthSettings

/** What a request is answered when its token is refused. */
export interface Refusal {
  status: 401 | 403 | 503
  /** RFC 6750 error code; none when no token was sent. */
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope'
  description: string
}

/** Signature algorithms taken: public-key ones only. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']

/** The scheme name is case-insensitive (RFC 7235); the token is RFC 6750's b64token. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** The token of an Authorization header, undefined for none or another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  return BEARER.exec(header ?? '')?.[1]
}

/** The scopes a token grants: `scope` (RFC 8693/9068, space-separated) or `scp` (a list, as some issuers send). */
export function grantedScopes(payload: JWTPayload): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(' ').filter((s) => s !== '')
  if (Array.isArray(payload.scp)) return payload.scp.filter((s): s is string => typeof s === 'string')
  if (typeof payload.scp === 'string') return payload.scp.split(' ').filter((s) => s !== '')
  return []
}

/** RFC 9728 §3.1: the metadata's URL has its well-known part put before the resource's path. */
export function resourceMetadataUrl(audience: string): string {
  const url = new URL(audience)
  const path = url.pathname.replace(/\/$/, '')
  return `${url.origin}/.well-known/oauth-protected-resource${path}`
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`

/** The `WWW-Authenticate` value for a refusal (RFC 6750 §3, with RFC 9728's `resource_metadata`). */
export function challenge(refusal: Refusal, settings: OAuthSettings): string {
  const params = [`resource_metadata=${quoted(resourceMetadataUrl(settings.audience))}`]
  if (settings.scopes.length > 0) params.push(`scope=${quoted(settings.scopes.join(' '))}`)
  if (refusal.error !== undefined) {
    params.push(`error=${quoted(refusal.error)}`, `error_description=${quoted(refusal.description)}`)
  }
  return `Bearer ${params.join(', ')}`
}

/** The Protected Resource Metadata document (RFC 9728 §2). */
export function protectedResourceMetadata(settings: OAuthSettings) {
  return {
    resource: settings.audience,
    authorization_servers: [settings.issuer],
    ...(settings.scopes.length > 0 ? { scopes_supported: settings.scopes } : {}),
    bearer_methods_supported: ['header'],
    resource_name: 'toolbridge MCP',
  }
}

/** Where the issuer's metadata may be: OpenID Connect discovery, then RFC 8414 (path inserted). */
function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/$/, '')
  return [
    `${url.origin}${path}/.well-known/openid-configuration`,
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
  ]
}

async function discoverJwksUrl(issuer: string): Promise<string> {
  for (const url of metadataUrls(issuer)) {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000), headers: { accept: 'application/json' } })
    if (!res.ok) continue
    const metadata = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown }
    // RFC 8414 §3.3: metadata for another issuer is not this one's.
    if (metadata.issuer !== issuer) throw new Error(`${url} names issuer ${JSON.stringify(metadata.issuer)}`)
    if (typeof metadata.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`)
    return metadata.jwks_uri
  }
  throw new Error(`no authorization server metadata at ${metadataUrls(issuer).join(' or ')}`)
}

export interface AccessTokenVerifier {
  /** undefined when the request may go on; else how to refuse it. */
  check(authorization: string | undefined): Promise<Refusal | undefined>
}

export function createAccessTokenVerifier(settings: OAuthSettings): AccessTokenVerifier {
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined
  const keySet = () => {
    keys ??= (settings.jwksUrl ? Promise.resolve(settings.jwksUrl) : discoverJwksUrl(settings.issuer)).then((url) =>
      createRemoteJWKSet(new URL(url)),
    )
    // A failed discovery is tried again by the next request, not kept.
    keys.catch(() => (keys = undefined))
    return keys
  }
  const refusal = (status: Refusal['status'], description: string, error?: Refusal['error']): Refusal => ({
    status,
    description,
    ...(error ? { error } : {}),
  })

  return {
    async check(authorization) {
      if (authorization === undefined || authorization.trim() === '') return refusal(401, 'an access token is required')
      const token = bearerToken(authorization)
      if (token === undefined) return refusal(401, 'the Authorization header is not "Bearer <token>"', 'invalid_token')
      let payload: JWTPayload
      let typ: string | undefined
      try {
        ;({
          payload,
          protectedHeader: { typ },
        } = await jwtVerify(token, await keySet(), {
          issuer: settings.issuer,
          audience: settings.audience,
          algorithms: ALGORITHMS,
          requiredClaims: ['exp'],
        }))
      } catch (err) {
        if (err instanceof errors.JOSEError && !(err instanceof errors.JWKSTimeout))
          return refusal(401, tokenProblem(err), 'invalid_token')
        // The issuer's keys could not be had: the token may be fine, so try later rather than refuse it.
        return refusal(503, `the authorization server's keys could not be fetched: ${(err as Error).message}`)
      }
      const type = typeProblem(typ, settings.allowUntypedTokens)
      if (type) return refusal(401, type, 'invalid_token')
      // jose checks `iat` only against a maximum age; one from the future is a token not yet issued.
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS)
        return refusal(401, 'the token\'s "iat" is in the future (beyond the allowed clock skew)', 'invalid_token')
      const granted = new Set(grantedScopes(payload))
      const missing = settings.scopes.filter((scope) => !granted.has(scope))
      if (missing.length > 0)
        return refusal(403, `the token lacks the scope ${missing.join(' ')}`, 'insufficient_scope')
      return undefined
    },
  }
}

/** How far ahead of this machine's clock an issuer's may be. */
export const CLOCK_SKEW_SECONDS = 60

/**
 * Why a token of this `typ` is not an access token for this resource: RFC 9068 has access
 * tokens say `at+jwt` (`application/at+jwt`), so that an ID token or a DPoP proof, signed by
 * the same keys, is not taken for one. Issuers that omit it are taken with `allowUntyped`.
 */
function typeProblem(typ: string | undefined, allowUntyped: boolean): string | undefined {
  const type = typ?.toLowerCase().replace(/^application\//, '')
  if (type === 'at+jwt') return undefined
  if (allowUntyped && (type === undefined || type === 'jwt')) return undefined
  const named = typ === undefined ? 'has no "typ"' : `has "typ" ${JSON.stringify(typ.slice(0, 40))}`
  return `the token ${named}, not "at+jwt" (RFC 9068)${allowUntyped ? '' : '; for an issuer that omits it, start with --mcp-allow-untyped-tokens'}`
}

/** What was wrong with a token, in words that do not repeat it. */
function tokenProblem(err: errors.JOSEError): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired'
  if (err instanceof errors.JWTClaimValidationFailed) return `the token's "${err.claim}" claim is not accepted`
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the token is not signed with an accepted algorithm'
  if (err instanceof errors.JWKSNoMatchingKey) return "no key of the issuer's key set matches the token"
  if (err instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify"
  return 'the token is not a valid JWT'
}

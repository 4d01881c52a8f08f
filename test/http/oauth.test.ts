/**
 * /mcp as an OAuth resource server (bridge/http/oauth.ts): tokens signed
 * with real keys, whose public halves an authorization server in this test
 * serves over HTTP (OpenID Connect discovery and a JWKS), as any OIDC
 * provider does.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  bearerToken,
  challenge,
  createAccessTokenVerifier,
  grantedScopes,
  protectedResourceMetadata,
  resourceMetadataUrl,
} from '../../bridge/http/oauth.ts'
import { type McpOAuthSettings, resolveSettings } from '../../bridge/project/settings.ts'
import type { Runtime } from '../../bridge/runtime.ts'
import { startInProcess } from '../support/in-process-runtime.ts'

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>

/** An authorization server's public face: its metadata and its key set, on a port of its own. */
class AuthorizationServer {
  server!: Server
  issuer = ''
  keys: JWK[] = []
  metadataRequests = 0
  /** Metadata requests to answer with 500 before answering again. */
  failures = 0

  /** Metadata documents by path: OpenID Connect discovery under issuers with paths, and RFC 8414's form. */
  private metadata(url: string): Record<string, unknown> | undefined {
    const root = this.issuer
    const documents: Record<string, Record<string, unknown>> = {
      '/.well-known/openid-configuration': { issuer: root, jwks_uri: `${root}/jwks` },
      '/realms/oidc/.well-known/openid-configuration': { issuer: `${root}/realms/oidc`, jwks_uri: `${root}/jwks` },
      '/.well-known/oauth-authorization-server/realms/plain': {
        issuer: `${root}/realms/plain`,
        jwks_uri: `${root}/jwks`,
      },
      '/realms/impostor/.well-known/openid-configuration': { issuer: 'https://someone.else', jwks_uri: `${root}/jwks` },
      '/realms/keyless/.well-known/openid-configuration': { issuer: `${root}/realms/keyless` },
    }
    return documents[url]
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const metadata = this.metadata(req.url ?? '')
      if (metadata) {
        this.metadataRequests++
        // As strict as some providers: JSON must be asked for.
        if (this.failures > 0 || req.headers.accept !== 'application/json') {
          this.failures--
          return void res.writeHead(500).end()
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        return void res.end(JSON.stringify(metadata))
      }
      if (req.url === '/jwks') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return void res.end(JSON.stringify({ keys: this.keys }))
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async publish(pair: KeyPair, kid: string, alg: string): Promise<void> {
    this.keys.push({ ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' })
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

const AUDIENCE = 'https://tools.example.com/mcp'
const HOUR = 3600

let as: AuthorizationServer
let signing: KeyPair
let rsa: KeyPair
let stranger: KeyPair
let settings: McpOAuthSettings

beforeAll(async () => {
  as = new AuthorizationServer()
  await as.start()
  signing = await generateKeyPair('ES256')
  rsa = await generateKeyPair('RS256')
  stranger = await generateKeyPair('ES256')
  await as.publish(signing, 'es', 'ES256')
  await as.publish(rsa, 'rs', 'RS256')
  settings = {
    issuer: as.issuer,
    audience: AUDIENCE,
    scopes: ['tools:call'],
    jwksUrl: undefined,
    allowUntypedTokens: false,
  }
})
afterAll(() => as?.close())

/** A token as the authorization server issues it (an RFC 9068 access token), with `claims` over the usual ones. */
async function token(
  claims: JWTPayload = {},
  key: KeyPair = signing,
  header: { alg: string; kid: string; typ?: string | undefined } = { alg: 'ES256', kid: 'es' },
) {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({
    iss: as.issuer,
    aud: AUDIENCE,
    sub: 'user-1',
    iat: now,
    exp: now + HOUR,
    scope: 'openid tools:call',
    ...claims,
  })
    .setProtectedHeader({ typ: 'at+jwt', ...header })
    .sign(key.privateKey)
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

describe('the pieces of a refusal', () => {
  it('reads a Bearer token in any case of the scheme, and nothing else', () => {
    expect(bearerToken('Bearer abc.def-ghi_jkl')).toBe('abc.def-ghi_jkl')
    expect(bearerToken('bearer  abc==')).toBe('abc==')
    expect(bearerToken('Basic dXNlcjpwYXNz')).toBeUndefined()
    expect(bearerToken('Bearer')).toBeUndefined()
    expect(bearerToken('Bearer a b')).toBeUndefined()
    expect(bearerToken('XBearer abc')).toBeUndefined()
    expect(bearerToken(undefined)).toBeUndefined()
  })

  it('reads the scopes of `scope` (space-separated) or `scp` (a list, or a string)', () => {
    expect(grantedScopes({ scope: 'a  b' })).toEqual(['a', 'b'])
    expect(grantedScopes({ scp: ['a', 3, 'b'] })).toEqual(['a', 'b'])
    expect(grantedScopes({ scp: ' a  b' })).toEqual(['a', 'b'])
    expect(grantedScopes({})).toEqual([])
  })

  it("puts the metadata's well-known part before the resource's path (RFC 9728)", () => {
    expect(resourceMetadataUrl('https://tools.example.com/mcp')).toBe(
      'https://tools.example.com/.well-known/oauth-protected-resource/mcp',
    )
    expect(resourceMetadataUrl('https://tools.example.com/')).toBe(
      'https://tools.example.com/.well-known/oauth-protected-resource',
    )
    expect(resourceMetadataUrl('http://h:8080/a/mcp/')).toBe('http://h:8080/.well-known/oauth-protected-resource/a/mcp')
  })

  it('challenges with resource_metadata and the scopes, and the error only when a token was sent', () => {
    const metadata = 'resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp"'
    expect(challenge({ status: 401, description: 'an access token is required' }, { ...settings, scopes: [] })).toBe(
      `Bearer ${metadata}`,
    )
    expect(
      challenge(
        { status: 403, error: 'insufficient_scope', description: 'needs "tools:call"' },
        { ...settings, scopes: ['tools:call', 'x'] },
      ),
    ).toBe(
      `Bearer ${metadata}, scope="tools:call x", error="insufficient_scope", error_description="needs \\"tools:call\\""`,
    )
  })

  it('describes the resource: its identifier, its authorization server, its scopes, tokens in the header only', () => {
    expect(protectedResourceMetadata(settings)).toEqual({
      resource: AUDIENCE,
      authorization_servers: [as.issuer],
      scopes_supported: ['tools:call'],
      bearer_methods_supported: ['header'],
      resource_name: 'toolbridge MCP',
    })
    expect(protectedResourceMetadata({ ...settings, scopes: [] })).not.toHaveProperty('scopes_supported')
  })
})

describe('access tokens checked against the issuer’s published keys', () => {
  const check = async (authorization: string | undefined, overrides: Partial<McpOAuthSettings> = {}) =>
    createAccessTokenVerifier({ ...settings, ...overrides }).check(authorization)

  it('takes a token of the issuer, for this audience, in time, with the scope, signed ES256 or RS256', async () => {
    expect(await check(`Bearer ${await token()}`)).toBeUndefined()
    expect(await check(`Bearer ${await token({}, rsa, { alg: 'RS256', kid: 'rs' })}`)).toBeUndefined()
    expect(await check(`Bearer ${await token({ aud: ['other', AUDIENCE] })}`)).toBeUndefined()
    expect(await check(`Bearer ${await token({ scope: undefined, scp: ['tools:call'] })}`)).toBeUndefined()
    expect(await check(`Bearer ${await token({ scope: 'x' })}`, { scopes: [] })).toBeUndefined()
  })

  it('refuses expired, wrong-audience, wrong-issuer, never-expiring and foreign-key tokens with 401 invalid_token', async () => {
    const now = Math.floor(Date.now() / 1000)
    const cases: [string, string, string][] = [
      ['expired', await token({ exp: now - 120, iat: now - HOUR }), 'the token has expired'],
      [
        'wrong audience',
        await token({ aud: 'https://other.example.com/mcp' }),
        'the token\'s "aud" claim is not accepted',
      ],
      ['wrong issuer', await token({ iss: 'https://evil.example.com' }), 'the token\'s "iss" claim is not accepted'],
      ['no expiry', await token({ exp: undefined }), 'the token\'s "exp" claim is not accepted'],
      ['foreign key', await token({}, stranger), "the token's signature does not verify"],
      [
        'unknown key id',
        await token({}, stranger, { alg: 'ES256', kid: 'nope' }),
        "no key of the issuer's key set matches the token",
      ],
    ]
    for (const [what, jwt, description] of cases) {
      expect({ what, refusal: await check(`Bearer ${jwt}`) }).toEqual({
        what,
        refusal: { status: 401, error: 'invalid_token', description },
      })
    }
  })

  it('refuses a token not typed at+jwt (an ID token, a DPoP proof), unless told to take untyped ones', async () => {
    const es = { alg: 'ES256', kid: 'es' }
    expect(await check(`Bearer ${await token({}, signing, { ...es, typ: 'application/at+jwt' })}`)).toBeUndefined()
    for (const typ of [undefined, 'JWT', 'dpop+jwt']) {
      const refusal = await check(`Bearer ${await token({}, signing, { ...es, typ })}`)
      expect(refusal).toMatchObject({ status: 401, error: 'invalid_token' })
      expect(refusal?.description).toMatch(
        /not "at\+jwt" \(RFC 9068\); for an issuer that omits it, start with --mcp-allow-untyped-tokens$/,
      )
    }
    const lenient = { allowUntypedTokens: true }
    expect(await check(`Bearer ${await token({}, signing, { ...es, typ: undefined })}`, lenient)).toBeUndefined()
    expect(await check(`Bearer ${await token({}, signing, { ...es, typ: 'JWT' })}`, lenient)).toBeUndefined()
    expect(await check(`Bearer ${await token({}, signing, { ...es, typ: 'dpop+jwt' })}`, lenient)).toMatchObject({
      status: 401,
      description: 'the token has "typ" "dpop+jwt", not "at+jwt" (RFC 9068)',
    })
  })

  it('refuses a token issued (iat) beyond a small clock skew in the future, and takes one within it', async () => {
    const now = Math.floor(Date.now() / 1000)
    expect(await check(`Bearer ${await token({ iat: now + 365 * 24 * HOUR })}`)).toMatchObject({
      status: 401,
      error: 'invalid_token',
      description: 'the token\'s "iat" is in the future (beyond the allowed clock skew)',
    })
    expect(await check(`Bearer ${await token({ iat: now + 30 })}`)).toBeUndefined()
  })

  it('refuses alg none, an unsigned token, an HMAC token and garbage', async () => {
    const claims = {
      iss: as.issuer,
      aud: AUDIENCE,
      exp: Math.floor(Date.now() / 1000) + HOUR,
      scope: 'tools:call',
    }
    const none = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(claims)}.`
    const noSignature = `${base64url({ alg: 'ES256', kid: 'es' })}.${base64url(claims)}.`
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'es' })
      .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'))
    const notAccepted = 'the token is not signed with an accepted algorithm'
    for (const [what, jwt, description] of [
      ['alg none', none, notAccepted],
      ['unsigned', noSignature, "the token's signature does not verify"],
      ['hmac', hmac, notAccepted],
      ['garbage', 'not-a-jwt', 'the token is not a valid JWT'],
    ]) {
      const refusal = await check(`Bearer ${jwt}`)
      expect({ what, refusal }).toEqual({ what, refusal: { status: 401, error: 'invalid_token', description } })
    }
  })

  it('refuses a token without the required scope with 403 insufficient_scope, naming it', async () => {
    expect(await check(`Bearer ${await token({ scope: 'openid' })}`)).toEqual({
      status: 403,
      error: 'insufficient_scope',
      description: 'the token lacks the scope tools:call',
    })
    expect(await check(`Bearer ${await token()}`, { scopes: ['tools:call', 'admin', 'x'] })).toMatchObject({
      status: 403,
      description: 'the token lacks the scope admin x',
    })
  })

  it('asks for a token (no error code) when none is sent, and calls another scheme an invalid token', async () => {
    expect(await check(undefined)).toEqual({ status: 401, description: 'an access token is required' })
    expect(await check('  ')).toEqual({ status: 401, description: 'an access token is required' })
    expect(await check('Basic dXNlcjpwYXNz')).toEqual({
      status: 401,
      error: 'invalid_token',
      description: 'the Authorization header is not "Bearer <token>"',
    })
  })

  it('finds the keys through the issuer’s metadata once, or at the URL given; unreachable keys are 503, tried again later', async () => {
    const verifier = createAccessTokenVerifier(settings)
    const before = as.metadataRequests
    expect(await verifier.check(`Bearer ${await token()}`)).toBeUndefined()
    expect(await verifier.check(`Bearer ${await token()}`)).toBeUndefined()
    expect(as.metadataRequests).toBe(before + 1)
    expect(await check(`Bearer ${await token()}`, { jwksUrl: `${as.issuer}/jwks` })).toBeUndefined()
    expect(as.metadataRequests).toBe(before + 1)
    const gone = await check(`Bearer ${await token()}`, { issuer: 'http://127.0.0.1:1' })
    expect(gone).toMatchObject({ status: 503 })
    expect(gone!.description).toMatch(/^the authorization server's keys could not be fetched: /)
    const none = await check(`Bearer ${await token()}`, { issuer: `${as.issuer}/other` })
    expect(none).toEqual({
      status: 503,
      description: `the authorization server's keys could not be fetched: no authorization server metadata at ${as.issuer}/other/.well-known/openid-configuration or ${as.issuer}/.well-known/oauth-authorization-server/other`,
    })
  })

  it('finds the metadata of an issuer with a path, as OpenID Connect or RFC 8414 places it, and trusts only its own', async () => {
    for (const realm of ['oidc', 'plain']) {
      const issuer = `${as.issuer}/realms/${realm}/`.slice(0, -1)
      expect({ realm, refusal: await check(`Bearer ${await token({ iss: issuer })}`, { issuer }) }).toEqual({
        realm,
        refusal: undefined,
      })
    }
    const impostor = `${as.issuer}/realms/impostor`
    expect(await check(`Bearer ${await token({ iss: impostor })}`, { issuer: impostor })).toEqual({
      status: 503,
      description: `the authorization server's keys could not be fetched: ${impostor}/.well-known/openid-configuration names issuer "https://someone.else"`,
    })
    const keyless = `${as.issuer}/realms/keyless`
    expect(await check(`Bearer ${await token({ iss: keyless })}`, { issuer: keyless })).toEqual({
      status: 503,
      description: `the authorization server's keys could not be fetched: ${keyless}/.well-known/openid-configuration has no jwks_uri`,
    })
  })

  it('tries the metadata again after it failed, rather than keep the failure', async () => {
    const verifier = createAccessTokenVerifier(settings)
    as.failures = 1
    expect(await verifier.check(`Bearer ${await token()}`)).toMatchObject({ status: 503 })
    expect(await verifier.check(`Bearer ${await token()}`)).toBeUndefined()
  })

  it('takes every public-key algorithm: RSA (PKCS#1 and PSS), ECDSA and EdDSA', async () => {
    for (const alg of ['RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES384', 'ES512', 'EdDSA']) {
      const pair = await generateKeyPair(alg)
      await as.publish(pair, alg, alg)
      const refusal = await check(`Bearer ${await token({}, pair, { alg, kid: alg })}`, {
        jwksUrl: `${as.issuer}/jwks`,
      })
      expect({ alg, refusal }).toEqual({ alg, refusal: undefined })
    }
  })
})

describe('/mcp with --mcp-auth oauth', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess(
      fileURLToPath(new URL('../fixtures/hardening-http/serverless.yml', import.meta.url)),
      {
        mcpAuth: 'oauth',
        mcpIssuer: as.issuer,
        mcpAudience: AUDIENCE,
        mcpScopes: 'tools:call',
        httpToken: 'tools-token',
      },
    )
    url = `${runtime.gateway!.url}/mcp`
  })
  afterAll(() => runtime?.stop())

  const call = (headers: Record<string, string>, path = '/mcp') =>
    fetch(`${runtime.gateway!.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } }),
    })

  it('serves the Protected Resource Metadata at both well-known places, to any page', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${runtime.gateway!.url}${path}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(await res.json()).toEqual(protectedResourceMetadata(settings))
    }
  })

  it('answers 401 with where to get a token, and 403 insufficient_scope for a token without the scope', async () => {
    const none = await call({})
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${resourceMetadataUrl(AUDIENCE)}", scope="tools:call"`,
    )
    const expired = await call({ authorization: `Bearer ${await token({ exp: 1 })}` })
    expect(expired.status).toBe(401)
    expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"')
    // The static token of /tools is no access token.
    expect((await call({ authorization: 'Bearer tools-token' })).status).toBe(401)
    const scopeless = await call({ authorization: `Bearer ${await token({ scope: 'openid' })}` })
    expect(scopeless.status).toBe(403)
    expect(scopeless.headers.get('www-authenticate')).toContain('error="insufficient_scope"')
    expect(await scopeless.json()).toMatchObject({ error: { message: 'the token lacks the scope tools:call' } })
  })

  it('refuses a token in the query string with 400, even a good one', async () => {
    const res = await call({}, `/mcp?access_token=${await token()}`)
    expect(res.status).toBe(400)
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_request"')
  })

  it('serves the v2 client at 2026-07-28 and the v1 client at 2025-11-25 with a good token; the function never sees it', async () => {
    const authorization = `Bearer ${await token()}`
    const modern = new Client(
      { name: 'oauth-v2', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    )
    await modern.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization } } }),
    )
    const legacy = new ClientV1({ name: 'oauth-v1', version: '1' })
    await legacy.connect(new HttpV1(new URL(url), { requestInit: { headers: { authorization } } }))
    try {
      for (const client of [modern, legacy]) {
        const result = (await client.callTool({ name: 'echo', arguments: { a: 1 } })) as {
          content: { text: string }[]
        }
        // echo answers with its arguments: what the function was given, and all of it.
        expect(result.content[0]!.text).toBe('{"a":1}')
      }
    } finally {
      await modern.close()
      await legacy.close()
    }
  })

  it('leaves /tools on its static token', async () => {
    expect((await fetch(`${runtime.gateway!.url}/tools`)).status).toBe(401)
    expect(
      (await fetch(`${runtime.gateway!.url}/tools`, { headers: { authorization: 'Bearer tools-token' } })).status,
    ).toBe(200)
  })
})

describe('--mcp-auth settings', () => {
  it('needs an issuer and an audience, as URLs, and refuses the OAuth flags without it or beside --mcp-token', () => {
    expect(() => resolveSettings({ mcpAuth: 'oauth', mcpAudience: AUDIENCE }, {})).toThrow(
      /--mcp-issuer: is required with --mcp-auth oauth/,
    )
    expect(() => resolveSettings({ mcpAuth: 'oauth', mcpIssuer: 'https://id.example.com' }, {})).toThrow(
      /--mcp-audience: is required/,
    )
    expect(() => resolveSettings({ mcpAuth: 'oauth', mcpIssuer: 'id.example.com', mcpAudience: AUDIENCE }, {})).toThrow(
      /--mcp-issuer/,
    )
    expect(() => resolveSettings({ mcpIssuer: 'https://id.example.com' }, {})).toThrow(
      /--mcp-issuer: takes effect only with --mcp-auth oauth/,
    )
    expect(() =>
      resolveSettings(
        { mcpAuth: 'oauth', mcpIssuer: 'https://id.example.com', mcpAudience: AUDIENCE, mcpToken: 't' },
        {},
      ),
    ).toThrow(/--mcp-token: cannot be used with --mcp-auth oauth/)
    expect(() => resolveSettings({ mcpAuth: 'saml' }, {})).toThrow(/--mcp-auth: "saml" must be one of token, oauth/)
  })

  it('reads the environment too, and splits scopes on commas and spaces', () => {
    const resolved = resolveSettings(
      {},
      {
        TOOLBRIDGE_MCP_AUTH: 'oauth',
        TOOLBRIDGE_MCP_ISSUER: 'https://id.example.com',
        TOOLBRIDGE_MCP_AUDIENCE: AUDIENCE,
        TOOLBRIDGE_MCP_SCOPES: 'a, b c',
        TOOLBRIDGE_MCP_JWKS_URL: 'https://id.example.com/keys',
        TOOLBRIDGE_MCP_ALLOW_UNTYPED_TOKENS: '1',
      },
    )
    expect(resolved.mcpOAuth).toEqual({
      issuer: 'https://id.example.com',
      audience: AUDIENCE,
      scopes: ['a', 'b', 'c'],
      jwksUrl: 'https://id.example.com/keys',
      allowUntypedTokens: true,
    })
    expect(resolveSettings({}, {}).mcpOAuth).toBeUndefined()
  })
})

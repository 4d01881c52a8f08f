/**
 * Which endpoints that run tools are open to whom. On a loopback address
 * only this machine reaches them; on any other address (0.0.0.0, ::, a LAN
 * address) an endpoint without a token runs tools for anyone on the
 * network, so the gateway refuses to start that way unless told to.
 */
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { ConfigError } from '../../shared/errors.ts'

export interface EndpointTokens {
  /** Guards /tools, and /mcp unless mcpToken is set. */
  httpToken: string | undefined
  /** Guards /mcp instead of httpToken. */
  mcpToken: string | undefined
  /** /mcp takes OAuth access tokens of this issuer instead of either token. */
  mcpOAuth?: { issuer: string } | undefined
}

export interface EndpointGuard {
  path: '/tools' | '/mcp'
  /** The static bearer token it needs, if any. */
  token: string | undefined
  /** The issuer whose OAuth access tokens it needs instead, if any. */
  issuer: string | undefined
}

/** The endpoints that run tools and what each needs. */
export function endpointGuards(tokens: EndpointTokens): EndpointGuard[] {
  const issuer = tokens.mcpOAuth?.issuer
  return [
    { path: '/tools', token: tokens.httpToken || undefined, issuer: undefined },
    {
      path: '/mcp',
      token: issuer === undefined ? tokens.mcpToken || tokens.httpToken || undefined : undefined,
      issuer,
    },
  ]
}

function isLoopbackAddress(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('127.')
  const lower = address.toLowerCase()
  return lower === '::1' || lower.startsWith('::ffff:127.')
}

/** Whether every address `host` stands for is a loopback one (a name is looked up). */
export async function isLoopbackHost(host: string): Promise<boolean> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  // Every interface ('0.0.0.0' and '::' are addresses that are not loopback, below); looking '' up is deprecated.
  if (bare === '') return false
  if (isIP(bare) !== 0) return isLoopbackAddress(bare)
  try {
    const addresses = await lookup(bare, { all: true })
    return addresses.length > 0 && addresses.every((a) => isLoopbackAddress(a.address))
  } catch {
    return false // listen() will report the name it cannot resolve
  }
}

/** Refuses a non-loopback address with any endpoint open, naming them, unless `allowUnauthenticated`. */
export async function checkExposure(
  host: string,
  tokens: EndpointTokens,
  allowUnauthenticated: boolean,
): Promise<void> {
  if (allowUnauthenticated) return
  const open = endpointGuards(tokens)
    .filter((e) => e.token === undefined && e.issuer === undefined)
    .map((e) => e.path)
  if (open.length === 0 || (await isLoopbackHost(host))) return
  throw new ConfigError(
    '--host',
    `"${host}" is reachable from other machines and ${open.join(' and ')} would run tools for anyone there without a token: ` +
      'set --http-token (env TOOLBRIDGE_HTTP_TOKEN), or pass --allow-unauthenticated (env TOOLBRIDGE_ALLOW_UNAUTHENTICATED=1) if that is what you want',
  )
}

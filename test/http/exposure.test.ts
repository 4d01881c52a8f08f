/**
 * Which endpoints that run tools are open to whom (bridge/http/exposure.ts): on a loopback address only
 * this machine reaches them; on any other, the gateway refuses to start with an endpoint that has no token.
 */
import { describe, expect, it, vi } from 'vitest'
import { checkExposure, type EndpointTokens, endpointGuards, isLoopbackHost } from '../../bridge/http/exposure.ts'
import { ConfigError } from '../../shared/errors.ts'

// Names whose addresses this machine's resolver cannot be made to give (a shared /etc/hosts): answered
// here as a resolver would, every other name by the real one.
const ADDRESSES: Record<string, { address: string; family: number }[]> = {
  'lan.example.test': [{ address: '10.0.0.5', family: 4 }],
  'mixed.example.test': [
    { address: '127.0.0.1', family: 4 },
    { address: '10.0.0.5', family: 4 },
  ],
  'loopback.example.test': [
    { address: '127.0.0.1', family: 4 },
    { address: '::1', family: 6 },
  ],
}
vi.mock('node:dns/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:dns/promises')>()
  return {
    ...real,
    lookup: (name: string, options: object) =>
      ADDRESSES[name] ? Promise.resolve(ADDRESSES[name]) : real.lookup(name, options),
  }
})

const NO_TOKENS: EndpointTokens = { httpToken: undefined, mcpToken: undefined }

describe('endpointGuards', () => {
  it('guards /tools with the HTTP token, and /mcp with the MCP token or else the HTTP one', () => {
    expect(endpointGuards(NO_TOKENS)).toEqual([
      { path: '/tools', token: undefined },
      { path: '/mcp', token: undefined },
    ])
    expect(endpointGuards({ httpToken: 'h', mcpToken: undefined })).toEqual([
      { path: '/tools', token: 'h' },
      { path: '/mcp', token: 'h' },
    ])
    expect(endpointGuards({ httpToken: 'h', mcpToken: 'm' })).toEqual([
      { path: '/tools', token: 'h' },
      { path: '/mcp', token: 'm' },
    ])
    expect(endpointGuards({ httpToken: undefined, mcpToken: 'm' })).toEqual([
      { path: '/tools', token: undefined },
      { path: '/mcp', token: 'm' },
    ])
  })

  it('counts an empty token (an environment variable set to nothing) as none', () => {
    expect(endpointGuards({ httpToken: '', mcpToken: '' })).toEqual([
      { path: '/tools', token: undefined },
      { path: '/mcp', token: undefined },
    ])
    expect(endpointGuards({ httpToken: 'h', mcpToken: '' })[1]).toEqual({ path: '/mcp', token: 'h' })
  })
})

describe('isLoopbackHost', () => {
  it('knows loopback addresses, IPv4, IPv6 and IPv4-mapped, bracketed or not', async () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', '::FFFF:127.0.0.1', '[::ffff:127.0.0.2]']) {
      expect({ host, loopback: await isLoopbackHost(host) }).toEqual({ host, loopback: true })
    }
  })

  it('knows every other address, and the wildcards, as reachable from elsewhere', async () => {
    for (const host of ['0.0.0.0', '::', '[::]', '', '10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', 'fe80::1']) {
      expect({ host, loopback: await isLoopbackHost(host) }).toEqual({ host, loopback: false })
    }
  })

  it('looks a name up: localhost is loopback, a name that does not resolve is not', async () => {
    expect(await isLoopbackHost('localhost')).toBe(true)
    expect(await isLoopbackHost('no-such-host.invalid')).toBe(false)
  })

  it('takes a name for loopback only when every address it stands for is', async () => {
    expect(await isLoopbackHost('loopback.example.test')).toBe(true)
    expect(await isLoopbackHost('lan.example.test')).toBe(false)
    expect(await isLoopbackHost('mixed.example.test')).toBe(false)
  })

  it('does not take an address with a bracket left open or closed alone for loopback', async () => {
    for (const host of ['[::1x', 'x::1]']) {
      expect({ host, loopback: await isLoopbackHost(host) }).toEqual({ host, loopback: false })
    }
  })
})

describe('checkExposure', () => {
  const refusal = async (host: string, tokens = NO_TOKENS, allow = false) => {
    try {
      await checkExposure(host, tokens, allow)
    } catch (err) {
      return err
    }
  }

  it('lets any endpoint open on a loopback address', async () => {
    expect(await refusal('127.0.0.1')).toBeUndefined()
    expect(await refusal('localhost')).toBeUndefined()
  })

  it('refuses an open endpoint on any other address, naming the open ones and how to guard them', async () => {
    const error = await refusal('0.0.0.0')
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toBe(
      '--host: "0.0.0.0" is reachable from other machines and /tools and /mcp would run tools for anyone there without a token: ' +
        'set --http-token (env TOOLBRIDGE_HTTP_TOKEN), or pass --allow-unauthenticated (env TOOLBRIDGE_ALLOW_UNAUTHENTICATED=1) if that is what you want',
    )
    expect(((await refusal('::', { httpToken: undefined, mcpToken: 'm' })) as Error).message).toContain(
      'and /tools would run tools',
    )
  })

  it('lets every endpoint with a token, or the explicit choice, listen anywhere', async () => {
    expect(await refusal('0.0.0.0', { httpToken: 'h', mcpToken: undefined })).toBeUndefined()
    expect(await refusal('0.0.0.0', NO_TOKENS, true)).toBeUndefined()
  })
})

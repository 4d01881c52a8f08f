/** Who may reach the endpoints that run tools from a browser, and the CORS headers an allowed page gets (bridge/http/host-origin.ts). */
import type { IncomingMessage } from 'node:http'
import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { corsHeaders, createHostOriginCheck, hostName } from '../bridge/http/host-origin.ts'

const request = (headers: { host?: string; origin?: string }) => ({ headers }) as IncomingMessage

describe('hostName', () => {
  it('takes the name out of a Host header: port dropped, lower case, IPv6 brackets and a trailing dot removed', () => {
    expect(hostName('Example.COM:8080')).toBe('example.com')
    expect(hostName('example.com.')).toBe('example.com')
    expect(hostName('  localhost  ')).toBe('localhost')
    expect(hostName('[::1]:8080')).toBe('::1')
    expect(hostName('[::1')).toBe('::1')
    expect(hostName('127.0.0.1')).toBe('127.0.0.1')
  })
})

describe('createHostOriginCheck', () => {
  const check = createHostOriginCheck({
    listenHost: '127.0.0.1',
    allowedHosts: ['tools.internal'],
    allowedOrigins: ['http://app.example'],
  })

  it('passes IP addresses, localhost, allowed names and a request without Host', () => {
    for (const host of [
      '127.0.0.1:8080',
      '[::1]:8080',
      '10.1.2.3',
      'localhost:8080',
      'LocalHost',
      'tools.internal:80',
      undefined,
    ])
      expect({ host, refusal: check(request({ host })) }).toEqual({ host, refusal: undefined })
  })

  it('refuses any other name, saying which setting allows it', () => {
    expect(check(request({ host: 'evil.example:8080' }))).toEqual({
      status: 403,
      message: 'Host "evil.example:8080" is not allowed: add it with --allowed-hosts (env TOOLBRIDGE_ALLOWED_HOSTS)',
    })
    expect(check(request({ host: `${'a'.repeat(300)}.example` }))!.message).toContain(`"${'a'.repeat(200)}" is not`)
  })

  it('passes a request without Origin (a server-side client) and an allowed origin in any case; refuses any other', () => {
    expect(check(request({ host: 'localhost' }))).toBeUndefined()
    expect(check(request({ host: 'localhost', origin: 'HTTP://APP.example' }))).toBeUndefined()
    expect(check(request({ host: 'localhost', origin: 'http://evil.example' }))).toEqual({
      status: 403,
      message:
        'Origin "http://evil.example" is not allowed: add it with --allowed-origins (env TOOLBRIDGE_ALLOWED_ORIGINS)',
    })
    // A rebinding page is same-origin with the name it uses: no pass either.
    expect(check(request({ host: 'localhost:8080', origin: 'http://localhost:8080' }))?.status).toBe(403)
    expect(check(request({ origin: `http://${'e'.repeat(300)}` }))!.message).toContain(
      `"http://${'e'.repeat(193)}" is not`,
    )
  })

  it("passes the name it listens on, this machine's name when listening everywhere, and any name with *", () => {
    const named = createHostOriginCheck({ listenHost: 'Bridge.Local', allowedHosts: [], allowedOrigins: [] })
    expect(named(request({ host: 'bridge.local:8080' }))).toBeUndefined()
    expect(named(request({ host: hostname() }))?.status).toBe(
      hostname().toLowerCase() === 'bridge.local' ? undefined : 403,
    )
    for (const listenHost of ['0.0.0.0', '::', '[::]', '']) {
      const everywhere = createHostOriginCheck({ listenHost, allowedHosts: [], allowedOrigins: [] })
      expect(everywhere(request({ host: `${hostname()}:8080` }))).toBeUndefined()
      expect(everywhere(request({ host: 'evil.example' }))?.status).toBe(403)
    }
    const any = createHostOriginCheck({ listenHost: '127.0.0.1', allowedHosts: ['*'], allowedOrigins: [] })
    expect(any(request({ host: 'anything.example' }))).toBeUndefined()
    expect(any(request({ host: 'anything.example', origin: 'http://anything.example' }))?.status).toBe(403)
  })
})

describe('corsHeaders', () => {
  it('gives none to a request without an Origin (a server-side client, or same-origin)', () => {
    expect(corsHeaders('POST', undefined)).toEqual({})
    expect(corsHeaders('OPTIONS', undefined)).toEqual({})
  })

  it('echoes the origin, never *, so the page may send a token, and says the answer varies by Origin', () => {
    expect(corsHeaders('POST', 'http://app.example')).toEqual({
      'access-control-allow-origin': 'http://app.example',
      vary: 'Origin',
      'access-control-expose-headers': 'www-authenticate, retry-after, mcp-session-id',
    })
  })

  it('answers a preflight with the methods and the MCP headers of both eras a page may send', () => {
    const headers = corsHeaders('OPTIONS', 'http://app.example')
    expect(headers).toMatchObject({
      'access-control-allow-origin': 'http://app.example',
      vary: 'Origin',
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-max-age': '600',
    })
    expect(headers['access-control-allow-headers']!.split(', ')).toEqual([
      'authorization',
      'content-type',
      'accept',
      'mcp-protocol-version',
      'mcp-session-id',
      'mcp-method',
      'mcp-name',
      'last-event-id',
      'traceparent',
      'tracestate',
    ])
  })
})

/**
 * Who may reach the endpoints that run tools from a browser (bridge/http/host-origin.ts): the Host
 * header a DNS-rebinding page sends is refused, IP addresses and the gateway's own names are not,
 * and any Origin is refused unless allowed. The gateway's answers on a socket are in
 * hardening-http.test.ts; these are the rules themselves.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { createHostOriginCheck, type HostOriginPolicy, hostName } from '../../bridge/http/host-origin.ts'

/** The check's answer for a request with these headers (it reads nothing else of the request). */
function check(policy: Partial<HostOriginPolicy>, headers: { host?: string; origin?: string }) {
  const refuse = createHostOriginCheck({ listenHost: '127.0.0.1', allowedHosts: [], allowedOrigins: [], ...policy })
  return refuse({ headers } as IncomingMessage)
}
const allowsHost = (policy: Partial<HostOriginPolicy>, host: string) => check(policy, { host }) === undefined

describe('hostName', () => {
  /** Each Host header of `expected` mapped to its host name, to compare with the names `expected` gives. */
  const namesOf = (expected: Record<string, string>) =>
    Object.fromEntries(Object.keys(expected).map((host) => [host, hostName(host)]))

  it('drops the port, the case and a trailing dot', () => {
    const expected = {
      'Example.COM:8080': 'example.com',
      'localhost.:80': 'localhost',
      'localhost.': 'localhost',
      '  tools.internal  ': 'tools.internal',
      'tools.internal': 'tools.internal',
    }
    expect(namesOf(expected)).toStrictEqual(expected)
  })

  it('takes an IPv6 address out of its brackets, port or not', () => {
    const expected = { '[::1]:8080': '::1', '[::1]': '::1', '[FE80::1]': 'fe80::1', '[::1': '::1' }
    expect(namesOf(expected)).toStrictEqual(expected)
  })
})

describe('Host', () => {
  it('answers IP addresses and localhost, with or without a port', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:3000', '10.1.2.3:80', '[::1]:3000', 'localhost', 'LOCALHOST:3000']) {
      expect({ host, allowed: allowsHost({}, host) }).toEqual({ host, allowed: true })
    }
  })

  it('refuses any other name, as a DNS-rebinding page sends, saying how to allow it', () => {
    expect(check({}, { host: 'evil.example:3000' })).toEqual({
      status: 403,
      message: 'Host "evil.example:3000" is not allowed: add it with --allowed-hosts (env TOOLBRIDGE_ALLOWED_HOSTS)',
    })
    expect(allowsHost({}, 'localhost.evil.example')).toBe(false)
    expect(allowsHost({}, '127.0.0.1.nip.io')).toBe(false)
  })

  it('answers the allowed hosts, and any host with "*"', () => {
    expect(allowsHost({ allowedHosts: ['tools.internal'] }, 'Tools.Internal:3000')).toBe(true)
    expect(allowsHost({ allowedHosts: ['tools.internal'] }, 'other.internal')).toBe(false)
    expect(allowsHost({ allowedHosts: ['*'] }, 'anything.example')).toBe(true)
  })

  it('answers the name the gateway listens on', () => {
    expect(allowsHost({ listenHost: 'Gateway.Local' }, 'gateway.local:3000')).toBe(true)
    expect(allowsHost({ listenHost: '127.0.0.1' }, 'gateway.local:3000')).toBe(false)
  })

  it("answers this machine's name only when listening on every interface", () => {
    const machine = hostname().toLowerCase()
    for (const listenHost of ['0.0.0.0', '::', '[::]', '']) {
      expect({ listenHost, allowed: allowsHost({ listenHost }, `${machine}:3000`) }).toEqual({
        listenHost,
        allowed: true,
      })
    }
    // (Unless the machine is called localhost or by an address: those are answered anyway.)
    expect(allowsHost({ listenHost: '127.0.0.1' }, `${machine}:3000`)).toBe(
      machine === 'localhost' || isIP(machine) > 0,
    )
  })

  it('refuses a Host that is only a port, whatever the gateway listens on', () => {
    for (const listenHost of ['127.0.0.1', '0.0.0.0', '::', '[::]', '']) {
      for (const host of [':3000', ':', '::3000']) {
        expect({ listenHost, host, allowed: allowsHost({ listenHost }, host) }).toEqual({
          listenHost,
          host,
          allowed: false,
        })
      }
    }
  })

  it('lets a request without Host in (HTTP/1.0), and cuts a long Host in its refusal', () => {
    expect(check({}, {})).toBeUndefined()
    const long = `${'a'.repeat(300)}.example`
    expect(check({}, { host: long })?.message).toBe(
      `Host "${'a'.repeat(200)}" is not allowed: add it with --allowed-hosts (env TOOLBRIDGE_ALLOWED_HOSTS)`,
    )
  })
})

describe('Origin', () => {
  it("refuses every origin but the gateway's own by default, saying how to allow it", () => {
    expect(check({}, { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000' })).toBeUndefined()
    expect(check({}, { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3001' })).toEqual({
      status: 403,
      message:
        'Origin "http://127.0.0.1:3001" is not allowed: add it with --allowed-origins (env TOOLBRIDGE_ALLOWED_ORIGINS)',
    })
    expect(check({}, { origin: 'null' })?.status).toBe(403)
  })

  it('answers an allowed origin whatever its case, and no other', () => {
    const policy = { allowedOrigins: ['http://app.example'] }
    expect(check(policy, { host: 'localhost', origin: 'HTTP://App.Example' })).toBeUndefined()
    expect(check(policy, { host: 'localhost', origin: 'http://app.example:8080' })?.status).toBe(403)
  })

  it('checks Host first: an allowed origin does not let a rebound name in', () => {
    const policy = { allowedOrigins: ['http://evil.example'] }
    expect(check(policy, { host: 'evil.example', origin: 'http://evil.example' })?.message).toMatch(/^Host /)
  })

  it('cuts a long Origin in its refusal', () => {
    expect(check({}, { origin: `http://${'o'.repeat(300)}` })?.message).toBe(
      `Origin "http://${'o'.repeat(193)}" is not allowed: add it with --allowed-origins (env TOOLBRIDGE_ALLOWED_ORIGINS)`,
    )
  })
})

/**
 * Origins a browser page may call from (bridge/http/host-origin.ts): the gateway's own (a page it
 * served, the console's), and on a loopback bind any page of this machine; never another origin
 * nor a DNS-rebinding page.
 */
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { createHostOriginCheck } from '../../bridge/http/host-origin.ts'

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage
const policy = { listenHost: '127.0.0.1', allowedHosts: ['tools.internal'], allowedOrigins: ['http://app.example'] }

describe("the gateway's own origin", () => {
  const check = createHostOriginCheck(policy)

  it('takes a request without Origin (not from a browser page) as before', () => {
    expect(check(req({ host: '127.0.0.1:7500' }))).toBeUndefined()
  })

  it("takes the gateway's own origin: a page it served calling it", () => {
    expect(check(req({ host: '127.0.0.1:7500', origin: 'http://127.0.0.1:7500' }))).toBeUndefined()
    expect(check(req({ host: 'LocalHost:7500', origin: 'http://localhost:7500' }))).toBeUndefined()
    expect(check(req({ host: 'tools.internal', origin: 'http://tools.internal' }))).toBeUndefined()
  })

  it('refuses, off a loopback bind, a page of another port, scheme or name, and a request with no Host', () => {
    for (const origin of ['http://127.0.0.1:7501', 'https://127.0.0.1:7500', 'http://localhost:7500', 'null'])
      expect(check(req({ host: '127.0.0.1:7500', origin }))?.status).toBe(403)
    expect(check(req({ origin: 'http://undefined' }))?.status).toBe(403)
  })

  it('refuses a rebinding page even when any Host is allowed: its own name is not one allowed by name', () => {
    const any = createHostOriginCheck({ ...policy, allowedHosts: ['*'] })
    expect(any(req({ host: 'evil.example:7500', origin: 'http://evil.example:7500' }))?.status).toBe(403)
    expect(any(req({ host: '127.0.0.1:7500', origin: 'http://127.0.0.1:7500' }))).toBeUndefined()
  })
})

describe('on a loopback bind', () => {
  const check = createHostOriginCheck({ ...policy, loopback: true })

  it("takes a page of this machine's names on any port and either scheme", () => {
    for (const origin of [
      'http://localhost:3000',
      'http://127.0.0.1:5173',
      'https://LOCALHOST',
      'http://[::1]:8080',
      'http://127.0.0.1:7500',
    ])
      expect(check(req({ host: '127.0.0.1:7500', origin }))).toBeUndefined()
  })

  it('still refuses a foreign page, a look-alike name, another scheme and an opaque origin', () => {
    for (const origin of [
      'http://evil.example',
      'http://localhost.evil.example:3000',
      'http://127.0.0.2:3000',
      'file://localhost',
      'null',
    ])
      expect(check(req({ host: '127.0.0.1:7500', origin }))?.status).toBe(403)
  })

  it('still refuses a rebinding page: its Host is refused before its Origin is looked at', () => {
    expect(check(req({ host: 'evil.example:7500', origin: 'http://localhost:7500' }))?.message).toMatch(/^Host /)
  })

  it('adds the allowed origins to those of this machine', () => {
    expect(check(req({ host: '127.0.0.1:7500', origin: 'http://app.example' }))).toBeUndefined()
  })
})

/**
 * The console's own calls (bridge/http/host-origin.ts with sameOrigin): a page the gateway served may
 * call it back; a page of another origin, or a DNS-rebinding page, may not.
 */
import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { createHostOriginCheck } from '../../bridge/http/host-origin.ts'

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage
const policy = { listenHost: '127.0.0.1', allowedHosts: ['tools.internal'], allowedOrigins: ['http://app.example'] }

describe('Origin, with and without the console', () => {
  it("refuses an Origin that is not allowed, the gateway's own included, unless sameOrigin", () => {
    const check = createHostOriginCheck(policy)
    expect(check(req({ host: '127.0.0.1:7500', origin: 'http://APP.example' }))).toBeUndefined()
    expect(check(req({ host: '127.0.0.1:7500', origin: 'http://127.0.0.1:7500' }))).toEqual({
      status: 403,
      message:
        'Origin "http://127.0.0.1:7500" is not allowed: add it with --allowed-origins (env TOOLBRIDGE_ALLOWED_ORIGINS)',
    })
  })

  describe('with sameOrigin (the console is served)', () => {
    const check = createHostOriginCheck({ ...policy, sameOrigin: true })

    it('takes a request without Origin (not from a browser page) as before', () => {
      expect(check(req({ host: '127.0.0.1:7500' }))).toBeUndefined()
    })

    it("takes the gateway's own origin: a page it served calling it", () => {
      expect(check(req({ host: '127.0.0.1:7500', origin: 'http://127.0.0.1:7500' }))).toBeUndefined()
      expect(check(req({ host: 'LocalHost:7500', origin: 'http://localhost:7500' }))).toBeUndefined()
      expect(check(req({ host: 'tools.internal', origin: 'http://tools.internal' }))).toBeUndefined()
    })

    it('refuses a page of another port, scheme or name, and a request with no Host', () => {
      for (const origin of ['http://127.0.0.1:7501', 'https://127.0.0.1:7500', 'http://localhost:7500', 'null'])
        expect(check(req({ host: '127.0.0.1:7500', origin }))?.status).toBe(403)
      expect(check(req({ origin: 'http://undefined' }))?.status).toBe(403)
    })

    it('refuses a rebinding page even when any Host is allowed: its own name is not one allowed by name', () => {
      const any = createHostOriginCheck({ ...policy, allowedHosts: ['*'], sameOrigin: true })
      expect(any(req({ host: 'evil.example:7500', origin: 'http://evil.example:7500' }))?.status).toBe(403)
      expect(any(req({ host: '127.0.0.1:7500', origin: 'http://127.0.0.1:7500' }))).toBeUndefined()
    })
  })
})

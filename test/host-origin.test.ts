/** Which browser requests may run tools: Host and Origin (bridge/http/host-origin.ts), the console's own calls included. */
import type { IncomingMessage } from 'node:http'
import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { createHostOriginCheck, hostName } from '../bridge/http/host-origin.ts'

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage
const policy = { listenHost: '127.0.0.1', allowedHosts: ['tools.internal'], allowedOrigins: ['http://app.example'] }

describe('hostName', () => {
  it('is the lower-case name of a Host header, without port, brackets or trailing dot', () => {
    expect(hostName('Example.COM:8080')).toBe('example.com')
    expect(hostName('[::1]:80')).toBe('::1')
    expect(hostName('[::1')).toBe('::1')
    expect(hostName('example.com.')).toBe('example.com')
    expect(hostName(' localhost ')).toBe('localhost')
    expect(hostName(':80')).toBe('')
  })
})

describe('createHostOriginCheck', () => {
  it('takes IP addresses, localhost, the listen name and allowed hosts; refuses other names', () => {
    const check = createHostOriginCheck(policy)
    for (const host of ['127.0.0.1:7500', '[::1]:7500', 'localhost:7500', 'tools.internal', '10.0.0.5'])
      expect(check(req({ host }))).toBeUndefined()
    expect(check(req({}))).toBeUndefined()
    expect(check(req({ host: 'evil.example:7500' }))).toEqual({
      status: 403,
      message: 'Host "evil.example:7500" is not allowed: add it with --allowed-hosts (env TOOLBRIDGE_ALLOWED_HOSTS)',
    })
  })

  it('takes the listen name whatever its case, and cuts a long refused Host or Origin in the message', () => {
    expect(
      createHostOriginCheck({ ...policy, listenHost: 'MyBox.Local' })(req({ host: 'mybox.local' })),
    ).toBeUndefined()
    const check = createHostOriginCheck(policy)
    expect(check(req({ host: `${'h'.repeat(300)}.example` }))?.message).toContain(`"${'h'.repeat(200)}"`)
    const origin = `http://${'o'.repeat(300)}`
    expect(check(req({ host: '127.0.0.1', origin }))?.message).toContain(`"${origin.slice(0, 200)}"`)
  })

  it("adds this machine's name when listening on every interface, and only then", () => {
    for (const listenHost of ['0.0.0.0', '::', '[::]', ''])
      expect(createHostOriginCheck({ ...policy, listenHost })(req({ host: hostname() }))).toBeUndefined()
    // On a loopback address, this machine's name is one more name a rebinding page could use.
    expect(createHostOriginCheck(policy)(req({ host: hostname() }))?.status).toBe(403)
  })

  it('takes any name with *', () => {
    expect(createHostOriginCheck({ ...policy, allowedHosts: ['*'] })(req({ host: 'any.example' }))).toBeUndefined()
  })

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

/** The CORS headers a page of an allowed origin gets (bridge/http/host-origin.ts, corsHeaders). */
import { describe, expect, it } from 'vitest'
import { corsHeaders } from '../../bridge/http/host-origin.ts'

describe('corsHeaders', () => {
  it('gives none to a request without an Origin (a server-side client, or same-origin)', () => {
    expect(corsHeaders('POST', undefined)).toEqual({})
    expect(corsHeaders('OPTIONS', undefined)).toEqual({})
  })

  it('echoes the origin, never *, so the page may send a token, and says the answer varies by Origin', () => {
    expect(corsHeaders('POST', 'http://app.example')).toEqual({
      'access-control-allow-origin': 'http://app.example',
      vary: 'Origin',
      'access-control-expose-headers': 'www-authenticate, retry-after, mcp-session-id, toolbridge-request-id',
    })
  })

  it('answers a preflight with the methods and the MCP headers of both eras a page may send', () => {
    const headers = corsHeaders('OPTIONS', 'http://app.example')
    expect(headers).toMatchObject({
      'access-control-allow-origin': 'http://app.example',
      vary: 'Origin',
      'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
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

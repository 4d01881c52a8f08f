/**
 * Bearer tokens on the HTTP endpoints (bridge/http/bearer.ts): the header a client sends, as Node
 * hands it over (its bytes read as Latin-1), against the token the gateway was given. The endpoints'
 * answers on a socket are in hardening-http.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { bearerMatches } from '../../bridge/http/bearer.ts'

/** The header Node gives the server when a client sends these UTF-8 bytes (what curl does). */
const sentAsUtf8 = (header: string) => Buffer.from(header, 'utf8').toString('latin1')

describe('bearerMatches', () => {
  it('matches "Bearer <token>", the scheme in any case, with one or more spaces after it', () => {
    for (const header of ['Bearer s3cret', 'bearer s3cret', 'BEARER s3cret', 'Bearer   s3cret']) {
      expect({ header, matches: bearerMatches(header, 's3cret') }).toEqual({ header, matches: true })
    }
  })

  it('refuses no header, another scheme, no space after the scheme, and any other token', () => {
    for (const header of [
      undefined,
      '',
      's3cret',
      'Basic s3cret',
      'Bearers3cret',
      'Bearer\ts3cret',
      ' Bearer s3cret',
      'Bearer s3cret ',
      'Bearer s3cre',
      'Bearer s3cret2',
      'Bearer S3CRET',
      'Bearer ',
      'Token Bearer s3cret',
    ]) {
      expect({ header, matches: bearerMatches(header, 's3cret') }).toEqual({ header, matches: false })
    }
  })

  it('refuses a header that does not start with the scheme, even where what follows it is the token', () => {
    // "Basic12" is as long as "Bearer ": cutting the scheme's length off leaves the token.
    expect(bearerMatches('Basic12Bearer tok', 'Bearer tok')).toBe(false)
    expect(bearerMatches('Bearer Bearer tok', 'Bearer tok')).toBe(true)
  })

  it('refuses the scheme without the token even when the token is the scheme itself', () => {
    expect(bearerMatches('Bearer', 'Bearer')).toBe(false)
    expect(bearerMatches('Bearer Bearer', 'Bearer')).toBe(true)
  })

  it('matches a non-ASCII token sent as UTF-8 (curl) or, within Latin-1, as Latin-1 (fetch)', () => {
    expect(bearerMatches(sentAsUtf8('Bearer café'), 'café')).toBe(true)
    expect(bearerMatches('Bearer café', 'café')).toBe(true)
    expect(bearerMatches(sentAsUtf8('Bearer 令牌'), '令牌')).toBe(true)
    expect(bearerMatches(sentAsUtf8('Bearer cafe'), 'café')).toBe(false)
  })

  it('refuses the Latin-1 bytes of a token beyond Latin-1, which Buffer would make of it', () => {
    // '令' is U+4EE4 and '牌' U+724C: as Latin-1, Buffer keeps their low bytes, "äL".
    expect(Buffer.from('令牌', 'latin1').toString('latin1')).toBe('äL')
    expect(bearerMatches('Bearer äL', '令牌')).toBe(false)
  })
})

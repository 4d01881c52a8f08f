/** Bearer-token checks for the HTTP endpoints, in constant time. */
import { createHash, timingSafeEqual } from 'node:crypto'

/** The scheme name is case-insensitive (RFC 7235); one or more spaces follow it. */
const BEARER = /^bearer +/i

const digest = (bytes: Buffer): Buffer => createHash('sha256').update(bytes).digest()

/**
 * Whether an Authorization header is `Bearer <token>`. Digests of equal
 * length are compared, so neither the time taken nor an early length check
 * tells a caller how long the token is. Node reads header bytes as Latin-1:
 * the wire bytes are matched against the token's UTF-8 bytes (what curl
 * sends for a non-ASCII token) and, for a Latin-1 token, its Latin-1 bytes
 * (what fetch sends).
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const text = header ?? ''
  const scheme = BEARER.exec(text)
  const given = digest(Buffer.from(scheme ? text.slice(scheme[0].length) : '', 'latin1'))
  const utf8 = timingSafeEqual(given, digest(Buffer.from(token, 'utf8')))
  const latin1 = timingSafeEqual(given, digest(Buffer.from(token, 'latin1')))
  // A token outside Latin-1 has no Latin-1 form: Buffer.from would mangle it, so only UTF-8 counts.
  return scheme !== null && (utf8 || (isLatin1(token) && latin1))
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: Latin-1 is U+0000 to U+00FF, controls included
const isLatin1 = (text: string) => /^[\u0000-\u00ff]*$/.test(text)

/** Bearer-token checks for the HTTP endpoints, in constant time. */
import { timingSafeEqual } from 'node:crypto'

/** Whether an Authorization header is exactly `Bearer <token>`. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '')
  const expected = Buffer.from(`Bearer ${token}`)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * An HTTP answer that is not a success, as an outcome: its status and a
 * bounded excerpt of its body (an HTML error page can be megabytes), for
 * API Gateway proxy responses (event-shapes.ts) and HTTP functions
 * (invokers/http-function/) alike.
 */
import { STATUS_CODES } from 'node:http'
import type { Outcome } from './invoker.ts'

/** How much of an error body goes into the error answer. */
export const BODY_EXCERPT_CHARS = 300

export const isSuccess = (status: number) => status >= 200 && status < 300

/** The body on one line, cut to BODY_EXCERPT_CHARS whole characters and marked "…" when cut. */
export function bodyExcerpt(body: string): string {
  const line = body.replace(/\s+/g, ' ').trim()
  if (line.length <= BODY_EXCERPT_CHARS) return line
  // Code points, never half a surrogate pair; 2 UTF-16 units each at most, so this slice holds enough.
  const chars = Array.from(line.slice(0, BODY_EXCERPT_CHARS * 2 + 2))
  return chars.length > BODY_EXCERPT_CHARS ? chars.slice(0, BODY_EXCERPT_CHARS).join('') + '…' : line
}

/** `HTTP 404 Not Found: {"error":"no such item"}` as a function error. */
export function httpStatusOutcome(status: number, body: string): Outcome {
  const excerpt = bodyExcerpt(body)
  const reason = STATUS_CODES[status] ?? 'Unknown Status'
  return { ok: false, kind: 'function-error', message: `HTTP ${status} ${reason}${excerpt ? `: ${excerpt}` : ''}` }
}

/** How the gateway answers with an error of its own, and how long any error text on the wire may be. */
import type { ServerResponse } from 'node:http'
import { ToolbridgeError } from '../../shared/errors.ts'

/** Statuses that say "not now": the same request may succeed later. */
const TRY_LATER = new Set([429, 503])

/** A refusal with its HTTP status (and the headers it needs, e.g. Retry-After). */
export class HttpError extends ToolbridgeError {
  readonly status: number
  readonly headers: Record<string, string>
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    const kind = status === 413 ? 'too-large' : TRY_LATER.has(status) ? 'unavailable' : 'bad-request'
    super(kind, message, { retriable: TRY_LATER.has(status) })
    this.name = 'HttpError'
    this.status = status
    this.headers = headers
  }
}

/** Error texts longer than this are cut: a function's 10 MB message must not become a 10 MB answer or log line. */
export const MAX_ERROR_TEXT = 4096

export const bounded = (text: string, max = MAX_ERROR_TEXT): string =>
  text.length <= max ? text : text.slice(0, max) + '…'

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body) + '\n')
}

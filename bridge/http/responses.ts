/** How the gateway answers with an error of its own. */
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

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body) + '\n')
}

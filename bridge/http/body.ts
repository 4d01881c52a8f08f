/**
 * Request bodies of /tools and /mcp: JSON only, at most a size limit,
 * strict UTF-8.
 *
 * An over-limit body is refused with 413 from `Content-Length` before a byte
 * of it is read, or as soon as a body without one passes the limit. The
 * rest is then read and thrown away (up to DISCARD_BYTES), not cut off:
 * closing a socket the client is still writing to resets the connection,
 * and a reset makes the client drop the 413 it has not read yet.
 */
import type { IncomingMessage } from 'node:http'
import { parseJsonBytes } from '../../shared/protocol.ts'
import { HttpError } from './responses.ts'

/** How much of a refused body is read and dropped before the connection is closed. */
export const DISCARD_BYTES = 64 * 1024 * 1024

/** Refuses anything but `Content-Type: application/json` (with parameters such as charset): a cross-site form or `text/plain` POST. */
export function requireJson(req: IncomingMessage): void {
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (mediaType !== 'application/json') {
    throw new HttpError(
      415,
      `Content-Type must be application/json, got ${JSON.stringify((req.headers['content-type'] ?? '(none)').slice(0, 100))}`,
    )
  }
}

/** Reads the rest of a refused body without keeping it; past DISCARD_BYTES, closes the connection. */
function discardRest(req: IncomingMessage): void {
  let discarded = 0
  req.removeAllListeners('data')
  req.on('data', (part: Buffer) => {
    discarded += part.length
    if (discarded > DISCARD_BYTES) req.socket.destroy()
  })
  req.resume()
}

/** The body as JSON (`empty` when there is none); HttpError 400 / 413 otherwise. */
export async function readJsonBody(req: IncomingMessage, limit: number, empty: unknown): Promise<unknown> {
  const tooLarge = () => new HttpError(413, `request body over ${limit} bytes`)
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limit) {
    discardRest(req)
    throw tooLarge()
  }
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = []
    let size = 0
    req.on('data', (part: Buffer) => {
      size += part.length
      if (size <= limit) return void parts.push(part)
      parts.length = 0
      discardRest(req)
      reject(tooLarge())
    })
    req.on('end', () => resolve(Buffer.concat(parts)))
    req.on('error', reject)
  })
  if (bytes.length === 0) return empty
  const parsed = parseJsonBytes(bytes)
  if (!parsed.ok) throw new HttpError(400, parsed.message)
  return parsed.value
}

/**
 * POST /tools/<tool-name>: one call of a tool over plain HTTP, answered as
 * NDJSON (ndjson-answer.ts): a line per streamed chunk, then the whole
 * answer or its error. An error before the first chunk gets the status that
 * fits it; after, it is the last line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isRecord, isToolbridgeError, messageOf } from '../../shared/errors.ts'
import { bounded } from '../support/bounded-text.ts'
import { contextToPass } from '../tracing/trace-context.ts'
import { ToolCallError, ToolCallTimeoutError } from '../trustgraph/request-client.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { CallerGoneError } from './admission.ts'
import { readJsonBody, requireJson } from './body.ts'
import { NdjsonAnswer } from './ndjson-answer.ts'
import { HttpError, sendJson } from './responses.ts'

/** The request's `id` on the broker, as the bridge logs and reports it: the console finds its call's timing by it. */
export const REQUEST_ID_HEADER = 'toolbridge-request-id'

/** POST /tools/<tool-name>: the name as sent, percent-escapes and all. */
export const TOOL_PATH = /^\/tools\/([^/]+)$/

/** Status for an error answered before any chunk was sent. */
const STATUS_BY_ERROR_TYPE: Record<string, number> = {
  'bad-request': 400,
  'invalid-arguments': 422,
  'missing-config': 422,
  'too-large': 413,
  timeout: 504,
}

/** The wire error of a failed call, its text bounded. */
function callError(err: unknown): { type: string; message: string } {
  if (err instanceof ToolCallError) return { type: err.type, message: bounded(err.message) }
  return { type: err instanceof ToolCallTimeoutError ? 'timeout' : 'unavailable', message: bounded(messageOf(err)) }
}

export interface ToolCallRoute {
  caller: ToolCaller
  maxBodyBytes: number
  /** The call's answer, or an error once the gateway stops waiting for it. */
  untilAbandoned(call: Promise<string>): Promise<string>
  /** A call to a served tool refused before it reached the broker (413, 422): counted and shown. */
  refused(tool: string, status: number, outcome: string): void
}

export async function callTool(
  { caller, maxBodyBytes, untilAbandoned, refused }: ToolCallRoute,
  escapedName: string,
  req: IncomingMessage,
  res: ServerResponse,
  gone: AbortController,
): Promise<void> {
  let name: string
  try {
    name = decodeURIComponent(escapedName)
  } catch {
    throw new HttpError(400, `malformed percent-escape in the tool name "${bounded(escapedName, 200)}"`)
  }
  if (!caller.tools.has(name)) throw new HttpError(404, `unknown tool "${bounded(name, 200)}"; GET /tools lists them`)
  requireJson(req)
  const body = await readJsonBody(req, maxBodyBytes, {}).catch((err: unknown) => {
    if (err instanceof HttpError && err.status === 413) refused(name, 413, 'too-large')
    throw err
  })
  if (!isRecord(body)) throw new HttpError(400, 'body must be a JSON object')
  const args = body.arguments ?? {}
  if (!isRecord(args)) throw new HttpError(400, '"arguments" must be an object')
  if (body.user !== undefined && typeof body.user !== 'string') throw new HttpError(400, '"user" must be a string')

  // A client that stops reading is gone too: the rest of the stream is dropped. One controller, not
  // AbortSignal.any: that keeps finalization-registry cells per call until the collector clears them.
  const answer = new NdjsonAnswer(res, () => gone.abort())
  try {
    // Only a streaming service sends chunks; a single answer is just the final line.
    const response = await untilAbandoned(
      caller.call(
        name,
        { user: body.user as string | undefined, arguments: args },
        {
          onChunk: (chunk) => answer.chunk(chunk),
          signal: gone.signal,
          // A traced caller's context goes on with the request: the bridge's spans join its trace.
          traceContext: contextToPass(req.headers),
          // Sent before the answer's first byte: every answer of a call that was sent carries it.
          onId: (id) => res.setHeader(REQUEST_ID_HEADER, id),
        },
      ),
    )
    answer.end({ response })
  } catch (err) {
    if (err instanceof CallerGoneError) return
    const error = callError(err)
    if (res.headersSent) return answer.end({ error })
    // The broker refused the request for now (e.g. the embedded broker's queue is full): a retry may work.
    if (isToolbridgeError(err) && err.retriable) return sendJson(res, 503, { error }, { 'retry-after': '1' })
    const status = STATUS_BY_ERROR_TYPE[error.type] ?? 502
    // Refused here, never sent (no request id): the bridge cannot count it, so the gateway does.
    if (status === 422 && !res.hasHeader(REQUEST_ID_HEADER)) refused(name, status, error.type)
    sendJson(res, status, { error })
  }
}

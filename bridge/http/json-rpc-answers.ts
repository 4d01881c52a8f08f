/**
 * JSON-RPC answers written straight to an HTTP response as one JSON body,
 * for the /mcp paths that answer without the SDK: a request's error (the
 * direct lane for tool calls, task notification streams that refuse), and
 * a refusal before any request is read (the gateway's cap, drain and guard,
 * the transport's method and header checks). Each has the key order of the
 * SDK's own answer of its kind. No SDK import: the gateway refuses without
 * loading it.
 */
import type { ServerResponse } from 'node:http'

export type RequestId = string | number

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
}

/** JSON-RPC's implementation-defined server error: a refusal that is not about the message itself. */
const SERVER_ERROR = -32000
/** JSON-RPC's parse error. */
const PARSE_ERROR = -32700
/** JSON-RPC error codes per HTTP status of a refusal (the rest are server errors). */
const CODE_BY_STATUS: Record<number, number> = { 400: PARSE_ERROR }

/** A refusal that answers no request id, as `{jsonrpc, error, id: null}`. */
export function jsonRpcError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code?: number,
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(
    JSON.stringify({
      jsonrpc: '2.0',
      error: { code: code ?? CODE_BY_STATUS[status] ?? SERVER_ERROR, message },
      id: null,
    }),
  )
}

/** The request's error, as `{jsonrpc, id, error}`. */
export function answerJsonRpcError(
  res: ServerResponse,
  status: number,
  id: RequestId,
  error: JsonRpcErrorObject,
): Promise<void> {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, error }))
  return Promise.resolve()
}

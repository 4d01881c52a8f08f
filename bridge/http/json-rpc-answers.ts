/**
 * A JSON-RPC answer to one request, written straight to its HTTP response
 * as one JSON body, for the /mcp paths that answer without the SDK (the
 * direct lane for tool calls, task notification streams that refuse).
 */
import type { ServerResponse } from 'node:http'

export type RequestId = string | number

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: unknown
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

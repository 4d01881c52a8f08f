/**
 * The JSON-RPC answers /mcp writes without the SDK, as bytes on a real HTTP
 * response: a refusal before any request id is known (the gateway's guard,
 * cap and drain, the transport's own checks), and a request's error. Each
 * must keep the key order of the SDK's answer of its kind, and a refusal's
 * code follows its HTTP status.
 */
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ProtocolErrorCode } from '@modelcontextprotocol/server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { answerJsonRpcError, jsonRpcError } from '../../bridge/http/json-rpc-answers.ts'

let server: Server
let url: string
/** What the next request's response is written with. */
let write: (res: ServerResponse) => void = (res) => void res.end()

beforeAll(async () => {
  server = createServer((_, res) => write(res))
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})
afterAll(() => new Promise((closed) => server.close(closed)))

async function answered(writer: (res: ServerResponse) => void) {
  write = writer
  const response = await fetch(url, { method: 'POST' })
  return { status: response.status, headers: response.headers, body: await response.text() }
}

describe('jsonRpcError: a refusal that answers no request id', () => {
  it.each([
    { status: 400, code: ProtocolErrorCode.ParseError },
    { status: 403, code: -32000 },
    { status: 503, code: -32000 },
  ])('with HTTP $status has code $code, its keys in the order jsonrpc, error, id', async ({ status, code }) => {
    const answer = await answered((res) => jsonRpcError(res, status, 'no'))
    expect(answer.status).toBe(status)
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(answer.body).toBe(`{"jsonrpc":"2.0","error":{"code":${code},"message":"no"},"id":null}`)
  })

  it('keeps a code given and sends the headers given', async () => {
    const answer = await answered((res) => jsonRpcError(res, 400, 'old revision', { 'retry-after': '1' }, -32022))
    expect(answer.headers.get('retry-after')).toBe('1')
    expect(answer.body).toBe('{"jsonrpc":"2.0","error":{"code":-32022,"message":"old revision"},"id":null}')
  })
})

describe("answerJsonRpcError: a request's error", () => {
  it('carries the id, its keys in the order jsonrpc, id, error, with data when given', async () => {
    const answer = await answered((res) =>
      answerJsonRpcError(res, 200, 'call-7', { code: -32602, message: 'bad', data: { why: 1 } }),
    )
    expect(answer.status).toBe(200)
    expect(answer.body).toBe('{"jsonrpc":"2.0","id":"call-7","error":{"code":-32602,"message":"bad","data":{"why":1}}}')
  })
})

/**
 * A small HTTP server that speaks the Lambda Invoke API as the AWS SDK reads
 * it, scripted per test: results, FunctionErrors, throttling (429), 5xx,
 * slow answers, connection resets, and response streams in the real
 * `application/vnd.amazon.eventstream` encoding (serverless-offline has no
 * InvokeWithResponseStream, so this is where streaming is tested).
 *
 * Wire shapes, as @aws-sdk/client-lambda 3.x parses them:
 * - Invoke: `POST /2015-03-31/functions/<name>/invocations`; the body is the
 *   payload; a function error adds `X-Amz-Function-Error` and the body is
 *   `{errorType, errorMessage, trace}`.
 * - InvokeWithResponseStream: `POST /2021-11-15/functions/<name>/response-streaming-invocations`;
 *   the body is event-stream messages with headers `:message-type: event`,
 *   `:event-type: PayloadChunk` (body: raw bytes) or `InvokeComplete` (body:
 *   JSON `{ErrorCode?, ErrorDetails?, LogResult?}`), and `:content-type`.
 * - Errors: restJson1, the code in header `x-amzn-ErrorType`, the message in
 *   the JSON body; TooManyRequestsException's `retryAfterSeconds` comes from
 *   the `Retry-After` header, its body is `{Type, message, Reason}`.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'

export interface LambdaCall {
  functionName: string
  streaming: boolean
  payload: Buffer
  headers: IncomingMessage['headers']
}

/** A step of a response stream: a chunk to send, or something to wait for before the next one. */
export type StreamStep = string | Uint8Array | (() => Promise<void>)
/** A stream's steps, listed in advance or produced as a function runs. */
export type StreamSteps = Iterable<StreamStep> | AsyncIterable<StreamStep>

export type Reply =
  /** 200 with this payload (already JSON, as Lambda sends it); with `functionError`, a function error. */
  | { type: 'payload'; body: string; functionError?: 'Unhandled' | 'Handled'; delayMs?: number }
  /** 429 TooManyRequestsException. */
  | { type: 'throttle'; retryAfterSeconds?: number }
  /** Any other error status; `errorType` goes in `x-amzn-ErrorType` when given, `body` as is. */
  | { type: 'status'; status: number; errorType?: string; body?: string }
  /** The connection is reset once the request has been read. */
  | { type: 'reset' }
  /** Never answers (until the server closes). */
  | { type: 'hang' }
  /** An event stream: PayloadChunks for each chunk, then InvokeComplete (with `error`, a failed one). */
  | { type: 'stream'; steps: StreamSteps; error?: { code: string; details?: string }; complete?: boolean }

/** Builders for the replies tests use most. */
export const reply = {
  /** What Lambda returns for a function result: its JSON. */
  result: (value: unknown, delayMs?: number): Reply => ({ type: 'payload', body: JSON.stringify(value), delayMs }),
  /** What Lambda returns when the function throws (Unhandled) or returns an error (Handled). */
  functionError: (errorType: string, errorMessage: string, kind: 'Unhandled' | 'Handled' = 'Unhandled'): Reply => ({
    type: 'payload',
    functionError: kind,
    body: JSON.stringify({
      errorType,
      errorMessage,
      trace: [`${errorType}: ${errorMessage}`, '    at secretFrame (/var/task/handler.mjs:1:1)'],
    }),
  }),
  /** What Lambda returns when it stops the function itself (a timeout, a result too large): no trace. */
  runtimeError: (errorType: string, errorMessage: string): Reply => ({
    type: 'payload',
    functionError: 'Unhandled',
    body: JSON.stringify({ errorType, errorMessage }),
  }),
  throttle: (retryAfterSeconds?: number): Reply => ({ type: 'throttle', retryAfterSeconds }),
  /** Lambda's own ServiceException (500), or a proxy's bare 502/503. */
  serviceError: (status = 500): Reply =>
    status === 500
      ? {
          type: 'status',
          status,
          errorType: 'ServiceException',
          body: JSON.stringify({ Message: 'internal failure', Type: 'Service' }),
        }
      : { type: 'status', status, body: '<html><body>Bad Gateway</body></html>' },
  /** What serverless-offline (hapi) answers on a route it does not have, such as response-streaming-invocations. */
  notFound: (): Reply => ({
    type: 'status',
    status: 404,
    body: JSON.stringify({ statusCode: 404, error: 'Not Found', message: 'Not Found' }),
  }),
  reset: (): Reply => ({ type: 'reset' }),
  hang: (): Reply => ({ type: 'hang' }),
  stream: (steps: StreamStep[], error?: { code: string; details?: string }): Reply => ({
    type: 'stream',
    steps,
    error,
  }),
}

export type Script = (call: LambdaCall, callIndex: number) => Reply | Promise<Reply>

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/
const STREAM_PATH = /^\/2021-11-15\/functions\/([^/]+)\/response-streaming-invocations$/
/** GetFunction: `GET /2015-03-31/functions/<name>`. */
const GET_FUNCTION_PATH = /^\/2015-03-31\/functions\/([^/]+)$/

const codec = new EventStreamCodec(toUtf8, fromUtf8)

const stringHeader = (value: string) => ({ type: 'string' as const, value })

function eventFrame(eventType: string, contentType: string, body: Uint8Array): Uint8Array {
  const headers: MessageHeaders = {
    ':event-type': stringHeader(eventType),
    ':message-type': stringHeader('event'),
    ':content-type': stringHeader(contentType),
  }
  return codec.encode({ headers, body })
}

export class FakeLambda {
  readonly calls: LambdaCall[] = []
  private readonly scripts = new Map<string, Script>()
  /** GetFunction's `State` per function; a scripted function without one is Active. */
  private readonly states = new Map<string, { state: string; reason?: string }>()
  /** Function names GetFunction was asked about, in order. */
  readonly lookups: string[] = []
  private readonly server: Server
  private url_ = ''

  private constructor() {
    this.server = createServer((req, res) => void this.handle(req, res))
  }

  static async start(): Promise<FakeLambda> {
    const fake = new FakeLambda()
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve))
    const { port } = fake.server.address() as AddressInfo
    fake.url_ = `http://127.0.0.1:${port}`
    return fake
  }

  get url(): string {
    return this.url_
  }

  /** How `functionName` answers; `replies` in turn, the last one repeated, or a function of the call. */
  script(functionName: string, ...replies: [Script] | Reply[]): this {
    const first = replies[0]
    if (typeof first === 'function') {
      this.scripts.set(functionName, first)
    } else {
      const list = replies as Reply[]
      this.scripts.set(functionName, (_call, i) => list[Math.min(i, list.length - 1)]!)
    }
    return this
  }

  callsTo(functionName: string): LambdaCall[] {
    return this.calls.filter((c) => c.functionName === functionName)
  }

  /** Forgets the scripts and the calls seen, between tests. */
  reset(): void {
    this.scripts.clear()
    this.calls.length = 0
    this.states.clear()
    this.lookups.length = 0
  }

  /** What GetFunction reports for `functionName` (which then exists, scripted or not): `Failed`, `Pending`... */
  setState(functionName: string, state: string, reason?: string): this {
    this.states.set(functionName, { state, reason })
    return this
  }

  /** GetFunction, as the SDK reads it: `{Configuration, Code}`, or 404 ResourceNotFoundException. */
  private getFunction(functionName: string, res: ServerResponse): void {
    this.lookups.push(functionName)
    const known = this.states.get(functionName) ?? (this.scripts.has(functionName) ? { state: 'Active' } : undefined)
    if (!known) return functionNotFound(res, functionName)
    const name = functionName.split(':').at(functionName.startsWith('arn:') ? 6 : 0)!
    const configuration = {
      FunctionName: name,
      FunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${name}`,
      Runtime: 'nodejs24.x',
      State: known.state,
      ...(known.reason ? { StateReason: known.reason } : {}),
      LastUpdateStatus: 'Successful',
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        Configuration: configuration,
        Code: { RepositoryType: 'S3', Location: 'https://example.invalid/code.zip' },
      }),
    )
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Lambda names every answer's request: the SDK reads it into $metadata.requestId.
    res.setHeader('x-amzn-RequestId', randomUUID())
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const path = new URL(req.url ?? '/', 'http://x').pathname
    const invoke = INVOKE_PATH.exec(path)
    const stream = STREAM_PATH.exec(path)
    const match = invoke ?? stream
    const lookup = GET_FUNCTION_PATH.exec(path)
    if (req.method === 'GET' && lookup) return this.getFunction(decodeURIComponent(lookup[1]!), res)
    if (req.method !== 'POST' || !match) {
      res.writeHead(404, { 'x-amzn-ErrorType': 'UnknownOperationException', 'content-type': 'application/json' })
      res.end(JSON.stringify({ message: `no route for ${req.method} ${path}` }))
      return
    }
    const functionName = decodeURIComponent(match[1]!)
    const call: LambdaCall = {
      functionName,
      streaming: stream !== null,
      payload: Buffer.concat(chunks),
      headers: req.headers,
    }
    const index = this.callsTo(functionName).length
    this.calls.push(call)
    const script = this.scripts.get(functionName)
    if (!script) return functionNotFound(res, functionName)
    await this.answer(await script(call, index), res)
  }

  private async answer(r: Reply, res: ServerResponse): Promise<void> {
    switch (r.type) {
      case 'payload': {
        if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs))
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'x-amz-executed-version': '$LATEST',
        }
        if (r.functionError) headers['x-amz-function-error'] = r.functionError
        res.writeHead(200, headers)
        res.end(r.body)
        return
      }
      case 'throttle': {
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'x-amzn-ErrorType': 'TooManyRequestsException',
        }
        if (r.retryAfterSeconds !== undefined) headers['retry-after'] = String(r.retryAfterSeconds)
        res.writeHead(429, headers)
        res.end(
          JSON.stringify({
            Type: 'User',
            message: 'Rate Exceeded.',
            Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
          }),
        )
        return
      }
      case 'status': {
        const headers: Record<string, string> = { 'content-type': r.errorType ? 'application/json' : 'text/html' }
        if (r.errorType) headers['x-amzn-ErrorType'] = r.errorType
        res.writeHead(r.status, headers)
        res.end(r.body ?? '')
        return
      }
      case 'reset':
        res.socket?.destroy()
        return
      case 'hang':
        return // closeAllConnections() ends it
      case 'stream': {
        res.writeHead(200, {
          'content-type': 'application/vnd.amazon.eventstream',
          'x-amz-executed-version': '$LATEST',
        })
        for await (const step of r.steps) {
          if (typeof step === 'function') {
            await step()
            continue
          }
          const bytes = typeof step === 'string' ? fromUtf8(step) : step
          res.write(eventFrame('PayloadChunk', 'application/octet-stream', bytes))
        }
        if (r.complete === false) {
          res.socket?.destroy() // the stream breaks off without InvokeComplete
          return
        }
        // Read after the steps: a function that fails mid-stream sets it as it runs (a getter).
        const complete = r.error
          ? { ErrorCode: r.error.code, ErrorDetails: r.error.details ?? '', LogResult: '' }
          : { LogResult: '' }
        res.end(eventFrame('InvokeComplete', 'application/json', fromUtf8(JSON.stringify(complete))))
        return
      }
    }
  }
}

/** Lambda's answer for a function it does not have: 404 ResourceNotFoundException, naming its ARN. */
function functionNotFound(res: ServerResponse, functionName: string): void {
  res.writeHead(404, { 'x-amzn-ErrorType': 'ResourceNotFoundException', 'content-type': 'application/json' })
  res.end(
    JSON.stringify({
      Type: 'User',
      Message: `Function not found: arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    }),
  )
}

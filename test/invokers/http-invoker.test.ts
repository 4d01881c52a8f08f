/**
 * The HTTP invoker against a real local HTTP server, scripted per test:
 * answers, error statuses, 429/503 with Retry-After, a server that never
 * answers, event streams and chunked bodies, and a stream cut mid-way; then
 * through the bridge on the embedded broker, where a cut stream ends with an
 * error message after the chunks already sent. No test asserts on time.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import { HttpInvoker, retryAfterMs } from '../../bridge/invokers/http-function/http-function-invoker.ts'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import { LocationInvoker } from '../../bridge/invokers/invoker-for-location.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { decodeResponse, encodeRequest, ID_PROPERTY, type ToolResponse } from '../../shared/protocol.ts'
import { locatedAt } from '../support/located.ts'

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

type Handler = (req: Seen, res: ServerResponse, index: number) => void | Promise<void>

/** A real HTTP server; each test says how it answers. */
let server: Server
let base = ''
let handler: Handler = (_req, res) => void res.end()
const seen: Seen[] = []

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const request = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() }
    seen.push(request)
    await handler(request, res, seen.length - 1)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})
afterEach(() => {
  seen.length = 0
})

/** Tool services for functions at `url` on the test server. */
function services(entries: Record<string, Record<string, unknown>>): ToolServiceSpec[] {
  const toolServices = Object.fromEntries(
    Object.entries(entries).map(([key, extra]) => [
      key,
      {
        id: `${key}-service`,
        topic: key,
        timeout: 2,
        tools: [{ name: `${key}-tool`, description: 'A tool' }],
        ...extra,
      },
    ]),
  )
  return readToolServices({ service: 'http', functions: {}, custom: { toolServices } })
}

const gate = () => {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates; nothing or nonsense is 0', () => {
    expect(retryAfterMs('2')).toBe(2000)
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000)
    expect(retryAfterMs(null)).toBe(0)
    expect(retryAfterMs('soon')).toBe(0)
  })
})

describe('HttpInvoker, called directly', () => {
  const specs = () =>
    services({
      plain: {
        url: `${base}/fn?v=1`,
        headers: { 'x-team': 'blue' },
        headersFromEnv: { authorization: 'HTTP_TEST_TOKEN' },
      },
      getter: { url: `${base}/get`, method: 'GET' },
      streamer: { url: `${base}/stream`, response: 'stream' },
      fast: { url: `${base}/fast`, timeout: 0.3 },
    })
  let invoker: HttpInvoker
  let all: ToolServiceSpec[]
  const spec = (key: string) => locatedAt(all.find((s) => s.functionName === key)!, 'http')

  beforeAll(() => {
    all = specs()
    invoker = new HttpInvoker({
      env: { HTTP_TEST_TOKEN: 'Bearer s3cret' },
      retry: { initialRetryTime: 5, maxRetryTime: 20 },
    })
  })
  afterAll(() => invoker.close())

  async function invoke(key: string, event: unknown = { text: 'hi' }): Promise<{ outcome: Outcome; chunks: string[] }> {
    const chunks: string[] = []
    const outcome = await invoker.invoke({ target: spec(key), event, onChunk: (text) => chunks.push(text) })
    return { outcome, chunks }
  }

  it('POSTs the event as JSON with the configured headers and the secret from the environment; the body is the answer', async () => {
    handler = (_req, res) => void res.end('{"ok":true}')
    expect(await invoker.prepare(spec('plain'))).toBeUndefined()
    expect((await invoke('plain', { text: 'hi' })).outcome).toStrictEqual({ ok: true, text: '{"ok":true}' })
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/fn?v=1', body: '{"text":"hi"}' })
    expect(seen[0]!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-team': 'blue',
      authorization: 'Bearer s3cret',
    })
  })

  it('sends a GET event in the query string, without a body', async () => {
    handler = (req, res) => void res.end(req.url)
    expect((await invoke('getter', { q: 'a b', n: 2, deep: { x: 1 } })).outcome).toStrictEqual({
      ok: true,
      text: '/get?q=a+b&n=2&deep=%7B%22x%22%3A1%7D',
    })
    expect(seen[0]!.body).toBe('')
  })

  it('reports a missing secret at prepare and on every call, without calling', async () => {
    const bare = new HttpInvoker({ env: {} })
    expect(await bare.prepare(spec('plain'))).toBe(
      'environment variable HTTP_TEST_TOKEN (for header authorization) not set',
    )
    expect((await bare.invoke({ target: spec('plain'), event: {}, onChunk: () => {} })).ok).toBe(false)
    expect(seen).toHaveLength(0)
    await bare.close()
  })

  it('turns 4xx and 5xx into an error with the status and an excerpt of the body, without retrying', async () => {
    handler = (req, res) => {
      res.writeHead(req.body.includes('missing') ? 404 : 500, { 'content-type': 'text/html' })
      res.end(req.body.includes('missing') ? '{"error":"no such thing"}' : `<html>${'oops '.repeat(1000)}</html>`)
    }
    expect((await invoke('plain', { missing: true })).outcome).toStrictEqual({
      ok: false,
      kind: 'function-error',
      message: 'HTTP 404 Not Found: {"error":"no such thing"}',
    })
    const { outcome } = await invoke('plain', {})
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'function-error',
      message: expect.stringMatching(/^HTTP 500 Internal Server Error: <html>oops oops .*…$/),
    })
    expect(seen).toHaveLength(2)
  })

  it('retries 429 and 503, waiting as Retry-After asks, then answers', async () => {
    handler = (_req, res, i) => {
      if (i === 0) res.writeHead(429, { 'retry-after': '0' }).end('slow down')
      else if (i === 1) res.writeHead(503, { 'retry-after': new Date(Date.now()).toUTCString() }).end()
      else res.end('at last')
    }
    expect((await invoke('plain')).outcome).toStrictEqual({ ok: true, text: 'at last' })
    expect(seen).toHaveLength(3)
  })

  it('gives up at once when Retry-After is past the timeout', async () => {
    handler = (_req, res) => void res.writeHead(429, { 'retry-after': '3600' }).end('{"message":"quota"}')
    const { outcome } = await invoke('plain')
    expect(outcome).toStrictEqual({
      ok: false,
      kind: 'unavailable',
      message: `POST ${base}/fn?v=1: HTTP 429 Too Many Requests: {"message":"quota"} (Retry-After 3600 s is past the function's timeout)`,
    })
    expect(seen).toHaveLength(1)
  })

  it('gives up after the retries when throttling lasts', async () => {
    handler = (_req, res) => void res.writeHead(503).end()
    const { outcome } = await invoke('plain')
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'unavailable',
      message: expect.stringMatching(/gave up after 3 retries: .*HTTP 503 Service Unavailable/),
    })
    expect(seen).toHaveLength(4)
  })

  it('times out a function that does not answer', async () => {
    const hanging: ServerResponse[] = []
    handler = (_req, res) => void hanging.push(res) // never answers
    const { outcome } = await invoke('fast')
    for (const res of hanging) res.destroy()
    expect(outcome).toStrictEqual({
      ok: false,
      kind: 'timeout',
      message: `function "fast" (POST ${base}/fast) timed out after 300 ms`,
    })
  })

  it('answers with an error when nothing listens', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const nowhere = new HttpInvoker({ env: {}, retry: { initialRetryTime: 1, maxRetryTime: 2 } })
    const gone = locatedAt(services({ gone: { url: `http://127.0.0.1:${port}/x` } })[0]!, 'http')
    const outcome = await nowhere.invoke({ target: gone, event: {}, onChunk: () => {} })
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable', message: expect.stringMatching(/ECONNREFUSED/) })
    await nowhere.close()
  })

  it('streams an event stream event by event', async () => {
    const chunks: string[] = []
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(': a comment\n\ndata: Once\n\n')
      res.write('data: upon\ndata: a time\n\nda')
      await new Promise((resolve) => setTimeout(resolve, 1))
      res.end('ta: é\n\n')
    }
    const outcome = await invoker.invoke({ target: spec('streamer'), event: {}, onChunk: (t) => chunks.push(t) })
    expect(outcome).toStrictEqual({ ok: true, text: '' })
    expect(chunks).toStrictEqual(['Once', 'upon\na time', 'é'])
  })

  it('ends an event stream with an error on `event: error`', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end('data: part\n\nevent: error\ndata: the model is overloaded\n\ndata: never\n\n')
    }
    const { outcome, chunks } = await invoke('streamer')
    expect(outcome).toStrictEqual({ ok: false, kind: 'function-error', message: 'the model is overloaded' })
    expect(chunks).toStrictEqual(['part'])
  })

  it('joins an event stream into one answer for a single service', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
      res.end('data: a\n\ndata: b\n\n')
    }
    expect((await invoke('plain')).outcome).toStrictEqual({ ok: true, text: 'ab' })
  })

  it('streams a chunked body chunk by chunk, a character split across chunks whole', async () => {
    const chunks: string[] = []
    const bytes = Buffer.from('é!')
    const next = gate()
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('first ')
      await next.opened
      res.write(bytes.subarray(0, 1))
      res.end(bytes.subarray(1))
    }
    const outcome = invoker.invoke({
      target: spec('streamer'),
      event: {},
      onChunk: (t) => {
        chunks.push(t)
        next.open() // the second write waits until the first chunk arrived: they are seen apart
      },
    })
    expect(await outcome).toStrictEqual({ ok: true, text: '' })
    expect(chunks[0]).toBe('first ')
    expect(chunks.join('')).toBe('first é!')
  })

  it('ends with an error after the chunks already sent when the stream is cut', async () => {
    const chunks: string[] = []
    const sent = gate()
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: one\n\ndata: two\n\n')
      await sent.opened
      res.socket!.destroy()
    }
    const outcome = await invoker.invoke({
      target: spec('streamer'),
      event: {},
      onChunk: (t) => {
        chunks.push(t)
        if (chunks.length === 2) sent.open()
      },
    })
    expect(chunks).toStrictEqual(['one', 'two'])
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'unavailable',
      message: expect.stringMatching(/broke off after 2 chunks/),
    })
  })
})

describe('an HTTP function through the bridge', () => {
  let bridge: Bridge
  let client: MemoryTransport
  let spec: ToolServiceSpec
  const received: ToolResponse[] = []

  beforeAll(async () => {
    const broker = new MemoryBroker()
    spec = services({ story: { url: `${base}/story`, response: 'stream', event: 'arguments' } })[0]!
    bridge = createBridge({
      transport: new MemoryTransport(broker),
      invoker: new LocationInvoker({ settings: resolveSettings({}, {}), baseDir: process.cwd() }),
      services: [spec],
    })
    await bridge.start()
    client = new MemoryTransport(broker)
    await client.connect()
    await client.subscribe(spec.responseQueue, (delivery) => {
      delivery.ack()
      const decoded = decodeResponse(delivery.body)
      if (decoded.ok) received.push(decoded.value)
    })
  })
  afterAll(async () => {
    await client?.close()
    await bridge?.stop()
  })

  it('publishes the chunks sent before a cut, then an error ending the stream', async () => {
    handler = async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(`data: hero ${JSON.parse(req.body).hero}\n\n`)
      await new Promise((resolve) => setTimeout(resolve, 1))
      res.socket!.destroy()
    }
    await client.publish(spec.requestQueue, encodeRequest({ config: {}, arguments: { hero: 'Ada' } }), {
      [ID_PROPERTY]: randomUUID(),
    })
    while (!received.some((r) => r.end_of_stream)) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(received[0]).toStrictEqual({ error: null, response: 'hero Ada', end_of_stream: false })
    expect(received.at(-1)).toMatchObject({ error: { type: 'unavailable' }, end_of_stream: true })
    expect(received).toHaveLength(2)
  })
})

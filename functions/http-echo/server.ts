/**
 * A plain HTTP function server, standing in for OpenFaaS, Knative or Cloud
 * Run: JSON in, JSON or server-sent events out, nothing about tools in it.
 * toolbridge serves its routes as tools with `url:` (test/fixtures/byof).
 *
 *   POST /echo       {"text": "..."}  -> {"echo": "...", "words": n}
 *   POST /countdown  {"from": 3}      -> text/event-stream, one event a line: "3\n", "2\n", "1\n", "liftoff"
 *
 *   node functions/http-echo/server.ts [port]   (default 8090)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

const MAX_BODY_BYTES = 1024 * 1024
const TICK_MS = 10

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength
    if (size > MAX_BODY_BYTES) throw new Error('body too large')
    chunks.push(chunk as Buffer)
  }
  const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('body must be a JSON object')
  return body as Record<string, unknown>
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}

async function countdown(res: ServerResponse, from: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  for (let n = from; n > 0; n--) {
    res.write(`data: ${n}\ndata:\n\n`) // the empty second data line ends the event's data with a newline
    await new Promise((resolve) => setTimeout(resolve, TICK_MS))
  }
  res.end('data: liftoff\n\n')
}

async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST') return json(res, 405, { error: `${req.method} is not allowed; POST JSON` })
  let body: Record<string, unknown>
  try {
    body = await readJson(req)
  } catch (err) {
    return json(res, 400, { error: (err as Error).message })
  }
  switch (req.url) {
    case '/echo': {
      if (typeof body.text !== 'string') return json(res, 400, { error: '"text" must be a string' })
      return json(res, 200, { echo: body.text, words: body.text.split(/\s+/).filter(Boolean).length })
    }
    case '/countdown': {
      const from = body.from ?? 3
      if (!Number.isInteger(from) || (from as number) < 1 || (from as number) > 100)
        return json(res, 400, { error: '"from" must be an integer from 1 to 100' })
      return countdown(res, from as number)
    }
    default:
      return json(res, 404, { error: `no route ${req.url}` })
  }
}

export interface HttpFunctionServer {
  url: string
  close(): Promise<void>
}

export async function startHttpFunctionServer(port = 0, host = '127.0.0.1'): Promise<HttpFunctionServer> {
  const server: Server = createServer((req, res) => void route(req, res))
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://${host}:${address.port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

if (import.meta.main) {
  const server = await startHttpFunctionServer(Number(process.argv[2] ?? 8090))
  console.log(`http-echo listening on ${server.url}`)
}

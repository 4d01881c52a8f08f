/**
 * A plain HTTP function: JSON in, text out, nothing about tools in it.
 *
 *   POST /greet  {"name": "Ada"}  ->  Hello, Ada!
 *
 *   node functions/greet/server.ts [port]   (npm run serve; default 8090, 0 for any free port)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

async function readJson(req: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const chunk of req) text += chunk
  return JSON.parse(text || '{}')
}

async function greet(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST' || req.url !== '/greet') {
    res.writeHead(404).end('POST /greet')
    return
  }
  const body = await readJson(req).catch(() => undefined)
  const name = typeof body === 'object' && body !== null && 'name' in body ? body.name : undefined
  if (typeof name !== 'string' || name === '') {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('"name" must be a non-empty string')
    return
  }
  res.writeHead(200, { 'content-type': 'text/plain' }).end(`Hello, ${name}!`)
}

export const server = createServer((req, res) => void greet(req, res))

if (import.meta.main) {
  server.listen(Number(process.argv[2] ?? 8090), '127.0.0.1', () => {
    console.log(`greet: http://127.0.0.1:${(server.address() as AddressInfo).port}/greet`)
  })
}

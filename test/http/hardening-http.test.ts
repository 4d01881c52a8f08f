/**
 * The HTTP and MCP front door under attack and abuse, on a real gateway
 * (startRuntime, embedded broker, ephemeral port) with real sockets, and
 * the MCP ones also with the official SDK client: what a web page, a
 * network neighbour, an impatient or a non-reading client can and cannot
 * make the gateway do.
 */
import { execFile, spawn } from 'node:child_process'
import { request, type IncomingHttpHeaders } from 'node:http'
import { connect as connectSocket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_UNSENT_CHARS } from '../../bridge/http/ndjson-answer.ts'
import { MAX_TEXT } from '../../bridge/support/bounded-text.ts'
import { loadProject } from '../../bridge/project/project.ts'
import type { SettingFlags } from '../../bridge/project/settings.ts'
import type { Runtime } from '../../bridge/runtime.ts'
import type { Logger } from '../../bridge/support/logger.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { StartedBridge } from '../support/started-bridge.ts'
import { startInProcess } from '../support/in-process-runtime.ts'
import { cleanEnv } from '../support/clean-env.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const HARDENING_YML = 'test/fixtures/hardening-http/serverless.yml'
const PROJECT = loadProject(fileURLToPath(new URL('../fixtures/hardening-http/serverless.yml', import.meta.url)))

async function start(flags: SettingFlags = {}, logger?: Logger): Promise<Runtime> {
  return startInProcess(PROJECT, flags, { logger })
}

/** Runs `use` with the gateway's URL of a runtime started with `flags`, and the runtime; stops it whatever happens. */
async function withRuntime(flags: SettingFlags, use: (url: string, runtime: Runtime) => Promise<void>): Promise<void> {
  const runtime = await start(flags)
  try {
    await use(runtime.gateway!.url, runtime)
  } finally {
    await runtime.stop()
  }
}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  text: string
}

/** One request over node:http, which (unlike fetch) lets a test set Host and send any bytes. */
function raw(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const req = request(
      { host: target.hostname, port: target.port, path, method: options.method ?? 'POST', headers: options.headers },
      (res) => {
        const parts: Buffer[] = []
        res.on('data', (part: Buffer) => parts.push(part))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

const JSON_HEADERS = { 'content-type': 'application/json' }
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const callBody = (args: Record<string, unknown>) => JSON.stringify({ arguments: args })
const toolsCall = (name: string, args: unknown, id = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })

/** The JSON-RPC message of an /mcp answer, sent as JSON or as one SSE event. */
function rpcMessage(text: string): { error?: { code: number; message: string }; result?: unknown } {
  const data = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? 'null')
  return JSON.parse(data) as { error?: { code: number; message: string }; result?: unknown }
}

async function mcpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'hardening-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))
  return client
}

const textOf = (result: unknown) =>
  (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('')

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Calls the slow tool for 1 ms: its answer says how many calls the function has started in this process. */
async function slowCalls(url: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`${url}/tools/slow`, {
    method: 'POST',
    headers: { ...JSON_HEADERS, ...headers },
    body: callBody({ ms: 1 }),
  })
  const text = await response.text()
  const count = /^\{"response":"call (\d+)"\}\n$/.exec(text)
  if (!count) throw new Error(`unexpected answer from slow: ${response.status} ${text}`)
  return Number(count[1])
}

/** Arguments nested `depth` objects deep, as JSON text (JSON.stringify itself overflows long before 100,000). */
const deepArguments = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)

describe('Host, Origin and Content-Type on /tools and /mcp', () => {
  let runtime: Runtime
  let url: string
  let port: string
  beforeAll(async () => {
    runtime = await start({ allowedHosts: 'tools.internal', allowedOrigins: 'http://app.example' })
    url = runtime.gateway!.url
    port = new URL(url).port
  })
  afterAll(() => runtime?.stop())

  it('refuses a DNS-rebinding Host on /tools and /mcp, and answers IP addresses, localhost and allowed names', async () => {
    for (const path of ['/tools/echo', '/mcp']) {
      const refused = await raw(url, path, {
        headers: { ...MCP_HEADERS, host: `evil.example:${port}` },
        body: path === '/mcp' ? toolsCall('echo', {}) : callBody({}),
      })
      expect(refused.status).toBe(403)
      expect(JSON.stringify(JSON.parse(refused.text))).toContain('Host \\"evil.example')
    }
    expect((await raw(url, '/tools', { method: 'GET', headers: { host: `evil.example:${port}` } })).status).toBe(403)
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `tools.internal:${port}`, 'LOCALHOST']) {
      const answered = await raw(url, '/tools/echo', { headers: { ...JSON_HEADERS, host }, body: callBody({ x: 1 }) })
      expect({ host, status: answered.status }).toEqual({ host, status: 200 })
      expect(answered.text).toBe(`${JSON.stringify({ response: '{"x":1}' })}\n`)
    }
    // Health and metrics stay open to probes whatever name they use.
    expect((await raw(url, '/healthz', { method: 'GET', headers: { host: 'probe.svc' } })).status).toBe(200)
  })

  it('refuses a request from a web page (an Origin) unless its origin is allowed', async () => {
    const evil = await raw(url, '/tools/echo', {
      headers: { ...JSON_HEADERS, origin: 'http://evil.example' },
      body: callBody({}),
    })
    expect(evil.status).toBe(403)
    expect(JSON.parse(evil.text)).toEqual({
      error: {
        type: 'http',
        message: expect.stringMatching(
          /^Origin "http:\/\/evil\.example" is not allowed: add it with --allowed-origins/,
        ),
      },
    })
    // On a loopback bind a page of this machine may call (a rebinding page's Host is refused first).
    const local = await raw(url, '/tools/echo', {
      headers: { ...JSON_HEADERS, origin: `http://localhost:${Number(port) + 1}` },
      body: callBody({}),
    })
    expect(local.status).toBe(200)
    expect(
      (
        await raw(url, '/tools/echo', {
          headers: { ...JSON_HEADERS, origin: 'http://app.example' },
          body: callBody({}),
        })
      ).status,
    ).toBe(200)
  })

  it('refuses a cross-site "simple" POST (text/plain, a form, no type) with 415 before running the tool', async () => {
    const before = await slowCalls(url)
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const answer = await raw(url, '/tools/slow', {
        headers: type ? { 'content-type': type } : {},
        body: callBody({ ms: 1 }),
      })
      expect({ type, status: answer.status }).toEqual({ type, status: 415 })
    }
    expect(
      (
        await raw(url, '/mcp', {
          headers: { ...MCP_HEADERS, 'content-type': 'text/plain' },
          body: toolsCall('slow', { ms: 1 }),
        })
      ).status,
    ).toBe(415)
    expect(await slowCalls(url, { 'content-type': 'application/json; charset=utf-8' })).toBe(before + 1) // none of the refused ones ran
  })

  it('answers /mcp from a foreign Origin with 403 and a JSON-RPC error, without one as before, and an allowed one with CORS headers', async () => {
    const evil = await raw(url, '/mcp', {
      headers: { ...MCP_HEADERS, origin: 'http://evil.example' },
      body: toolsCall('echo', { z: 1 }),
    })
    expect(evil.status).toBe(403)
    expect(rpcMessage(evil.text).error?.message).toMatch(/^Origin "http:\/\/evil\.example" is not allowed/)
    expect(evil.headers['access-control-allow-origin']).toBeUndefined()
    const server = await raw(url, '/mcp', { headers: MCP_HEADERS, body: toolsCall('echo', { z: 1 }) })
    expect(server.status).toBe(200)
    expect(server.headers['access-control-allow-origin']).toBeUndefined()
    const page = await raw(url, '/mcp', {
      headers: { ...MCP_HEADERS, origin: 'http://app.example' },
      body: toolsCall('echo', { z: 1 }),
    })
    expect(page.status).toBe(200)
    expect(page.headers).toMatchObject({
      'access-control-allow-origin': 'http://app.example',
      vary: 'Origin',
      'access-control-expose-headers': expect.stringContaining('www-authenticate'),
    })
    expect(rpcMessage(page.text).result).toMatchObject({ content: [{ type: 'text', text: '{"z":1}' }] })
  })

  it('answers the preflight of an allowed page with what it may send, and refuses a foreign one', async () => {
    const preflight = {
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, mcp-protocol-version, mcp-method, mcp-name',
    }
    const allowed = await raw(url, '/mcp', {
      method: 'OPTIONS',
      headers: { ...preflight, origin: 'http://app.example' },
    })
    expect(allowed.status).toBe(204)
    expect(allowed.headers['access-control-allow-origin']).toBe('http://app.example')
    expect(allowed.headers['access-control-allow-methods']).toContain('POST')
    for (const header of ['content-type', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'authorization'])
      expect(allowed.headers['access-control-allow-headers']).toContain(header)
    const foreign = await raw(url, '/mcp', {
      method: 'OPTIONS',
      headers: { ...preflight, origin: 'http://evil.example' },
    })
    expect(foreign.status).toBe(403)
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined()
  })

  it('lets the MCP SDK client in from an allowed origin only', async () => {
    await expect(mcpClient(url, { origin: 'http://evil.example' })).rejects.toThrow(/403|Origin/)
    const client = await mcpClient(url, { origin: 'http://app.example' })
    try {
      expect(textOf(await client.callTool({ name: 'echo', arguments: { y: 2 } }))).toBe('{"y":2}')
    } finally {
      await client.close()
    }
  })
})

describe('one token for every endpoint that runs tools, and no open network address by accident', () => {
  it('guards /mcp with --http-token too (the SDK client needs it)', async () => {
    await withRuntime({ httpToken: 'tok' }, async (url) => {
      await expect(mcpClient(url)).rejects.toThrow()
      const client = await mcpClient(url, { authorization: 'Bearer tok' })
      expect(textOf(await client.callTool({ name: 'echo', arguments: {} }))).toBe('{}')
      await client.close()
    })
  })

  it('refuses to start on 0.0.0.0, ::, or with only --mcp-token, naming the open endpoints', async () => {
    await expect(start({ host: '0.0.0.0' })).rejects.toThrow(
      /--host: "0\.0\.0\.0" is reachable from other machines and \/tools and \/mcp would run tools for anyone/,
    )
    await expect(start({ host: '::' })).rejects.toThrow(ToolbridgeError)
    await expect(start({ host: '0.0.0.0', mcpToken: 'm' })).rejects.toThrow(/and \/tools would run tools for anyone/)
    const tokened = await start({ host: '0.0.0.0', httpToken: 't' })
    await tokened.stop()
    const optedOut = await start({ host: '0.0.0.0', allowUnauthenticated: true })
    await optedOut.stop()
  })

  it('toolbridge start says so and exits 1; the banner tells which endpoint needs a token; long error messages are logged cut', async () => {
    const refused = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['bridge/cli/main.ts', '-c', HARDENING_YML, 'start', '--host', '0.0.0.0', '--port', '0', '--mcp-token', 'm'],
        { cwd: ROOT, env: cleanEnv(), timeout: 30_000 },
        (error, _stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
      ),
    )
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(
      /^toolbridge: --host: "0\.0\.0\.0" is reachable from other machines and \/tools would run tools for anyone there without a token: set --http-token .* or pass --allow-unauthenticated/,
    )

    const start = ['start', '--port', '0', '--log-level', 'warn', '--mcp-token', 'm', '--invoker', 'in-process']
    const bridge = new StartedBridge(['-c', HARDENING_YML, ...start])
    try {
      await bridge.printed(/^ {2}MCP: .*\n/m)
      expect(bridge.stdout).toMatch(
        /^ {2}HTTP: (http:\/\/127\.0\.0\.1:\d+)\/tools \(no token: open to anyone who reaches \1\)$/m,
      )
      expect(bridge.stdout).toMatch(/^ {2}MCP: http:\/\/127\.0\.0\.1:\d+\/mcp \(bearer token required\)$/m)

      // A function's 1 MB error message: logged, cut to a few KB.
      const url = await bridge.url()
      const failed = await fetch(`${url}/tools/long-error`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: callBody({ size: 1024 * 1024 }),
      })
      expect(failed.status).toBe(502)
      await until(() => bridge.stderr.includes('eeee\u2026'))
      const longest = Math.max(...bridge.stderr.split('\n').map((line) => line.length))
      expect(longest).toBeGreaterThan(MAX_TEXT)
      expect(longest).toBeLessThan(2 * MAX_TEXT)
    } finally {
      await bridge.stop()
    }
  })
})

describe('admission: a cap on calls in flight, callers that gave up, batches', () => {
  it('answers 429 with Retry-After past --max-http-in-flight', async () => {
    await withRuntime({ maxHttpInFlight: '2' }, async (url, runtime) => {
      const busy = [1, 2].map(() =>
        fetch(`${url}/tools/slow`, { method: 'POST', headers: JSON_HEADERS, body: callBody({ ms: 300 }) }),
      )
      await until(() => runtime.gateway!.inFlight === 2)
      const refused = await fetch(`${url}/tools/echo`, { method: 'POST', headers: JSON_HEADERS, body: callBody({}) })
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('1')
      const mcpRefused = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: MCP_HEADERS,
        body: toolsCall('echo', {}),
      })
      expect(mcpRefused.status).toBe(429)
      expect((await Promise.all(busy)).map((r) => r.status)).toEqual([200, 200])
      expect(
        (await fetch(`${url}/tools/echo`, { method: 'POST', headers: JSON_HEADERS, body: callBody({}) })).status,
      ).toBe(200)
    })
  })

  it('never invokes the calls of callers that went away before their turn, and frees their slots at once', async () => {
    await withRuntime({}, async (url, runtime) => {
      const before = await slowCalls(url)
      // slow-service takes 2 at once: 2 start, 30 wait; then every caller gives up.
      const callers = Array.from({ length: 32 }, () => new AbortController())
      const calls = callers.map((c) =>
        fetch(`${url}/tools/slow`, {
          method: 'POST',
          headers: JSON_HEADERS,
          body: callBody({ ms: 500 }),
          signal: c.signal,
        }).catch(() => 'aborted'),
      )
      await until(() => runtime.gateway!.inFlight === 32 && runtime.bridge.inFlight === 2)
      for (const c of callers) c.abort()
      expect(await Promise.all(calls)).toEqual(callers.map(() => 'aborted'))
      await until(() => runtime.gateway!.inFlight === 0)
      // The next call is the third the function starts after `before`: none of the 30 abandoned ones ran.
      expect(await slowCalls(url)).toBe(before + 3)
    })
  })

  it('refuses a JSON-RPC batch on /mcp with -32600, without calling anything', async () => {
    await withRuntime({}, async (url) => {
      const before = await slowCalls(url)
      const batch = `[${Array.from({ length: 100 }, (_, i) => toolsCall('slow', { ms: 1 }, i)).join(',')}]`
      const answer = await raw(url, '/mcp', { headers: MCP_HEADERS, body: batch })
      expect(answer.status).toBe(400)
      expect(rpcMessage(answer.text).error).toEqual({
        code: ErrorCode.InvalidRequest,
        message: expect.stringContaining('batches are not supported'),
      })
      expect(await slowCalls(url)).toBe(before + 1)
    })
  })

  it('bounds the embedded broker: a queue that nobody drains refuses more, as unavailable and retriable', async () => {
    const broker = new MemoryBroker({ maxMessages: 3, maxBytes: 1024 })
    const transport = new MemoryTransport(broker)
    await transport.connect()
    await transport.consume('request:tg:held', { subscription: 'held', concurrency: 1 }, () => {}) // takes one, never acks
    const body = new Uint8Array(100)
    await transport.publish('request:tg:held', body, {})
    await new Promise((resolve) => setImmediate(resolve)) // delivered: held by the consumer, out of the backlog
    for (let i = 0; i < 3; i++) await transport.publish('request:tg:held', body, {})
    const refused = await transport.publish('request:tg:held', body, {}).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(ToolbridgeError)
    expect(refused).toMatchObject({ kind: 'unavailable', retriable: true })
    expect((refused as Error).message).toMatch(/already holds 3 messages/)
    await expect(transport.publish('request:tg:held', new Uint8Array(2000), {})).rejects.toThrow(/already holds/)
    await transport.close()
  })
})

describe('bodies, paths and arguments that used to get the wrong answer', () => {
  let runtime: Runtime
  let url: string
  const logged: { fields: object; message: string }[] = []
  const logger: Logger = {
    debug() {},
    info() {},
    error() {},
    warn: (fields, message) => void logged.push({ fields, message }),
  }
  beforeAll(async () => {
    runtime = await start({ httpToken: 'sécret' }, logger)
    url = runtime.gateway!.url
  })
  afterAll(() => runtime?.stop())
  const auth = { authorization: 'Bearer sécret' }

  it('answers 413 to an over-limit body, read by the client, decided from Content-Length before reading it', async () => {
    const tooBig = await fetch(`${url}/tools/echo`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, ...auth },
      body: callBody({ text: 'x'.repeat(6 * 1024 * 1024) }),
    })
    expect(tooBig.status).toBe(413)
    expect(await tooBig.json()).toEqual({
      error: { type: 'http', message: `request body over ${5 * 1024 * 1024} bytes` },
    })
    // A client that announces 100 MB and sends only the headers: the answer comes without waiting for the body.
    const status = await new Promise<string>((resolve, reject) => {
      const socket = connectSocket(Number(new URL(url).port), '127.0.0.1')
      socket.on('error', reject)
      socket.write(
        `POST /tools/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s\xc3\xa9cret\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`,
        'latin1',
      )
      socket.once('data', (data) => {
        resolve(data.toString('latin1').split('\r\n')[0]!)
        socket.destroy()
      })
    })
    expect(status).toBe('HTTP/1.1 413 Payload Too Large')
    // Without Content-Length (chunked): refused once it passes the limit.
    const chunked = await fetch(`${url}/tools/echo`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, ...auth },
      body: new Blob([callBody({ text: 'y'.repeat(6 * 1024 * 1024) })]).stream(),
      duplex: 'half',
    } as RequestInit)
    expect(chunked.status).toBe(413)
  })

  it('answers 400 to a malformed escape in the tool name, invalid UTF-8 and arguments nested 100,000 deep', async () => {
    const badEscape = await raw(url, '/tools/%ZZ', { headers: { ...JSON_HEADERS, ...auth }, body: '{}' })
    expect(badEscape.status).toBe(400)
    expect(JSON.parse(badEscape.text)).toEqual({
      error: { type: 'http', message: 'malformed percent-escape in the tool name "%ZZ"' },
    })
    const utf8 = await raw(url, '/tools/echo', {
      headers: { ...JSON_HEADERS, ...auth },
      body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
    })
    expect({ status: utf8.status, body: JSON.parse(utf8.text) }).toEqual({
      status: 400,
      body: { error: { type: 'http', message: 'body is not valid UTF-8' } },
    })
    const deep = await raw(url, '/tools/echo', {
      headers: { ...JSON_HEADERS, ...auth },
      body: `{"arguments":${deepArguments(100_000)}}`,
    })
    expect({ status: deep.status, body: JSON.parse(deep.text) }).toEqual({
      status: 400,
      body: { error: { type: 'bad-request', message: '"arguments" nests deeper than 100 levels' } },
    })
  })

  it('answers arguments nested too deep over MCP with invalid params (-32602), and refuses a raw message 100,000 levels deep (-32600)', async () => {
    const client = await mcpClient(url, auth)
    try {
      let nested: Record<string, unknown> = { a: 1 }
      for (let i = 0; i < 200; i++) nested = { a: nested }
      const error = await client.callTool({ name: 'echo', arguments: nested }).catch((err: unknown) => err)
      expect(error).toBeInstanceOf(McpError)
      expect(error).toMatchObject({
        code: ErrorCode.InvalidParams,
        message: expect.stringContaining('nests deeper than 100 levels'),
      })
    } finally {
      await client.close()
    }
    const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":${deepArguments(100_000)}}}`
    const answer = await raw(url, '/mcp', { headers: { ...MCP_HEADERS, ...auth }, body })
    // Refused before the SDK parses it: nothing walks those levels recursively.
    expect(answer.status).toBe(400)
    expect(rpcMessage(answer.text).error).toEqual({
      code: ErrorCode.InvalidRequest,
      message: 'Invalid Request: the message nests deeper than 1000 levels',
    })
    const badParams = await raw(url, '/mcp', {
      headers: { ...MCP_HEADERS, ...auth },
      body: toolsCall('echo', 'not an object'),
    })
    expect(rpcMessage(badParams.text).error?.code).toBe(ErrorCode.InvalidParams)
  })

  it('matches the Bearer scheme in any case and a non-ASCII token sent as UTF-8; logs refusals without the token', async () => {
    for (const authorization of ['bearer sécret', 'BEARER sécret', 'Bearer  sécret']) {
      expect((await fetch(`${url}/tools`, { headers: { authorization } })).status).toBe(200)
    }
    // curl sends the UTF-8 bytes of a non-ASCII token; node:http takes a Latin-1 string as bytes.
    const utf8Bytes = Buffer.from('Bearer sécret', 'utf8').toString('latin1')
    expect((await raw(url, '/tools', { method: 'GET', headers: { authorization: utf8Bytes } })).status).toBe(200)
    logged.length = 0
    expect((await fetch(`${url}/tools`, { headers: { authorization: 'Bearer sécret-but-wrong' } })).status).toBe(401)
    expect((await fetch(`${url}/tools`, { headers: { authorization: 'Bearer sécre' } })).status).toBe(401)
    expect(logged).toHaveLength(2)
    expect(logged[0]).toMatchObject({
      message: expect.stringContaining('bearer token'),
      fields: { path: '/tools', method: 'GET' },
    })
    expect(JSON.stringify(logged)).not.toContain('sécret')
  })

  it('bounds error text on the wire and answers HEAD /healthz', async () => {
    const answer = await raw(url, '/tools/long-error', {
      headers: { ...JSON_HEADERS, ...auth },
      body: callBody({ size: 1024 * 1024 }),
    })
    const { error } = JSON.parse(answer.text) as { error: { type: string; message: string } }
    expect(error.type).toBe('tool-service-error')
    expect(error.message).toHaveLength(MAX_TEXT + 1)
    expect(error.message.endsWith('…')).toBe(true)
    const head = await raw(url, '/healthz', { method: 'HEAD' })
    expect({ status: head.status, text: head.text }).toEqual({ status: 200, text: '' })
  })
})

describe('streamed answers at the pace of the client', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await start()
    url = runtime.gateway!.url
  })
  afterAll(() => runtime?.stop())

  it('gives a reading client every chunk and the whole answer', async () => {
    const response = await fetch(`${url}/tools/huge`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: callBody({ count: 40, size: 256 * 1024 }),
    })
    const lines = (await response.text())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { chunk?: string; response?: string })
    expect(lines).toHaveLength(41)
    expect(lines.slice(0, 40).every((line) => line.chunk?.length === 256 * 1024)).toBe(true)
    expect(lines[40]!.response).toHaveLength(40 * 256 * 1024)
  })

  it('holds a bounded amount for a client that does not read a 200 MB stream, then gives up on it', async () => {
    const socket = connectSocket(Number(new URL(url).port), '127.0.0.1')
    const body = callBody({ count: 200, size: 1024 * 1024 })
    socket.write(
      `POST /tools/huge HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    )
    socket.pause() // and never read while the stream runs
    const rssBefore = process.memoryUsage.rss()
    let peakRss = rssBefore
    await until(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss())
      return runtime.bridge.inFlight === 0 && runtime.gateway!.inFlight === 0
    })
    // Before, the gateway kept the whole stream for the client, twice over: RSS went up by about 1.4 GB.
    expect(peakRss - rssBefore).toBeLessThan(MAX_UNSENT_CHARS * 4)
    // The gateway closed the connection: whatever the client can still read ends without a final line.
    const received = await new Promise<string>((resolve) => {
      const parts: Buffer[] = []
      socket.on('data', (part: Buffer) => parts.push(part))
      socket.on('close', () => resolve(Buffer.concat(parts).toString('latin1')))
      socket.on('error', () => {})
      socket.resume()
    })
    expect(received).not.toContain('{"response"')
  })
})

describe('toolbridge mcp (stdio) with lines that are not JSON-RPC', () => {
  it('answers a non-JSON line and an over-long line with -32700 and goes on serving', async () => {
    const child = spawn(
      process.execPath,
      ['bridge/cli/main.ts', '-c', HARDENING_YML, 'mcp', '--invoker', 'in-process'],
      { cwd: ROOT, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
    )
    try {
      const messages: { id?: unknown; error?: { code: number; message: string }; result?: unknown }[] = []
      let pending = ''
      child.stdout.on('data', (d: Buffer) => {
        pending += d.toString('utf8')
        let newline: number
        while ((newline = pending.indexOf('\n')) >= 0) {
          messages.push(JSON.parse(pending.slice(0, newline)) as (typeof messages)[number])
          pending = pending.slice(newline + 1)
        }
      })
      child.stdin.write('this is not json\n')
      child.stdin.write('"' + 'x'.repeat(11 * 1024 * 1024) + '"\n')
      child.stdin.write(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }) + '\n',
      )
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n')
      child.stdin.write(toolsCall('echo', { z: 3 }, 2) + '\n')
      await until(() => messages.some((m) => m.id === 2) || child.exitCode !== null)
      expect(messages.slice(0, 2)).toEqual([
        {
          jsonrpc: '2.0',
          id: null,
          error: { code: ErrorCode.ParseError, message: 'Parse error: the line is not JSON' },
        },
        {
          jsonrpc: '2.0',
          id: null,
          error: { code: ErrorCode.ParseError, message: expect.stringMatching(/^Parse error: line over \d+ bytes$/) },
        },
      ])
      expect(messages.find((m) => m.id === 2)).toMatchObject({
        result: { content: [{ type: 'text', text: '{"z":3}' }] },
      })
    } finally {
      child.kill('SIGKILL')
    }
  })
})

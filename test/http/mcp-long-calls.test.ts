/**
 * Long MCP calls over Streamable HTTP at /mcp (bridge/http/mcp.ts, mcp-sessions.ts, mcp-replay.ts):
 * kept alive through a proxy that cuts idle connections, cancelled by a 2025-era client (the
 * official SDK v1 client, with notifications/cancelled in its session, never another session's
 * call), and resumed with Last-Event-ID after the connection dropped. The heartbeat is set to 2 s
 * so that the proxy's 5 s idle timeout would cut a call that sent nothing.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Runtime } from '../../bridge/runtime.ts'
import { startInProcess } from '../support/in-process-runtime.ts'

const PROJECT = fileURLToPath(new URL('../fixtures/mcp-long-calls/serverless.yml', import.meta.url))
const PROXY_IDLE_MS = 5000

/** A TCP proxy that ends a connection quiet for `idleMs` either way, as load balancers do. */
async function idleCuttingProxy(target: URL, idleMs: number): Promise<{ url: string; server: Server }> {
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => {})
      socket.setTimeout(idleMs, () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream).pipe(client)
  })
  server.on('close', () => {
    for (const socket of sockets) socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

async function connectV1(url: string): Promise<Client> {
  const client = new Client({ name: 'long-calls-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)))
  return client
}

const textOf = (result: unknown) =>
  (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('')

describe('long MCP calls', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess(PROJECT, { mcpHeartbeat: '2' })
    url = runtime.gateway!.url
  })
  afterAll(async () => {
    await runtime?.stop()
  })

  describe('behind a proxy that cuts connections idle for 5 s', () => {
    let proxy: { url: string; server: Server }
    beforeAll(async () => {
      proxy = await idleCuttingProxy(new URL(url), PROXY_IDLE_MS)
    })
    afterAll(() => new Promise<void>((resolve) => proxy.server.close(() => resolve())))

    it('cuts a quiet call that is not MCP: the proxy does what it is here for', async () => {
      const answer = fetch(`${proxy.url}/tools/slow`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ arguments: { seconds: 8 } }),
      }).then((r) => r.text())
      await expect(answer).rejects.toThrow()
    }, 30_000)

    it('answers a 20 s call with a progress token: heartbeats keep the connection busy', async () => {
      const client = await connectV1(proxy.url)
      const progress: { progress: number; message?: string }[] = []
      try {
        const result = await client.callTool({ name: 'slow', arguments: { seconds: 20 } }, undefined, {
          onprogress: (p) => void progress.push(p),
          timeout: 60_000,
        })
        expect(textOf(result)).toBe('answered after 20 s')
        expect(progress.length).toBeGreaterThan(0)
        expect(progress.every((p) => p.message === 'still running')).toBe(true)
        // Progress only ever grows.
        expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b))
      } finally {
        await client.close()
      }
    }, 60_000)
  })

  describe('cancellation from a 2025-era client (SDK v1, notifications/cancelled)', () => {
    const cancelledSoFar = async (client: Client) =>
      Number(textOf(await client.callTool({ name: 'slow', arguments: { cancelled: true } })))

    it("aborts the function's context.signal, and the client is told at once", async () => {
      const client = await connectV1(url)
      try {
        const before = await cancelledSoFar(client)
        const abort = new AbortController()
        // Aborted once the call has run long enough to send its first heartbeat.
        const call = client.callTool({ name: 'slow', arguments: { seconds: 30 } }, undefined, {
          signal: abort.signal,
          onprogress: () => abort.abort(),
        })
        await expect(call).rejects.toThrow()
        await vi.waitFor(async () => expect(await cancelledSoFar(client)).toBe(before + 1), { timeout: 10_000 })
      } finally {
        await client.close()
      }
    }, 30_000)

    it("never cancels another session's call that has the same request id", async () => {
      const owner = await connectV1(url)
      const other = await connectV1(url)
      try {
        const before = await cancelledSoFar(owner)
        let started!: () => void
        const running = new Promise<void>((resolve) => (started = resolve))
        const call = owner.callTool({ name: 'slow', arguments: { seconds: 4 } }, undefined, {
          onprogress: () => started(),
        })
        await running
        // Request ids are the session's own: the other client names every id the owner may have used.
        for (let requestId = 0; requestId < 10; requestId++)
          await other.notification({ method: 'notifications/cancelled', params: { requestId, reason: 'not yours' } })
        expect(textOf(await call)).toBe('answered after 4 s')
        expect(await cancelledSoFar(owner)).toBe(before)
      } finally {
        await owner.close()
        await other.close()
      }
    }, 30_000)
  })

  describe('resumption with Last-Event-ID', () => {
    const ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

    /** Posts a JSON-RPC message in `session`, as a 2025-era client does; its response is the caller's to read. */
    const postIn = (session: string, message: object) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { ...ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', ...message }),
      })

    /** Calls the slow tool in `session` for `seconds`, as request `id`. */
    const callSlow = (session: string, id: number, seconds: number) =>
      postIn(session, { id, method: 'tools/call', params: { name: 'slow', arguments: { seconds } } })

    /** Asks for `session`'s stream again from after the event `lastEventId`. */
    const resumeIn = (session: string, lastEventId: string) =>
      fetch(`${url}/mcp`, {
        method: 'GET',
        headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'last-event-id': lastEventId },
      })

    async function initialize(): Promise<string> {
      const response = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: ACCEPT,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      })
      await response.text()
      const session = response.headers.get('mcp-session-id')!
      await postIn(session, { method: 'notifications/initialized' }).then((r) => r.text())
      return session
    }

    /** Reads SSE events from a response until `until` says stop, then drops the connection. */
    async function readEvents(response: Response, until: (event: EventSourceMessage) => boolean) {
      const events: EventSourceMessage[] = []
      let done = false
      const parser = createParser({
        onEvent: (event) => {
          events.push(event)
          if (until(event)) done = true
        },
      })
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      while (!done) {
        const { value, done: ended } = await reader.read()
        if (ended) break
        parser.feed(value)
      }
      await reader.cancel().catch(() => {})
      return events
    }

    it('sends the answer of a call whose stream dropped on a GET that names the last event seen', async () => {
      const session = await initialize()
      const post = await callSlow(session, 7, 3)
      // The priming event: an id and empty data, with the retry a client waits before reconnecting.
      const [priming] = await readEvents(post, () => true)
      expect(priming).toMatchObject({ data: '' })
      expect(priming!.id).toMatch(/^\d+$/)

      // As a client does after `retry`: until the server has seen the old connection go, it says 409.
      const resume = () => resumeIn(session, priming!.id!)
      let resumed = await resume()
      while (resumed.status === 409) {
        await resumed.text()
        await new Promise((resolve) => setTimeout(resolve, 100))
        resumed = await resume()
      }
      expect(resumed.status).toBe(200)
      const events = await readEvents(resumed, (event) => event.data.includes('"id":7'))
      const answer = JSON.parse(events.at(-1)!.data)
      expect(answer).toMatchObject({ id: 7, result: { content: [{ type: 'text', text: 'answered after 3 s' }] } })
    }, 30_000)

    it("refuses an event id of another session's stream, and one it never sent", async () => {
      const mine = await initialize()
      const theirs = await initialize()
      const post = await callSlow(theirs, 1, 0)
      const [theirPriming] = await readEvents(post, () => true)
      for (const lastEventId of [theirPriming!.id!, '999999999', 'not-an-id']) {
        const refused = await resumeIn(mine, lastEventId)
        expect(refused.status).toBe(400)
        await refused.text()
      }
    }, 30_000)

    it('answers GET without a session this replica holds with 405, as a stateless endpoint', async () => {
      const response = await fetch(`${url}/mcp`, {
        method: 'GET',
        headers: { accept: 'text/event-stream', 'mcp-session-id': 'gone' },
      })
      expect(response.status).toBe(405)
      await response.text()
    })
  })
})

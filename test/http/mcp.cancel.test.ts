/**
 * A client that cancels an MCP call (a closed HTTP stream in either era;
 * notifications/cancelled in a 2025-era session or on stdio) stops the
 * gateway waiting and aborts the function through its context's signal, in
 * process and in a worker thread; the function here counts the cancellations
 * it saw. The clients are the official SDK clients as they come (v1, v2 with
 * its default negotiation, v2 pinned to 2026-07-28) and the Python `mcp`
 * client in both eras.
 */
import { fileURLToPath } from 'node:url'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { type Runtime, startRuntime } from '../../bridge/runtime.ts'
import { TRUSTGRAPH_VENV } from '../support/trustgraph.ts'

const PYTHON = join(TRUSTGRAPH_VENV, 'bin/python')
const PYTHON_CANCEL = fileURLToPath(new URL('../interop/mcp_cancel.py', import.meta.url))
const pythonMcp = await new Promise<boolean>((resolve) =>
  execFile(PYTHON, ['-c', 'from mcp import Client'], (err) => resolve(err === null)),
)
if (!pythonMcp)
  console.log(
    `skipping the Python mcp client's cancellation: no \`mcp\` in ${TRUSTGRAPH_VENV} (scripts/trustgraph-venv.sh)`,
  )

const YML = fileURLToPath(new URL('../fixtures/mcp-tools/serverless.yml', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

interface Caller {
  callTool(params: { name: string; arguments: Record<string, unknown> }, ...rest: unknown[]): Promise<unknown>
}

const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0]!.text

/** How many cancellations the function has seen, asked until it reaches `expected` (or 10 s pass). */
async function cancellationsSeen(client: Caller, expected: number): Promise<number> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const seen = Number(textOf(await client.callTool({ name: 'wait', arguments: { count: true } })))
    if (seen >= expected || Date.now() > deadline) return seen
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Starts a call to `wait`, cancels it once it runs, and says how long the client waited in all. */
async function cancelOne(call: (signal: AbortSignal) => Promise<unknown>): Promise<number> {
  const abort = new AbortController()
  const started = performance.now()
  const pending = call(abort.signal).then(
    () => 'answered',
    (err: unknown) => err,
  )
  setTimeout(() => abort.abort(), 300)
  expect(await pending).toBeInstanceOf(Error)
  return performance.now() - started
}

/** Cancels one call as `cancelOne` does, and sees the function count exactly that one; says how long the client waited. */
async function cancelledOnce(client: Caller, call: (signal: AbortSignal) => Promise<unknown>): Promise<number> {
  const before = await cancellationsSeen(client, 0)
  const waited = await cancelOne(call)
  expect(await cancellationsSeen(client, before + 1)).toBe(before + 1)
  return waited
}

/** Clients connected by a test, closed after it. */
function closedAfterEach() {
  const open: { close(): Promise<void> }[] = []
  afterEach(async () => {
    for (const client of open.splice(0)) await client.close()
  })
  return async <T, C extends { connect(transport: T): Promise<void>; close(): Promise<void> }>(
    client: C,
    transport: T,
  ): Promise<C> => {
    await client.connect(transport)
    open.push(client)
    return client
  }
}

for (const invoker of ['in-process', 'worker-threads'] as const) {
  describe(`cancelling an MCP call aborts the function (${invoker})`, () => {
    let runtime: Runtime
    let url: URL
    beforeAll(async () => {
      runtime = await startRuntime(loadProject(YML), resolveSettings({ port: '0', invoker }, {}))
      url = new URL(`${runtime.gateway!.url}/mcp`)
    })
    afterAll(() => runtime?.stop())
    const connected = closedAfterEach()

    it('from the v2 client at 2026-07-28 (the request stream closed)', async () => {
      const client = await connected(
        new Client({ name: 'cancel-v2', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } }),
        new StreamableHTTPClientTransport(url),
      )
      const waited = await cancelledOnce(client, (signal) =>
        client.callTool({ name: 'wait', arguments: {} }, { signal }),
      )
      expect(waited).toBeLessThan(5_000) // the function would have answered after 10 s
      // The gateway holds nothing for it any more.
      expect(runtime.gateway!.inFlight).toBe(0)
    })

    it('from the v1 client as it comes (notifications/cancelled in its 2025-era session)', async () => {
      const client = await connected(new ClientV1({ name: 'cancel-v1', version: '1' }), new HttpV1(url))
      await cancelledOnce(client, (signal) => client.callTool({ name: 'wait', arguments: {} }, undefined, { signal }))
    })

    it('from the v2 client as it comes (its default negotiation)', async () => {
      const client = await connected(
        new Client({ name: 'cancel-v2-default', version: '1' }),
        new StreamableHTTPClientTransport(url),
      )
      await cancelledOnce(client, (signal) => client.callTool({ name: 'wait', arguments: {} }, { signal }))
    })

    for (const mode of ['legacy', '2026-07-28'])
      it.skipIf(!pythonMcp)(
        `from the Python mcp client (mode ${mode}), cancelling the task that awaits the call`,
        async () => {
          const printed = await new Promise<string>((resolve, reject) =>
            execFile(PYTHON, [PYTHON_CANCEL, url.href, mode], { timeout: 60_000 }, (err, stdout, stderr) =>
              err ? reject(new Error(`${err.message}: ${stderr.slice(-2000)}`)) : resolve(stdout),
            ),
          )
          const [before, after] = printed.trim().split(' ').map(Number)
          expect(after).toBe(before! + 1)
        },
        60_000,
      )

    it('from a 2025-era request whose stream the client closes', async () => {
      const client = await connected(new ClientV1({ name: 'cancel-v1', version: '1' }), new HttpV1(url))
      await cancelledOnce(client, (signal) =>
        fetch(url, {
          method: 'POST',
          signal,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-11-25',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'wait', arguments: {} },
          }),
        }).then((res) => res.text()),
      )
    })
  })
}

describe('cancelling a call to toolbridge mcp (stdio) aborts the function', () => {
  it('sends notifications/cancelled, which reaches the function in its worker thread', async () => {
    const client = new Client({ name: 'cancel-stdio', version: '1' })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['bridge/cli/main.ts', '-c', YML, 'mcp'],
        cwd: ROOT,
        env: Object.fromEntries(
          Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')),
        ) as Record<string, string>,
        stderr: 'pipe',
      }),
    )
    try {
      await cancelOne((signal) => client.callTool({ name: 'wait', arguments: {} }, { signal }))
      expect(await cancellationsSeen(client, 1)).toBe(1)
    } finally {
      await client.close()
    }
  })
})

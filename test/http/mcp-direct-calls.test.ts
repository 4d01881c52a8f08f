/**
 * The direct lane for stateless 2026-07-28 tool calls answers exactly as the
 * SDK does, and takes nothing it cannot check to the letter. Each request is
 * sent twice with an envelope (clientInfo) of its own: the first goes to the
 * SDK, which has not seen the envelope yet; the second goes to the lane when
 * the lane takes it. Status, content type and body must be the same to the
 * byte, and the gateway's metrics say which path answered.
 */
import { fileURLToPath } from 'node:url'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { describe, expect, it } from 'vitest'
import { DirectCalls, MAX_KNOWN_ENVELOPES } from '../../bridge/http/mcp-direct-calls.ts'
import type { McpToolSet } from '../../bridge/http/mcp-tools.ts'
import { TASKS_EXTENSION } from '../../bridge/http/mcp-tasks.ts'
import type { ToolCaller } from '../../bridge/trustgraph/tool-caller.ts'
import { mcpServedInProcess } from '../support/in-process-runtime.ts'
import { MODERN, modernHeaders } from '../support/mcp-modern-post.ts'

const TOOLS_YML = fileURLToPath(new URL('../fixtures/mcp-tools/serverless.yml', import.meta.url))
const SCENARIOS_YML = fileURLToPath(new URL('../fixtures/mcp-conformance/serverless.yml', import.meta.url))

let clients = 0
/** An envelope no request has carried before. */
const freshMeta = (extra: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: `direct-${++clients}`, version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
  ...extra,
})

interface Sent {
  headers?: Record<string, string>
  body: Record<string, unknown>
}

/** A tools/call of `name` as a 2026-07-28 client sends it, with a fresh envelope; `change` edits it. */
function toolCall(name: string, args: unknown, change: (sent: Sent) => void = () => {}): Sent {
  const sent: Sent = {
    headers: modernHeaders('tools/call', name),
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: freshMeta() } },
  }
  change(sent)
  return sent
}

interface Answer {
  status: number
  type: string | null
  body: string
}

async function post(url: string, sent: Sent): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers: sent.headers, body: JSON.stringify(sent.body) })
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() }
}

/** How many tools/call the lane answered, read from /metrics. */
async function directAnswered(url: string): Promise<number> {
  const text = await (await fetch(url.replace(/\/mcp$/, '/metrics'))).text()
  return Number(/^toolbridge_mcp_tool_calls_total\{path="direct"\} (\d+)$/m.exec(text)?.[1] ?? 0)
}

/** Sends `sent` twice; both answers, and whether the lane answered the second. */
async function twice(url: string, sent: Sent): Promise<{ first: Answer; second: Answer; direct: boolean }> {
  const first = await post(url, sent)
  const before = await directAnswered(url)
  const second = await post(url, sent)
  return { first, second, direct: (await directAnswered(url)) === before + 1 }
}

const deep = (levels: number): unknown => (levels === 0 ? 'bottom' : { down: deep(levels - 1) })
const meta = (sent: Sent) => (sent.body.params as { _meta: Record<string, unknown> })._meta

describe('the direct lane answers as the SDK does', () => {
  const tools = mcpServedInProcess(TOOLS_YML)
  const scenarios = mcpServedInProcess(SCENARIOS_YML)

  it.each([
    ['a result with structured content', () => toolCall('place', { city: 'Lisbon', population: 545_000 })],
    ['an answer its output schema refuses', () => toolCall('place', { city: 'Lisbon', population: -1 })],
    ['a text result', () => toolCall('place-text', { city: 'Porto' })],
    ['arguments the tool does not declare', () => toolCall('place-text', { city: 'Porto', river: 'Douro' })],
    ['no arguments', () => toolCall('place-text', undefined)],
    ['a string id', () => toolCall('place-text', { city: 'Faro' }, (s) => void (s.body.id = 'call-7'))],
    [
      "a traced client's context",
      () =>
        toolCall('place-text', { city: 'Braga' }, (s) => {
          meta(s).traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
        }),
    ],
  ])('%s', async (_, make) => {
    const { first, second, direct } = await twice(tools.url, make())
    expect(second).toStrictEqual(first)
    expect(first.status).toBe(200)
    expect(direct).toBe(true)
  })

  it('arguments nested too deep: a JSON-RPC error, as from the SDK', async () => {
    const sent = toolCall('place-text', { city: 'Porto', below: deep(150) })
    const { first, second, direct } = await twice(tools.url, sent)
    expect(second).toStrictEqual(first)
    expect(JSON.parse(first.body).error.code).toBe(-32602)
    expect(direct).toBe(true)
  })

  it('a function that throws: an error result', async () => {
    const { first, second, direct } = await twice(scenarios.url, toolCall('test_error_handling', {}))
    expect(second).toStrictEqual(first)
    expect(JSON.parse(first.body).result.isError).toBe(true)
    expect(direct).toBe(true)
  })
})

describe('the direct lane leaves to the SDK what it cannot check to the letter', () => {
  const tools = mcpServedInProcess(TOOLS_YML)
  const call = (change: (sent: Sent) => void) => () => toolCall('place-text', { city: 'Evora' }, change)
  const header = (name: string, value: string | undefined) => (s: Sent) => {
    if (value === undefined) delete s.headers![name]
    else s.headers![name] = value
  }

  it.each([
    ['a progress token', call((s) => void (meta(s).progressToken = 'p1'))],
    ['a log level', call((s) => void (meta(s)['io.modelcontextprotocol/logLevel'] = 'debug'))],
    [
      'a client that declares Tasks',
      call(
        (s) => void (meta(s)['io.modelcontextprotocol/clientCapabilities'] = { extensions: { [TASKS_EXTENSION]: {} } }),
      ),
    ],
    ['an envelope the SDK refuses', call((s) => void (meta(s)['io.modelcontextprotocol/clientInfo'] = 5))],
    ['a trace context that is not text', call((s) => void (meta(s).traceparent = 7))],
    ['no Mcp-Name header', call(header('mcp-name', undefined))],
    ['an Mcp-Name header naming another tool', call(header('mcp-name', 'place'))],
    ['no MCP-Protocol-Version header', call(header('mcp-protocol-version', undefined))],
    ['an Accept without event streams', call(header('accept', 'application/json'))],
    ['a session header', call(header('mcp-session-id', 'not-a-session'))],
    ['a key the revision does not define', call((s) => void (s.body.extra = true))],
    ['a task request', call((s) => void ((s.body.params as Record<string, unknown>).task = { ttl: 1000 }))],
    ['an id that is not an integer', call((s) => void (s.body.id = 1.5))],
    ['arguments that are a list', call((s) => void ((s.body.params as Record<string, unknown>).arguments = []))],
    ['a tool not served', () => toolCall('nowhere', {})],
  ])('%s', async (_, make) => {
    const { first, second, direct } = await twice(tools.url, make())
    expect(direct).toBe(false)
    expect(second.status).toBe(first.status)
  })

  it('the official client pinned to 2026-07-28 has its calls answered by the lane after its first', async () => {
    const client = new Client({ name: 'direct-sdk', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } })
    await client.connect(new StreamableHTTPClientTransport(new URL(tools.url)))
    try {
      const before = await directAnswered(tools.url)
      const results = []
      for (let n = 0; n < 5; n++) results.push(await client.callTool({ name: 'place', arguments: { city: `c${n}` } }))
      expect(results.map((r) => r.structuredContent)).toStrictEqual([0, 1, 2, 3, 4].map((n) => ({ city: `c${n}` })))
      expect(await directAnswered(tools.url)).toBe(before + 4)
    } finally {
      await client.close()
    }
  })
})

describe('the envelopes the lane knows', () => {
  const caller = { tools: new Map([['t', {}]]) } as unknown as ToolCaller
  const headers = modernHeaders('tools/call', 't')
  const message = (n: number) => ({
    jsonrpc: '2.0',
    id: n,
    method: 'tools/call',
    params: {
      name: 't',
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: `c${n}`, version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  })

  it('are the ones the SDK answered with 200, at most MAX_KNOWN_ENVELOPES, the oldest forgotten first', () => {
    const lane = new DirectCalls(caller, {} as McpToolSet)
    const learn = (n: number, status = 200) => {
      const verdict = lane.judge(headers, message(n))
      if (verdict === undefined || !('envelope' in verdict)) throw new Error(`expected an envelope to learn for ${n}`)
      lane.learn(verdict.envelope, status)
    }
    learn(0, 400)
    expect(lane.judge(headers, message(0))).toHaveProperty('envelope')
    for (let n = 0; n <= MAX_KNOWN_ENVELOPES; n++) learn(n)
    expect(lane.judge(headers, message(1))).toHaveProperty('call')
    expect(lane.judge(headers, message(MAX_KNOWN_ENVELOPES))).toHaveProperty('call')
    expect(lane.judge(headers, message(0))).toHaveProperty('envelope')
  })
})

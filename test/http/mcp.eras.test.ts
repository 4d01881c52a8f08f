/**
 * Both MCP eras on one endpoint (bridge/http/mcp.ts): the SDK's v2 client at
 * 2026-07-28 (server/discover, no initialize) and its v1 client at the 2025
 * revisions, on /mcp and on stdio; and the 2026-07-28 wire itself, byte by
 * byte, as any client in any language sends it.
 */
import { fileURLToPath } from 'node:url'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadProject } from '../../bridge/project/project.ts'
import type { Runtime } from '../../bridge/runtime.ts'
import { startInProcess } from '../support/in-process-runtime.ts'
import { stdioBridge } from '../support/mcp-stdio.ts'

const MODERN = '2026-07-28'

const textOf = (result: unknown) =>
  (result as { content: { type: string; text?: string }[] }).content.map((c) => c.text ?? '').join('')

/** The per-request envelope of 2026-07-28, as in every request's `_meta`. */
const envelope = (version = MODERN) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-http', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
})

interface Answer {
  status: number
  headers: Headers
  body: { jsonrpc: string; id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } }
}

async function post(url: string, message: unknown, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(message),
  })
  const text = await res.text()
  // A result is one JSON body, or (after notifications) the last event of an SSE stream.
  const data = text.startsWith('{') ? text : [...text.matchAll(/^data: (.*)$/gm)].at(-1)![1]!
  return { status: res.status, headers: res.headers, body: JSON.parse(data) }
}

/** A 2026-07-28 request with the headers the revision requires. */
const modern = (url: string, id: number, method: string, params: Record<string, unknown> = {}, headers = {}) =>
  post(
    url,
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope() } },
    {
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
      ...headers,
    },
  )

describe('/mcp serves both eras, chosen per request', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess('serverless.yml')
    url = `${runtime.gateway!.url}/mcp`
  })
  afterAll(() => runtime?.stop())

  it('serves the v2 client at 2026-07-28: discovered without initialize, tools listed and called, chunks as progress', async () => {
    const client = new Client({ name: 'eras-test', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
      expect(client.getServerVersion()).toMatchObject({ name: 'toolbridge' })
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(['tell-joke', 'calculate', 'tell-story'])
      expect(textOf(await client.callTool({ name: 'calculate', arguments: { expression: '6*7' } }))).toBe('42')
      const progress: string[] = []
      const story = await client.callTool(
        { name: 'tell-story', arguments: { hero: 'Ada', sentences: 2 } },
        {
          onprogress: (p) => void progress.push(p.message ?? ''),
        },
      )
      expect(progress).toHaveLength(2)
      expect(progress.join('')).toBe(textOf(story))
      const unknown = await client.callTool({ name: 'no-such-tool', arguments: {} }).catch((err: unknown) => err)
      expect(unknown).toBeInstanceOf(ProtocolError)
      expect(unknown).toMatchObject({ code: -32602, message: expect.stringContaining('unknown tool "no-such-tool"') })
    } finally {
      await client.close()
    }
  })

  it('serves the v2 client in auto mode at 2026-07-28, and the v1 client at 2025-11-25, side by side', async () => {
    const auto = new Client({ name: 'eras-auto', version: '1' }, { versionNegotiation: { mode: 'auto' } })
    await auto.connect(new StreamableHTTPClientTransport(new URL(url)))
    const v1 = new ClientV1({ name: 'eras-v1', version: '1' })
    await v1.connect(new HttpV1(new URL(url)))
    try {
      expect(auto.getNegotiatedProtocolVersion()).toBe(MODERN)
      expect((v1.transport as HttpV1).protocolVersion).toBe('2025-11-25')
      const [a, b] = await Promise.all([
        auto.callTool({ name: 'calculate', arguments: { expression: '1+1' } }),
        v1.callTool({ name: 'calculate', arguments: { expression: '2+2' } }),
      ])
      expect([textOf(a), textOf(b)]).toEqual(['2', '4'])
    } finally {
      await auto.close()
      await v1.close()
    }
  })

  it('answers initialize at the 2025 revision the client asks for, and the latest 2025 one for 2026-07-28 (which has no initialize)', async () => {
    const initialize = (protocolVersion: string) =>
      post(
        url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        },
        {},
      )
    expect((await initialize('2025-06-18')).body.result).toMatchObject({ protocolVersion: '2025-06-18' })
    expect((await initialize('2025-11-25')).body.result).toMatchObject({ protocolVersion: '2025-11-25' })
    const answer = await initialize(MODERN)
    expect(answer.body.result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'toolbridge' } })
    // A 2025-era initialize opens an optional session (cancellation, resumption); nothing needs it.
    expect(answer.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('speaks the 2026-07-28 wire: server/discover, resultType on every result, server info in _meta', async () => {
    const discover = await modern(url, 1, 'server/discover')
    expect(discover.status).toBe(200)
    expect(discover.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: {
        supportedVersions: [MODERN],
        capabilities: { tools: {} },
        resultType: 'complete',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'toolbridge' } },
      },
    })
    const list = await modern(url, 2, 'tools/list')
    expect(list.body.result).toMatchObject({ resultType: 'complete' })
    expect((list.body.result!.tools as { name: string }[]).map((t) => t.name)).toContain('calculate')
    const call = await modern(url, 3, 'tools/call', { name: 'calculate', arguments: { expression: '2^8' } })
    expect(call.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: '256' }] })
    expect(call.headers.get('mcp-session-id')).toBeNull()
  })

  it('refuses 2026-07-28 requests whose headers are missing or disagree with the body (-32020, 400)', async () => {
    const args = { name: 'calculate', arguments: { expression: '1' } }
    const noName = await modern(url, 1, 'tools/call', args, { 'mcp-name': '' })
    expect(noName.status).toBe(400)
    expect(noName.body.error).toMatchObject({ code: -32020 })
    const otherName = await modern(url, 2, 'tools/call', args, { 'mcp-name': 'tell-joke' })
    expect({ status: otherName.status, code: otherName.body.error?.code }).toEqual({ status: 400, code: -32020 })
    const otherMethod = await modern(url, 3, 'tools/list', {}, { 'mcp-method': 'tools/call' })
    expect({ status: otherMethod.status, code: otherMethod.body.error?.code }).toEqual({ status: 400, code: -32020 })
    const otherVersion = await modern(url, 4, 'tools/list', {}, { 'mcp-protocol-version': '2025-11-25' })
    expect({ status: otherVersion.status, code: otherVersion.body.error?.code }).toEqual({ status: 400, code: -32020 })
  })

  it('names the supported versions to a client asking for one it does not serve (-32022), and refuses unknown methods (-32601)', async () => {
    const future = await post(
      url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('2099-01-01') } },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    )
    expect(future.status).toBe(400)
    expect(future.body.error).toMatchObject({
      code: -32022,
      data: {
        supported: [MODERN, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'],
        requested: '2099-01-01',
      },
    })
    const unknown = await modern(url, 2, 'no/such-method')
    expect(unknown.body.error).toMatchObject({ code: -32601 })
  })

  it('refuses a 2025 request with an MCP-Protocol-Version header it does not serve, with 400', async () => {
    const answer = await post(
      url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { 'mcp-protocol-version': '1999-01-01' },
    )
    expect(answer.status).toBe(400)
    expect(answer.body.error?.message).toMatch(/Unsupported protocol version: 1999-01-01/)
  })
})

describe('toolbridge mcp (stdio) serves both eras', () => {
  const spawn = () => new StdioClientTransport(stdioBridge())

  it('serves the v2 client at 2026-07-28', async () => {
    const client = new Client({ name: 'eras-stdio', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } })
    await client.connect(spawn())
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
      expect(textOf(await client.callTool({ name: 'calculate', arguments: { expression: '3*3' } }))).toBe('9')
    } finally {
      await client.close()
    }
  })

  it('serves the v2 client in its default, the 2025 handshake', async () => {
    const client = new Client({ name: 'eras-stdio-legacy', version: '1' })
    await client.connect(spawn())
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25')
      expect(textOf(await client.callTool({ name: 'calculate', arguments: { expression: '5-7' } }))).toBe('-2')
    } finally {
      await client.close()
    }
  })
})

describe('tools described fully from serverless.yml, in both eras', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess(fileURLToPath(new URL('../fixtures/mcp-tools/serverless.yml', import.meta.url)))
    url = `${runtime.gateway!.url}/mcp`
  })
  afterAll(() => runtime?.stop())

  const expectedPlace = {
    name: 'place',
    title: 'Place lookup',
    description: 'Answers with the place it is given, as JSON',
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    outputSchema: {
      type: 'object',
      properties: { city: { type: 'string' }, population: { type: 'integer', minimum: 0 } },
      required: ['city'],
    },
  }

  it('gives the v2 client at 2026-07-28 the title, hints and output schema, and structured content with the same JSON as text', async () => {
    const client = new Client({ name: 'tools-v2', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    try {
      const { tools } = await client.listTools()
      expect(tools[0]).toMatchObject(expectedPlace)
      expect(tools[1]).toMatchObject({
        name: 'place-text',
        annotations: { readOnlyHint: false, destructiveHint: true },
      })
      expect(tools[1]!.outputSchema).toBeUndefined()
      const result = await client.callTool({ name: 'place', arguments: { city: 'Oslo', population: 709000 } })
      expect(result.structuredContent).toEqual({ city: 'Oslo', population: 709000 })
      expect(JSON.parse(textOf(result))).toEqual({ city: 'Oslo', population: 709000 })
      const text = await client.callTool({ name: 'place-text', arguments: { city: 'Oslo' } })
      expect(text.structuredContent).toBeUndefined()
      expect(textOf(text)).toBe('{"city":"Oslo"}')
    } finally {
      await client.close()
    }
  })

  it('gives the v1 client at 2025-11-25 the same, and an error result for an answer the schema refuses', async () => {
    const client = new ClientV1({ name: 'tools-v1', version: '1' })
    await client.connect(new HttpV1(new URL(url)))
    try {
      const { tools } = await client.listTools()
      expect(tools[0]).toMatchObject(expectedPlace)
      const result = await client.callTool({ name: 'place', arguments: { city: 'Bergen' } })
      expect(result.structuredContent).toEqual({ city: 'Bergen' })
      expect(textOf(result)).toBe('{"city":"Bergen"}')
      const refused = await client.callTool({ name: 'place', arguments: { population: 3 } })
      expect(refused).toMatchObject({ isError: true })
      expect(textOf(refused)).toBe(
        "invalid-output: the answer does not match the tool's output schema: data must have required property 'city'",
      )
    } finally {
      await client.close()
    }
  })
})

describe('a gateway whose tools declare an output schema that does not compile', () => {
  it('refuses to start, naming the tool', async () => {
    const project = loadProject(fileURLToPath(new URL('../fixtures/mcp-tools/serverless.yml', import.meta.url)))
    const broken = {
      ...project,
      services: project.services.map((spec) => ({
        ...spec,
        tools: spec.tools.map((tool) => (tool.output ? { ...tool, output: { type: 'no-such-type' } } : tool)),
      })),
    }
    await expect(startInProcess(broken)).rejects.toThrow(/tool "place" output.*not a JSON Schema/)
  })
})

/**
 * The MCP server (bridge/http/mcp.ts), checked with the MCP SDK's own client:
 * `/mcp` on the gateway of `toolbridge start` (Streamable HTTP) and
 * `toolbridge mcp` (stdio). Every tool is listed with the schema of its
 * declared arguments and called through the broker and the bridge.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RequestClient, ToolCallError } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import type { Runtime } from '../../bridge/runtime.ts'
import { startInProcess } from '../support/in-process-runtime.ts'
import { cleanEnv } from '../support/clean-env.ts'
import { stdioBridge } from '../support/mcp-stdio.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'toolbridge-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return client
}

const textOf = (result: unknown) =>
  (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('')

describe('MCP over Streamable HTTP at /mcp, with the example tools', () => {
  const project = loadProject('serverless.yml')
  let runtime: Runtime
  let client: Client
  beforeAll(async () => {
    runtime = await startInProcess(project)
    client = await connect(`${runtime.gateway!.url}/mcp`)
  })
  afterAll(async () => {
    await client?.close()
    await runtime?.stop()
  })

  it('lists every tool with an inputSchema built from its declared arguments', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['tell-joke', 'calculate', 'tell-story'])
    const story = tools.find((t) => t.name === 'tell-story')!
    expect(story.description).toBe('Tell a short story about a hero, streamed sentence by sentence')
    expect(story.inputSchema).toEqual({
      type: 'object',
      properties: {
        hero: { type: 'string', description: 'Who the story is about' },
        place: { type: 'string', description: 'Where it happens' },
        sentences: { type: 'integer', description: 'How many sentences (1-100, default 5)' },
      },
      required: ['hero'],
    })
    expect(tools.find((t) => t.name === 'calculate')).toMatchObject({
      title: 'Calculator',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    })
    expect(tools.find((t) => t.name === 'tell-joke')!.inputSchema).toEqual({
      type: 'object',
      properties: { topic: { type: 'string', description: 'The topic for the joke' } },
      required: ['topic'],
    })
  })

  it('lists what `descriptors --mcp-url` promises: each mcp entry names a tool whose schema has the mcp-tool arguments', async () => {
    const printed = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['bridge/cli/main.ts', 'descriptors', '--mcp-url', `${runtime.gateway!.url}/mcp`],
        { cwd: ROOT, env: cleanEnv() },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    )
    const { mcp, tool } = JSON.parse(printed) as {
      mcp: Record<string, { 'remote-name': string; url: string }>
      tool: Record<
        string,
        {
          type: string
          name: string
          'mcp-tool'?: string
          arguments: { name: string; type: string; description: string }[]
        }
      >
    }
    const listed = new Map((await client.listTools()).tools.map((t) => [t.name, t]))
    const mcpTools = Object.values(tool).filter((t) => t.type === 'mcp-tool')
    expect(mcpTools.map((t) => t.name)).toEqual(['tell-joke-mcp', 'calculate-mcp', 'tell-story-mcp'])
    for (const descriptor of mcpTools) {
      const entry = mcp[descriptor['mcp-tool']!]!
      expect(entry.url).toBe(`${runtime.gateway!.url}/mcp`)
      const schema = listed.get(entry['remote-name'])!.inputSchema as {
        properties: Record<string, { type: string; description: string }>
      }
      expect(descriptor.arguments).toEqual(
        Object.entries(schema.properties).map(([name, p]) => ({ name, type: p.type, description: p.description })),
      )
    }
  })

  it('calls tell-joke with the config value its declaration fixes', async () => {
    const result = await client.callTool({ name: 'tell-joke', arguments: { topic: 'cats' } })
    expect(result.isError).toBeFalsy()
    expect(textOf(result)).toBe("Hey there! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.")
  })

  it('calls calculate', async () => {
    expect(textOf(await client.callTool({ name: 'calculate', arguments: { expression: '(1/3 + 0.25) * 12' } }))).toBe(
      '7',
    )
  })

  it('joins the chunks of the streaming tell-story, and sends each as a progress notification when asked', async () => {
    const progress: string[] = []
    const result = await client.callTool({ name: 'tell-story', arguments: { hero: 'Ada', sentences: 3 } }, undefined, {
      onprogress: (p) => void progress.push(p.message ?? ''),
    })
    const story =
      'Once upon a time, Ada lived in a small town by the sea. ' +
      'Every morning, Ada looked at the horizon and wondered what lay beyond it. ' +
      'One day a stranger arrived with a map that nobody in a small town by the sea could read.'
    expect(textOf(result)).toBe(story)
    expect(progress.join('')).toBe(story)
    expect(progress.length).toBe(3)
  })

  it('answers an argument of the wrong type with the error the bridge itself gives', async () => {
    const result = await client.callTool({ name: 'tell-story', arguments: { hero: 'Ada', sentences: 'many' } })
    expect(result.isError).toBe(true)
    // The same request straight on the queue, past the MCP server's own check.
    const story = project.services.find((s) => s.id === 'story-service')!
    const direct = new RequestClient(await runtime.connectClient(), story)
    await direct.start()
    const error = await direct
      .call({ config: { pace: 20 }, arguments: { hero: 'Ada', sentences: 'many' } })
      .catch((e: unknown) => e)
    await direct.close()
    expect(error).toBeInstanceOf(ToolCallError)
    expect(textOf(result)).toBe(`invalid-arguments: ${(error as ToolCallError).message}`)
    expect(textOf(result)).toBe(
      'invalid-arguments: invalid arguments: "sentences" must be an integer, got the string "many"',
    )
  })

  it('answers a missing required argument as a tool error the model can read', async () => {
    const result = await client.callTool({ name: 'tell-joke', arguments: {} })
    expect(result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'invalid-arguments: invalid arguments: "topic" is required' }],
    })
  })

  it('refuses an unknown tool with an MCP invalid-params error', async () => {
    await expect(client.callTool({ name: 'no-such-tool', arguments: {} })).rejects.toThrow(
      /unknown tool "no-such-tool"/,
    )
  })

  it('answers GET with 405: the endpoint is stateless', async () => {
    const res = await fetch(`${runtime.gateway!.url}/mcp`, { headers: { accept: 'text/event-stream' } })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST')
  })
})

describe('MCP with tools that take no arguments and tools that fail', () => {
  let runtime: Runtime
  let client: Client
  beforeAll(async () => {
    runtime = await startInProcess('test/fixtures/faults/serverless.yml')
    client = await connect(`${runtime.gateway!.url}/mcp`)
  })
  afterAll(async () => {
    await client?.close()
    await runtime?.stop()
  })

  it('lists a tool without arguments with an empty object schema, and calls it', async () => {
    const count = (await client.listTools()).tools.find((t) => t.name === 'count')!
    expect(count.inputSchema).toEqual({ type: 'object', properties: {} })
    expect(textOf(await client.callTool({ name: 'count' }))).toBe('1')
    expect(textOf(await client.callTool({ name: 'count', arguments: {} }))).toBe('2')
  })

  it("answers a function that throws with isError and the service's error", async () => {
    const result = await client.callTool({ name: 'throw', arguments: {} })
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'tool-service-error: boom' }] })
  })
})

describe('MCP with a bearer token', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess('serverless.yml', { mcpToken: 's3cret' })
    url = `${runtime.gateway!.url}/mcp`
  })
  afterAll(async () => {
    await runtime?.stop()
  })

  it('answers 401 without the token or with a wrong one', async () => {
    for (const authorization of [undefined, 'Bearer wrong', 's3cret']) {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
    }
    await expect(connect(url)).rejects.toThrow()
  })

  it('serves a client that sends it', async () => {
    const client = await connect(url, { authorization: 'Bearer s3cret' })
    try {
      expect(textOf(await client.callTool({ name: 'tell-joke', arguments: { topic: 'music' } }))).toContain('piano')
    } finally {
      await client.close()
    }
  })

  it('leaves the rest of the gateway as it was', async () => {
    expect((await fetch(`${runtime.gateway!.url}/tools`)).status).toBe(200)
  })
})

describe('toolbridge mcp (stdio)', () => {
  let client: Client
  beforeAll(async () => {
    client = new Client({ name: 'toolbridge-test', version: '1' })
    await client.connect(new StdioClientTransport(stdioBridge()))
  })
  afterAll(async () => {
    await client?.close()
  })

  it('lists the tools and calls each example, the streamed one joined', async () => {
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tell-joke', 'calculate', 'tell-story'])
    expect(textOf(await client.callTool({ name: 'tell-joke', arguments: { topic: 'programming' } }))).toBe(
      "Hey there! Here's a pun for you:\n\nI told my computer a joke about UDP. I am not sure it got it.",
    )
    expect(textOf(await client.callTool({ name: 'calculate', arguments: { expression: '2^10' } }))).toBe('1024')
    expect(textOf(await client.callTool({ name: 'tell-story', arguments: { hero: 'Bo', sentences: 2 } }))).toBe(
      'Once upon a time, Bo lived in a small town by the sea. Every morning, Bo looked at the horizon and wondered what lay beyond it.',
    )
  })
})

/**
 * Self-registration with TrustGraph itself, on RabbitMQ and Pulsar: `toolbridge
 * register`, `unregister` and `start --register` against TrustGraph's own
 * configuration service (trustgraph-flow config-svc, its Cassandra table
 * store swapped for one in memory: see test/interop/tg_config_service.py),
 * read back with TrustGraph's own config client, loaded by TrustGraph's
 * own agent code, and (on RabbitMQ) called by TrustGraph's client on the
 * queues the agent loaded. Needs scripts/trustgraph-venv.sh and
 * rabbitmq-server or a Pulsar (scripts/pulsar.sh); .ci/run provides them.
 */
import type { ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigClient } from '../../bridge/trustgraph/config-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { register } from '../../bridge/trustgraph/registration.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { PULSAR_INSTALL, pulsarRunnable, startPulsar } from '../support/pulsar.ts'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq } from '../support/rabbitmq.ts'
import { StartedBridge } from '../support/started-bridge.ts'
import { TRUSTGRAPH_INSTALL, trustgraphClientCalls, trustgraphInstalled } from '../support/trustgraph.ts'
import {
  agentTools as agentToolsOn,
  startTrustgraphConfigService,
  stopChild,
  trustgraphConfig as trustgraphConfigOn,
  type TgBackend,
} from '../support/trustgraph-config.ts'
import { TELL_JOKE_TOOL } from '../support/example-descriptors.ts'
import { runToolbridge } from '../support/toolbridge-cli.ts'

if (!trustgraphInstalled())
  console.log(`skipping registration interop tests: needs TrustGraph's packages (${TRUSTGRAPH_INSTALL})`)
const BACKENDS: {
  name: string
  backend: TgBackend
  ready: boolean
  start: () => Promise<{ url: string; stop(): Promise<void> }>
}[] = [
  { name: 'RabbitMQ', backend: 'rabbitmq', ready: trustgraphInstalled() && rabbitmqInstalled(), start: startRabbitmq },
  { name: 'Pulsar', backend: 'pulsar', ready: trustgraphInstalled() && pulsarRunnable(), start: startPulsar },
]
for (const b of BACKENDS) {
  if (trustgraphInstalled() && !b.ready)
    console.log(
      `skipping registration interop tests on ${b.name}: needs ${b.backend === 'rabbitmq' ? RABBITMQ_INSTALL : PULSAR_INSTALL}`,
    )
}

const toolbridge = (...args: string[]) => runToolbridge(args, 60_000)

describe.each(BACKENDS)("registering with TrustGraph's configuration service on $name", ({ backend, ready, start }) => {
  let broker: { url: string; stop(): Promise<void> }
  let configService: ChildProcess
  const trustgraphConfig = (commands: Parameters<typeof trustgraphConfigOn>[0]) => trustgraphConfigOn(commands, backend)
  const agentTools = () => agentToolsOn(backend)
  /** The register and unregister flags of the MCP workspace: this broker, and the bridge's /mcp. */
  const mcpWorkspace = () => [
    '--broker',
    broker.url,
    '--workspace',
    'interop-mcp',
    '--mcp-url',
    'http://toolbridge:8080/mcp',
  ]
  beforeAll(async () => {
    if (!ready) return
    broker = await start()
    configService = await startTrustgraphConfigService(backend)
  })
  afterAll(async () => {
    await stopChild(configService)
    await broker?.stop()
  })

  it.skipIf(!ready)(
    "toolbridge register puts the descriptors; TrustGraph's config client reads them back",
    async () => {
      const run = await toolbridge('register', '--broker', broker.url, '--workspace', 'interop', '--timeout', '20')
      expect(run).toMatchObject({ code: 0, stderr: '' })
      expect(run.stdout).toContain('registered 6 config items in workspace "interop"')
      const [tellJoke, tools, services] = await trustgraphConfig([
        { op: 'get', workspace: 'interop', type: 'tool', key: 'tell-joke' },
        { op: 'list', workspace: 'interop', type: 'tool' },
        { op: 'list', workspace: 'interop', type: 'tool-service' },
      ])
      expect(JSON.parse(tellJoke!.value as string)).toEqual(TELL_JOKE_TOOL)
      expect(tools).toEqual({ keys: ['calculate', 'tell-joke', 'tell-story'] })
      expect(services).toEqual({ keys: ['calculator-service', 'joke-service', 'story-service'] })
    },
  )

  it.skipIf(!ready)(
    "TrustGraph's agent loads every registered tool, with its queues, config values and arguments",
    async () => {
      const { workspaces, errors } = await agentTools()
      expect(errors).toEqual([])
      const tools = workspaces.interop!
      expect(Object.keys(tools).sort()).toEqual(['calculate', 'tell-joke', 'tell-story'])
      expect(tools['tell-story']).toEqual({
        description: 'Tell a short story about a hero, streamed sentence by sentence',
        arguments: [
          { name: 'hero', type: 'string', description: 'Who the story is about' },
          { name: 'place', type: 'string', description: 'Where it happens' },
          { name: 'sentences', type: 'integer', description: 'How many sentences (1-100, default 5)' },
        ],
        implementation: 'ToolServiceImpl',
        settings: {
          request_queue: 'request:tg:story',
          response_queue: 'response:tg:story',
          config_values: { pace: 20 },
        },
      })
    },
  )

  it.skipIf(!ready)(
    '--mcp-url adds mcp entries and mcp-tool tools that the agent loads as MCP tools with their arguments',
    async () => {
      const run = await toolbridge('register', ...mcpWorkspace(), '--mcp-token', 't0k', '--timeout', '20')
      expect(run.code).toBe(0)
      const [mcp] = await trustgraphConfig([{ op: 'get', workspace: 'interop-mcp', type: 'mcp', key: 'calculate' }])
      expect(JSON.parse(mcp!.value as string)).toEqual({
        'remote-name': 'calculate',
        url: 'http://toolbridge:8080/mcp',
        'auth-token': 't0k',
      })
      const { workspaces, errors } = await agentTools()
      expect(errors).toEqual([])
      expect(workspaces['interop-mcp']!['calculate-mcp']).toEqual({
        description: expect.stringContaining('Evaluate an arithmetic expression'),
        arguments: [
          { name: 'expression', type: 'string', description: 'The expression, for example (1/3 + 0.25) * 12' },
        ],
        implementation: 'McpToolImpl',
        settings: { mcp_tool_id: 'calculate' },
      })
    },
  )

  it.skipIf(!ready)('toolbridge unregister deletes them again', async () => {
    const run = await toolbridge('unregister', ...mcpWorkspace(), '--timeout', '20')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain('deleted 12 config items from workspace "interop-mcp"')
    const results = await trustgraphConfig(
      ['tool', 'tool-service', 'mcp'].map((type) => ({ op: 'list' as const, workspace: 'interop-mcp', type })),
    )
    expect(results).toEqual([{ keys: [] }, { keys: [] }, { keys: [] }])
  })

  it.skipIf(!ready)(
    "start --register announces the tools once its queues are bound; TrustGraph's agent loads them, and its client calls them there",
    async () => {
      const bridge = new StartedBridge([
        'start',
        '--broker',
        broker.url,
        '--register',
        '--workspace',
        'interop-start',
        '--invoker',
        'in-process',
      ])
      try {
        await bridge.printed(/registered 6 config items in workspace "interop-start"/)
        const { workspaces } = await agentTools()
        const joke = workspaces['interop-start']!['tell-joke']!
        const settings = joke.settings as {
          request_queue: string
          response_queue: string
          config_values: Record<string, unknown>
        }
        expect(settings).toEqual({
          request_queue: 'request:tg:joke',
          response_queue: 'response:tg:joke',
          config_values: { style: 'pun' },
        })
        if (backend !== 'rabbitmq') return // test/support/trustgraph.ts drives TrustGraph's client on RabbitMQ
        const [answer] = await trustgraphClientCalls(
          { requestQueue: settings.request_queue, responseQueue: settings.response_queue },
          [{ config: settings.config_values, arguments: { topic: 'cats' } }],
        )
        expect(answer).toEqual({
          response: "Hey there! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.",
          error: null,
          messages: 1,
        })
      } finally {
        await bridge.stop()
      }
    },
  )

  it.skipIf(!ready)("reports the configuration service's own refusal", async () => {
    // The CLI never sends an empty workspace; toolbridge's client does if asked, and TrustGraph's service refuses it.
    const transport = await createTransport(broker.url)
    await transport.connect()
    const client = new ConfigClient(transport, { timeoutMs: 20_000 })
    try {
      await client.start()
      await expect(register(client, loadProject('serverless.yml').services, { workspace: '' })).rejects.toThrow(
        'configuration service refused: bad-request: Workspace is required',
      )
    } finally {
      await client.close()
      await transport.close()
    }
  })
})

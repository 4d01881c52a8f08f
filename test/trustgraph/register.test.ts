/**
 * Self-registration on the embedded broker: `register` puts the
 * descriptors into the configuration service `toolbridge start` runs there,
 * they read back with `get`, `unregister` removes them, and a tool
 * TrustGraph's agent would refuse is refused before anything is sent.
 * Against TrustGraph's own configuration service and agent: register.interop.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigClient } from '../../bridge/trustgraph/config-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { register, registrationItems, unregister } from '../../bridge/trustgraph/registration.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { registerOn } from '../../bridge/cli/trustgraph-commands.ts'
import { agentToolRefusal, descriptors } from '../../bridge/project/descriptors.ts'
import { StartedBridge } from '../support/started-bridge.ts'
import { runToolbridge } from '../support/toolbridge-cli.ts'

const toolbridge = (...args: string[]) => runToolbridge(args, 30_000)

/** What `toolbridge <command> --dry-run --workspace team-a` prints, once it has exited 0 with nothing on stderr. */
async function dryRun<T>(command: 'register' | 'unregister'): Promise<{ operation: string; workspace: string } & T> {
  const run = await toolbridge(command, '--dry-run', '--workspace', 'team-a')
  expect(run).toMatchObject({ code: 0, stderr: '' })
  return JSON.parse(run.stdout)
}

const project = loadProject('serverless.yml')
const EXPECTED_KEYS = [
  'tool-service/joke-service',
  'tool-service/calculator-service',
  'tool-service/story-service',
  'tool/tell-joke',
  'tool/calculate',
  'tool/tell-story',
]

describe('the config items register sends', () => {
  it('are every tool-service and tool descriptor, values as their JSON text', () => {
    const items = registrationItems(project.services)
    expect(items.map((i) => `${i.type}/${i.key}`)).toEqual(EXPECTED_KEYS)
    const all = descriptors(project.services)
    for (const item of items) {
      const section = all[item.type as 'tool' | 'tool-service'] as Record<string, unknown>
      expect(JSON.parse(item.value!)).toEqual(section[item.key])
    }
  })

  it('add the mcp entries and mcp-tool tools with an MCP endpoint', () => {
    const items = registrationItems(project.services, { mcp: { url: 'http://toolbridge:8080/mcp', authToken: 't' } })
    expect(items.filter((i) => i.type === 'mcp').map((i) => i.key)).toEqual(['tell-joke', 'calculate', 'tell-story'])
    expect(items.filter((i) => i.type === 'tool').map((i) => i.key)).toEqual([
      'tell-joke',
      'calculate',
      'tell-story',
      'tell-joke-mcp',
      'calculate-mcp',
      'tell-story-mcp',
    ])
    const mcp = items.find((i) => i.type === 'mcp' && i.key === 'tell-joke')!
    expect(mcp.value).toBe('{"remote-name": "tell-joke", "url": "http://toolbridge:8080/mcp", "auth-token": "t"}')
  })
})

describe("TrustGraph's agent's refusals, checked before sending", () => {
  const service = {
    id: 's',
    'request-queue': 'request:tg:s',
    'response-queue': 'response:tg:s',
    'config-params': [{ name: 'region', required: true }, 'mode'],
  }
  const tool = { type: 'tool-service', name: 't', description: 'd', service: 's', region: 'eu', arguments: [] }

  it('passes a tool that has what its service requires', () => {
    expect(agentToolRefusal(tool, { s: service })).toBeUndefined()
  })

  it("words each refusal as the agent's on_tools_config does", () => {
    const { region: _, ...withoutRegion } = tool
    expect(agentToolRefusal(withoutRegion, { s: service })).toBe("Tool t missing required config param 'region'")
    expect(agentToolRefusal({ ...tool, service: 'x' }, { s: service })).toBe(
      "Tool t references unknown tool-service 'x'",
    )
    expect(agentToolRefusal({ ...tool, service: '' }, { s: service })).toBe(
      "Tool t has type 'tool-service' but no 'service' reference",
    )
    expect(agentToolRefusal(tool, { s: { ...service, 'response-queue': '' } })).toBe(
      "Tool-service 's' must define 'request-queue' and 'response-queue'",
    )
  })

  it('never requires a bare-string config param, and leaves mcp-tool tools alone', () => {
    expect(agentToolRefusal({ ...tool }, { s: { ...service, 'config-params': ['region'] } })).toBeUndefined()
    expect(agentToolRefusal({ type: 'mcp-tool', name: 'm' }, {})).toBeUndefined()
  })
})

describe('registering with the configuration service of `toolbridge start` on the embedded broker', () => {
  let runtime: Runtime
  let client: ConfigClient
  beforeAll(async () => {
    runtime = await startRuntime(project, resolveSettings({ port: 'off', invoker: 'in-process' }, {}))
    client = new ConfigClient(await runtime.connectClient(), { timeoutMs: 5_000 })
    await client.start()
  })
  afterAll(async () => {
    await client?.close()
    await runtime?.stop()
  })

  it('puts every descriptor in one request, read back by get', async () => {
    const summary = await registerOn(await runtime.connectClient(), project.services, { workspace: 'team-a' })
    expect(summary).toBe(`registered 6 config items in workspace "team-a": ${EXPECTED_KEYS.join(', ')}`)
    expect(runtime.configService!.store.version).toBe(1)
    const [joke, tellJoke, other] = await client.get('team-a', [
      { type: 'tool-service', key: 'joke-service' },
      { type: 'tool', key: 'tell-joke' },
      { type: 'tool', key: 'tell-joke' },
    ])
    expect(JSON.parse(joke!)).toEqual({
      id: 'joke-service',
      'request-queue': 'request:tg:joke',
      'response-queue': 'response:tg:joke',
      'config-params': [{ name: 'style', required: false }],
    })
    expect(JSON.parse(tellJoke!)).toMatchObject({
      type: 'tool-service',
      name: 'tell-joke',
      service: 'joke-service',
      style: 'pun',
    })
    expect(other).toBe(tellJoke)
    expect(await client.get('default', [{ type: 'tool', key: 'tell-joke' }])).toEqual([null])
  })

  it('unregister takes the MCP entries out without being given the MCP endpoint, and names only what was there', async () => {
    await register(client, project.services, { workspace: 'team-d', mcp: { url: 'http://toolbridge:8080/mcp' } })
    const keys = await unregister(client, project.services, { workspace: 'team-d' })
    expect(keys).toHaveLength(12)
    for (const type of ['tool', 'tool-service', 'mcp']) expect(await client.list('team-d', type)).toEqual([])
    expect(await unregister(client, project.services, { workspace: 'team-d' })).toEqual([])
  })

  it('unregister deletes exactly what register put', async () => {
    await register(client, project.services, { workspace: 'team-b' })
    await client.put('team-b', [{ type: 'tool', key: 'someone-elses', value: '{}', workspace: '' }])
    const keys = await unregister(client, project.services, { workspace: 'team-b' })
    expect(keys.map((k) => `${k.type}/${k.key}`)).toEqual(EXPECTED_KEYS)
    expect(await client.list('team-b', 'tool')).toEqual(['someone-elses'])
    expect(await client.list('team-b', 'tool-service')).toEqual([])
  })

  it("sends nothing when a tool lacks a required config param, and says so in the agent's words", async () => {
    const joke = project.services.find((s) => s.id === 'joke-service')!
    // What serverless.yml's own checks would not let through: a tool without its service's required param.
    const broken = {
      ...joke,
      configParams: [{ name: 'style', required: true }],
      tools: joke.tools.map((t) => ({ ...t, config: {} })),
    }
    const before = runtime.configService!.store.version
    await expect(registerOn(await runtime.connectClient(), [broken], { workspace: 'team-c' })).rejects.toThrow(
      "TrustGraph's agent would refuse it: Tool tell-joke missing required config param 'style'",
    )
    expect(runtime.configService!.store.version).toBe(before)
    expect(await client.list('team-c', 'tool')).toEqual([])
  })
})

describe('toolbridge register / start --register', () => {
  it('prints with --dry-run the put request it would send, with valid config items', async () => {
    const printed = await dryRun<{ values: { type: string; key: string; value: string }[] }>('register')
    expect(printed.operation).toBe('put')
    expect(printed.workspace).toBe('team-a')
    expect(printed.values.map((v) => `${v.type}/${v.key}`)).toEqual(EXPECTED_KEYS)
    const services = Object.fromEntries(
      printed.values.filter((v) => v.type === 'tool-service').map((v) => [v.key, JSON.parse(v.value)]),
    )
    for (const v of printed.values.filter((v) => v.type === 'tool'))
      expect(agentToolRefusal(JSON.parse(v.value), services)).toBeUndefined()
  })

  it('needs --broker outside --dry-run, and says where registration goes instead', async () => {
    const run = await toolbridge('register')
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('--broker is required')
    expect(run.stderr).toContain('start --register')
  })

  it('refuses an empty --workspace', async () => {
    const run = await toolbridge('register', '--dry-run', '--workspace', '')
    expect(run).toMatchObject({ code: 2, stderr: 'toolbridge: --workspace: must not be empty\n' })
  })

  it('prints with unregister --dry-run every key it would delete, MCP entries included', async () => {
    const printed = await dryRun<{ keys: { type: string; key: string }[] }>('unregister')
    expect(printed).toMatchObject({ operation: 'delete', workspace: 'team-a' })
    expect(printed.keys.map((k) => `${k.type}/${k.key}`)).toEqual([
      ...EXPECTED_KEYS,
      'tool/tell-joke-mcp',
      'tool/calculate-mcp',
      'tool/tell-story-mcp',
      'mcp/tell-joke',
      'mcp/calculate',
      'mcp/tell-story',
    ])
  })

  it('start --register announces the tools once it serves, and still serves them', async () => {
    const bridge = new StartedBridge(['start', '--register', '--port', '0', '--invoker', 'in-process'])
    try {
      await bridge.printed(/^ {2}registered .*\n/m)
      const url = await bridge.url()
      const { stdout } = bridge
      expect(stdout).toContain(`  registered 6 config items in workspace "default": ${EXPECTED_KEYS.join(', ')}\n`)
      expect(stdout).toContain(`  MCP: ${url}/mcp (no token: open to anyone who reaches ${url})\n`)
      const res = await fetch(`${url}/tools/tell-joke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ arguments: { topic: 'cats' } }),
      })
      expect((await res.text()).trim().split('\n').at(-1)).toContain('meowtain')
    } finally {
      await bridge.stop()
    }
  })
})

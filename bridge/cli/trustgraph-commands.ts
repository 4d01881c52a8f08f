/**
 * The commands that connect toolbridge to TrustGraph and MCP clients:
 * `register` / `unregister` (its configuration service), `mcp` (an MCP
 * server on stdio), and the registration `start --register` does.
 */
import { Option, type Command } from 'commander'
import { CONFIG_REQUEST_QUEUE } from '../../shared/config-protocol.ts'
import type { McpEndpoint } from '../project/descriptors.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { QUEUE_STYLES, type QueueStyle } from '../../shared/queues.ts'
import { ConfigClient } from '../trustgraph/config-client.ts'
import { loadProject } from '../project/project.ts'
import { resolveSettings, type SettingFlags, type Settings } from '../project/settings.ts'
import { createLogger } from '../support/logger.ts'
import { serveMcpStdio } from '../http/mcp.ts'
import { register, registrationItems, unregister, type RegistrationOptions } from '../trustgraph/registration.ts'
import { startRuntime } from '../runtime.ts'
import { createToolCaller } from '../trustgraph/tool-caller.ts'
import { createTransport } from '../transports/create-transport.ts'
import { redact } from '../transports/redact.ts'
import type { Transport } from '../transports/transport.ts'

export const workspaceOption = () =>
  new Option('-w, --workspace <workspace>', 'TrustGraph workspace to register in (env TOOLBRIDGE_WORKSPACE; default "default")')
export const mcpUrlOption = () =>
  new Option('--mcp-url <url>', "also TrustGraph `mcp` entries and `mcp-tool` tools reaching these tools at this MCP URL (a `toolbridge start`'s /mcp)")
export const mcpTokenOption = (what: string) => new Option('--mcp-token <token>', `${what} (env TOOLBRIDGE_MCP_TOKEN)`)

export function mcpEndpoint(url: string | undefined, token: string | undefined): McpEndpoint | undefined {
  if (url === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ToolbridgeError('config', `--mcp-url: "${url}" is not a URL, e.g. http://toolbridge:8080/mcp`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ToolbridgeError('config', `--mcp-url: "${url}" must be an http:// or https:// URL`)
  return token ? { url, authToken: token } : { url }
}

/** Puts the descriptors into the configuration service reachable on `transport`; returns a one-line summary. */
export async function registerOn(transport: Transport, services: ToolServiceSpec[], options: RegistrationOptions & { timeoutMs?: number }): Promise<string> {
  const client = new ConfigClient(transport, { timeoutMs: options.timeoutMs })
  try {
    await client.start()
    const items = await register(client, services, options)
    return `registered ${items.length} config items in workspace "${options.workspace}": ${items.map((i) => `${i.type}/${i.key}`).join(', ')}`
  } finally {
    await client.close()
  }
}

function timeoutMs(value: string): number {
  const seconds = Number(value)
  if (!(seconds > 0)) throw new ToolbridgeError('config', `--timeout: "${value}" must be a positive number of seconds`)
  return seconds * 1000
}

interface RegisterFlags extends SettingFlags {
  dryRun?: boolean
  queues: QueueStyle
  mcpUrl?: string
  timeout: string
}

/** `brokerOptions`: --broker and the options of particular brokers; `serveOptions`: where functions run. */
export function addTrustgraphCommands(program: Command, brokerOptions: (() => Option)[], serveOptions: (() => Option)[]): void {
  const withBrokerOptions = (command: Command) => {
    for (const option of brokerOptions) command.addOption(option())
    return command
  }
  const registration = (name: string, description: string) =>
    withBrokerOptions(program.command(name).description(description))
      .addOption(workspaceOption())
      .addOption(new Option('--queues <style>', 'spelling of generated queue names').choices(QUEUE_STYLES).default('logical'))
      .addOption(mcpUrlOption())
      .addOption(mcpTokenOption('auth-token for the `mcp` entries'))
      .option('--timeout <seconds>', "how long to wait for TrustGraph's configuration service", '60')

  const prepare = (flags: RegisterFlags) => {
    const project = loadProject(program.opts().config)
    const settings = resolveSettings({ ...flags, port: 'off' })
    const options: RegistrationOptions = { workspace: settings.workspace, queues: flags.queues, mcp: mcpEndpoint(flags.mcpUrl, settings.mcpToken) }
    return { project, settings, options }
  }

  const connect = async ({ broker, pulsar }: Pick<Settings, 'broker' | 'pulsar'>): Promise<Transport> => {
    if (broker === undefined) {
      throw new ToolbridgeError(
        'config',
        `--broker is required: TrustGraph's configuration service answers on ${CONFIG_REQUEST_QUEUE} of its broker (the embedded broker's lives inside \`toolbridge start\`: use \`start --register\`)`,
      )
    }
    const transport = createTransport(broker, undefined, { logger: createLogger('warn'), pulsar })
    await transport.connect()
    return transport
  }

  registration('register', "put every tool-service and tool descriptor into TrustGraph's configuration service")
    .option('--dry-run', 'print the config items instead of sending them')
    .action(async (flags: RegisterFlags) => {
      const { project, settings, options } = prepare(flags)
      if (flags.dryRun) {
        // As TrustGraph's own translator prints them: no per-value workspace unless set.
        const values = registrationItems(project.services, options).map(({ type, key, value }) => ({ type, key, value }))
        console.log(JSON.stringify({ operation: 'put', workspace: options.workspace, values }, null, 2))
        return
      }
      const transport = await connect(settings)
      try {
        console.log(`toolbridge: ${await registerOn(transport, project.services, { ...options, timeoutMs: timeoutMs(flags.timeout) })} on ${redact(settings.broker!)}`)
      } finally {
        await transport.close()
      }
    })

  registration('unregister', "delete from TrustGraph's configuration service what register puts there").action(async (flags: RegisterFlags) => {
    const { project, settings, options } = prepare(flags)
    const transport = await connect(settings)
    const client = new ConfigClient(transport, { timeoutMs: timeoutMs(flags.timeout) })
    try {
      await client.start()
      const keys = await unregister(client, project.services, options)
      console.log(`toolbridge: deleted ${keys.length} config items from workspace "${options.workspace}" on ${redact(settings.broker!)}`)
    } finally {
      await client.close()
      await transport.close()
    }
  })

  const mcp = withBrokerOptions(program.command('mcp').description('serve every tool as an MCP server on stdin/stdout, calling it through the broker'))
  for (const option of serveOptions) mcp.addOption(option())
  mcp.action(async (flags: SettingFlags) => {
    const project = loadProject(program.opts().config)
    const settings = resolveSettings({ ...flags, port: 'off' })
    // Without a broker, the tools are served by an embedded bridge in this process.
    const runtime = settings.broker === undefined ? await startRuntime(project, settings) : undefined
    const transport = runtime ? await runtime.connectClient() : await connect(settings)
    const caller = createToolCaller(project.services, transport)
    try {
      await serveMcpStdio(caller)
    } finally {
      await caller.close()
      await (runtime ? runtime.stop() : transport.close())
    }
  })
}

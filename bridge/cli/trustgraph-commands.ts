/**
 * The commands that connect toolbridge to TrustGraph and MCP clients:
 * `register` / `unregister` (its configuration service), `mcp` (an MCP
 * server on stdio), and the registration `start --register` does. What a
 * command needs to run is imported when it runs (see main.ts).
 */
import type { Command } from 'commander'
import { CONFIG_REQUEST_QUEUE } from '../../shared/config-protocol.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import type { QueueStyle } from '../../shared/queues.ts'
import { ConfigClient } from '../trustgraph/config-client.ts'
import { resolveSettings, type SettingFlags, type Settings } from '../project/settings.ts'
import {
  register,
  registrationItems,
  registrationKeys,
  unregister,
  type RegistrationOptions,
} from '../trustgraph/registration.ts'
import { redact } from '../transports/redact.ts'
import type { Transport } from '../transports/transport.ts'
import {
  addBrokerOptions,
  addInvokerOptions,
  mcpEndpoint,
  mcpTokenOption,
  mcpUrlOption,
  queuesOption,
  timeoutMs,
  timeoutOption,
  workspaceOption,
} from './options.ts'
import { example } from './examples.ts'

/** Puts the descriptors into the configuration service reachable on `transport`; returns a one-line summary. */
export async function registerOn(
  transport: Transport,
  services: ToolServiceSpec[],
  options: RegistrationOptions & { timeoutMs?: number },
): Promise<string> {
  const client = new ConfigClient(transport, { timeoutMs: options.timeoutMs })
  try {
    await client.start()
    const items = await register(client, services, options)
    return `registered ${items.length} config items in workspace "${options.workspace}": ${items.map((i) => `${i.type}/${i.key}`).join(', ')}`
  } finally {
    await client.close()
  }
}

interface RegisterFlags extends SettingFlags {
  dryRun?: boolean
  queues: QueueStyle
  mcpUrl?: string
  timeout: string
}

export function addTrustgraphCommands(program: Command): void {
  const registration = (name: string, description: string) =>
    addBrokerOptions(program.command(name).description(description))
      .addOption(workspaceOption())
      .addOption(queuesOption())
      .addOption(mcpUrlOption())
      .addOption(mcpTokenOption('auth-token for the `mcp` entries'))
      .addOption(timeoutOption("how long to wait for TrustGraph's configuration service", 60))

  const prepare = async (flags: RegisterFlags) => {
    const { loadProject } = await import('../project/project.ts')
    const project = loadProject(program.opts().config)
    const settings = resolveSettings(flags, process.env, { gateway: false })
    const options: RegistrationOptions = {
      workspace: settings.workspace,
      queues: flags.queues,
      mcp: mcpEndpoint(flags.mcpUrl, settings.mcpToken),
    }
    return { project, settings, options }
  }

  /** TrustGraph's configuration service answers on a broker's queues: registering needs that broker. */
  const configServiceBroker = ({ broker }: Settings): string => {
    if (broker === undefined) {
      throw new ToolbridgeError(
        'config',
        `--broker is required: TrustGraph's configuration service answers on ${CONFIG_REQUEST_QUEUE} of its broker (the embedded broker's lives inside \`toolbridge start\`: use \`start --register\`)`,
      )
    }
    return broker
  }

  registration('register', "put every tool-service and tool descriptor into TrustGraph's configuration service")
    .option('--dry-run', 'print the config items instead of sending them')
    .addHelpText('after', example('toolbridge register --broker amqp://guest:guest@rabbitmq:5672/ --workspace default'))
    .action(async (flags: RegisterFlags) => {
      const { project, settings, options } = await prepare(flags)
      if (flags.dryRun) {
        // As TrustGraph's own translator prints them: no per-value workspace unless set.
        const values = registrationItems(project.services, options).map(({ type, key, value }) => ({
          type,
          key,
          value,
        }))
        console.log(JSON.stringify({ operation: 'put', workspace: options.workspace, values }, null, 2))
        return
      }
      const broker = configServiceBroker(settings)
      const timeout = timeoutMs(flags.timeout)
      const { connectBroker } = await import('./connect.ts')
      const transport = await connectBroker(broker, settings.pulsar)
      try {
        console.log(
          `toolbridge: ${await registerOn(transport, project.services, { ...options, timeoutMs: timeout })} on ${redact(broker)}`,
        )
      } finally {
        await transport.close()
      }
    })

  registration(
    'unregister',
    "delete from TrustGraph's configuration service what register puts there (MCP entries too, without --mcp-url)",
  )
    .option('--dry-run', 'print the keys it would delete instead of deleting them')
    .addHelpText(
      'after',
      example('toolbridge unregister --broker amqp://guest:guest@rabbitmq:5672/ --workspace default'),
    )
    .action(async (flags: RegisterFlags) => {
      const { project, settings, options } = await prepare(flags)
      if (flags.dryRun) {
        console.log(
          JSON.stringify(
            { operation: 'delete', workspace: options.workspace, keys: registrationKeys(project.services) },
            null,
            2,
          ),
        )
        return
      }
      const broker = configServiceBroker(settings)
      const timeout = timeoutMs(flags.timeout)
      const { connectBroker } = await import('./connect.ts')
      const transport = await connectBroker(broker, settings.pulsar)
      const client = new ConfigClient(transport, { timeoutMs: timeout })
      try {
        await client.start()
        const keys = await unregister(client, project.services, options)
        const which = keys.length === 0 ? ' (none was there)' : `: ${keys.map((k) => `${k.type}/${k.key}`).join(', ')}`
        console.log(
          `toolbridge: deleted ${keys.length} config items from workspace "${options.workspace}" on ${redact(broker)}${which}`,
        )
      } finally {
        await client.close()
        await transport.close()
      }
    })

  addInvokerOptions(
    addBrokerOptions(
      program
        .command('mcp')
        .description('serve every tool as an MCP server on stdin/stdout, calling it through the broker')
        .option(
          '--drain-timeout <seconds>',
          'when input ends, how long to finish the calls in flight (env TOOLBRIDGE_DRAIN_TIMEOUT; default 30)',
        )
        .addHelpText('after', example('toolbridge mcp --invoker in-process')),
    ),
  ).action(async (flags: SettingFlags) => {
    const [{ loadProject }, { connectToTools }, { createToolCaller }, { serveMcpStdio }] = await Promise.all([
      import('../project/project.ts'),
      import('./connect.ts'),
      import('../trustgraph/tool-caller.ts'),
      import('../http/mcp.ts'),
    ])
    const project = loadProject(program.opts().config)
    // Without a broker, the tools are served by an embedded bridge in this process.
    const settings = resolveSettings(flags, process.env, { gateway: false })
    const tools = await connectToTools(project, settings)
    const caller = createToolCaller(project.services, tools.transport)
    try {
      // On end of input, the calls in flight are finished first, within the drain timeout.
      await serveMcpStdio(caller, { drainMs: settings.drainTimeoutMs })
    } finally {
      await caller.close()
      await tools.close()
    }
  })
}

/**
 * Self-registration: the tool-service and tool descriptors of serverless.yml
 * (and, given an MCP endpoint, the `mcp` entries and `mcp-tool` tools) as
 * TrustGraph config items, put into or deleted from its configuration
 * service in one request, so one version bump and one push announce them all.
 */
import { configValue, type ConfigKey, type ConfigValue } from '../../shared/config-protocol.ts'
import { agentToolRefusal, descriptors, type McpEndpoint } from '../project/descriptors.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import type { QueueStyle } from '../../shared/queues.ts'
import { pythonJsonDumps } from '../../shared/python-json.ts'
import type { ConfigClient } from './config-client.ts'

export interface RegistrationOptions {
  workspace: string
  queues?: QueueStyle
  mcp?: McpEndpoint
}

/**
 * The config items, values as JSON text the way TrustGraph's own tools write
 * them. Throws, before anything is sent, for a tool TrustGraph's agent would
 * refuse, with the agent's own message.
 */
export function registrationItems(specs: ToolServiceSpec[], options: Pick<RegistrationOptions, 'queues' | 'mcp'> = {}): ConfigValue[] {
  const all = descriptors(specs, options.queues ?? 'logical', options.mcp)
  for (const tool of Object.values(all.tool)) {
    const refusal = agentToolRefusal(tool, all['tool-service'])
    if (refusal) throw new ToolbridgeError('config', `TrustGraph's agent would refuse it: ${refusal}`)
  }
  const items: ConfigValue[] = []
  for (const [type, entries] of Object.entries(all)) {
    for (const [key, value] of Object.entries(entries)) items.push(configValue(type, key, pythonJsonDumps(value)))
  }
  return items
}

export async function register(client: ConfigClient, specs: ToolServiceSpec[], options: RegistrationOptions): Promise<ConfigValue[]> {
  const items = registrationItems(specs, options)
  await client.put(options.workspace, items)
  return items
}

/** Deletes what register() puts (the same options name the same keys). */
export async function unregister(client: ConfigClient, specs: ToolServiceSpec[], options: RegistrationOptions): Promise<ConfigKey[]> {
  const keys = registrationItems(specs, options).map(({ type, key }) => ({ type, key }))
  await client.delete(options.workspace, keys)
  return keys
}

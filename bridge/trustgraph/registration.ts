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
export function registrationItems(
  specs: ToolServiceSpec[],
  options: Pick<RegistrationOptions, 'queues' | 'mcp'> = {},
): ConfigValue[] {
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

export async function register(
  client: ConfigClient,
  specs: ToolServiceSpec[],
  options: RegistrationOptions,
): Promise<ConfigValue[]> {
  const items = registrationItems(specs, options)
  await client.put(options.workspace, items)
  return items
}

/** Every key register() can write for these services, MCP entries included whether or not it was given an endpoint. */
export function registrationKeys(specs: ToolServiceSpec[]): ConfigKey[] {
  // Keys do not depend on the endpoint's URL: any stands for the one register was given.
  return registrationItems(specs, { mcp: { url: 'http://toolbridge/mcp' } }).map(({ type, key }) => ({ type, key }))
}

/** Deletes what register() put, with or without an MCP endpoint; resolves with the keys that were there. */
export async function unregister(
  client: ConfigClient,
  specs: ToolServiceSpec[],
  options: Pick<RegistrationOptions, 'workspace'>,
): Promise<ConfigKey[]> {
  const keys = registrationKeys(specs)
  const values = await client.get(options.workspace, keys)
  const present = keys.filter((_, i) => values[i] !== null && values[i] !== undefined)
  if (present.length > 0) await client.delete(options.workspace, present)
  return present
}

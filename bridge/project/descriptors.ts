/**
 * Tool services -> the `tool-service` and `tool` config objects TrustGraph
 * stores (docs/wire-contract.md#descriptors-in-the-configuration-service), and
 * the checks TrustGraph's agent makes on them.
 */
import { isRecord } from '../../shared/errors.ts'
import { defaultQueues, type QueueStyle } from '../../shared/queues.ts'
import type { ToolServiceSpec, ToolSpec } from './tool-services.ts'

/**
 * The `tool-service` config object, keyed by the service id
 * (docs/wire-contract.md#descriptors-in-the-configuration-service), as
 * TrustGraph's agent reads it:
 *
 *   {"id": str, "request-queue": str, "response-queue": str,
 *    "config-params": [{"name": str, "required": bool}, ...]}
 */
export function toolServiceDescriptor(spec: ToolServiceSpec, style: QueueStyle = 'logical') {
  const queues =
    style === 'pulsar' && spec.topic !== undefined
      ? defaultQueues(spec.topic, 'pulsar')
      : { request: spec.requestQueue, response: spec.responseQueue }
  return {
    id: spec.id,
    'request-queue': queues.request,
    'response-queue': queues.response,
    'config-params': spec.configParams.map((p) => ({ name: p.name, required: p.required })),
  }
}

/**
 * The `tool` config object of a tool-service tool, keyed by the tool name;
 * each of the tool's config values is a field of its own beside the fixed ones:
 *
 *   {"type": "tool-service", "name": str, "description": str, "service": <service id>,
 *    <config param>: <value>, ...,
 *    "arguments": [{"name": str, "type": str, "description": str}, ...]}
 */
export function toolDescriptor(spec: ToolServiceSpec, tool: ToolSpec) {
  return {
    type: 'tool-service',
    name: tool.name,
    description: tool.description,
    service: spec.id,
    ...tool.config,
    arguments: tool.arguments.map((a) => ({ name: a.name, type: a.type, description: a.description })),
  }
}

/** Where TrustGraph's MCP tool service reaches toolbridge's MCP server (`toolbridge start`'s `/mcp`). */
export interface McpEndpoint {
  url: string
  /** Sent as `Authorization: Bearer <token>` by TrustGraph's MCP tool service. */
  authToken?: string
}

/**
 * The `mcp-tool` twin of a tool is named `<tool>-mcp`: TrustGraph keys tools
 * by name, and the `tool-service` tool already has the plain name.
 */
export const mcpToolName = (tool: ToolSpec) => `${tool.name}-mcp`

/**
 * The `mcp` config object, keyed by the tool name: which MCP server, and the
 * tool's name there.
 *
 *   {"remote-name": str, "url": str, "auth-token": str (only when given)}
 */
export function mcpDescriptor(tool: ToolSpec, endpoint: McpEndpoint) {
  return {
    'remote-name': tool.name,
    url: endpoint.url,
    ...(endpoint.authToken ? { 'auth-token': endpoint.authToken } : {}),
  }
}

/**
 * The `tool` config object of an `mcp-tool` tool, with arguments as
 * TrustGraph's MCP-tool-arguments specification adds them; config values are
 * fixed by the MCP server, so none appear here.
 *
 *   {"type": "mcp-tool", "name": "<tool>-mcp", "description": str,
 *    "mcp-tool": <key of the mcp object>,
 *    "arguments": [{"name": str, "type": str, "description": str}, ...]}
 */
export function mcpToolDescriptor(tool: ToolSpec) {
  return {
    type: 'mcp-tool',
    name: mcpToolName(tool),
    description: tool.description,
    'mcp-tool': tool.name,
    arguments: tool.arguments.map((a) => ({ name: a.name, type: a.type, description: a.description })),
  }
}

export type ToolDescriptor = ReturnType<typeof toolDescriptor> | ReturnType<typeof mcpToolDescriptor>

/**
 * What `toolbridge descriptors` prints: `{"tool-service": {...}, "tool": {...}}`,
 * and with an MCP endpoint also `"mcp": {...}` and an `mcp-tool` per tool.
 */
export function descriptors(specs: ToolServiceSpec[], style: QueueStyle = 'logical', mcp?: McpEndpoint) {
  const toolServices: Record<string, ReturnType<typeof toolServiceDescriptor>> = {}
  const tools: Record<string, ToolDescriptor> = {}
  const mcpServers: Record<string, ReturnType<typeof mcpDescriptor>> = {}
  for (const spec of specs) {
    toolServices[spec.id] = toolServiceDescriptor(spec, style)
    for (const tool of spec.tools) tools[tool.name] = toolDescriptor(spec, tool)
  }
  if (!mcp) return { 'tool-service': toolServices, tool: tools }
  for (const spec of specs) {
    for (const tool of spec.tools) {
      mcpServers[tool.name] = mcpDescriptor(tool, mcp)
      tools[mcpToolName(tool)] = mcpToolDescriptor(tool)
    }
  }
  return { 'tool-service': toolServices, tool: tools, mcp: mcpServers }
}

/**
 * Why TrustGraph's agent (trustgraph-flow 2.11.1, `agent/react/service.py`,
 * `on_tools_config`) would refuse a `tool-service` tool, in its own words, or
 * undefined if it would load it. The agent refuses the whole tool
 * configuration over one such tool, so toolbridge checks before it sends.
 */
export function agentToolRefusal(
  tool: Record<string, unknown>,
  toolServices: Record<string, Record<string, unknown>>,
): string | undefined {
  if (tool.type !== 'tool-service') return undefined
  const name = String(tool.name)
  const ref = tool.service
  if (!ref) return `Tool ${name} has type 'tool-service' but no 'service' reference`
  const service = Object.hasOwn(toolServices, String(ref)) ? toolServices[String(ref)]! : undefined
  if (!service) return `Tool ${name} references unknown tool-service '${String(ref)}'`
  if (!service['request-queue'] || !service['response-queue']) {
    return `Tool-service '${String(ref)}' must define 'request-queue' and 'response-queue'`
  }
  const params = Array.isArray(service['config-params']) ? (service['config-params'] as unknown[]) : []
  for (const param of params) {
    // A bare-string param is never required; a present key counts whatever its value, as in the agent.
    if (isRecord(param) && param.required === true && !Object.hasOwn(tool, String(param.name))) {
      return `Tool ${name} missing required config param '${String(param.name)}'`
    }
  }
  return undefined
}

/**
 * The tools of serverless.yml as MCP describes them, and a tool's answer as
 * an MCP result. Computed once per server process, not per request.
 *
 * - `inputSchema`: the tool's declared `inputSchema:` unchanged, else one
 *   built from the declared arguments: the same declaration that feeds
 *   TrustGraph's descriptors and the bridge's argument check.
 * - `title` when declared.
 * - `annotations`: all four hints, each one left out at its cautious value
 *   (MCP's own defaults): not read-only, destructive, not idempotent, open
 *   world. A tool declared read-only changes nothing, so it is by default
 *   neither destructive nor anything but idempotent.
 * - `outputSchema` when the tool declares `output:`. Its answer must then
 *   be JSON that the schema (JSON Schema 2020-12) accepts; it goes back as
 *   `structuredContent` and, for clients that read only text (2025 clients,
 *   TrustGraph's mcp-tool), as the same JSON in a text block. An answer that
 *   is not is an error result saying why, not a result that lies.
 *
 * A call that failed: arguments no service could take are the request's
 * fault (a JSON-RPC error); any other failure is a result the model can read.
 */
import { type CallToolResult, ProtocolErrorCode, type Tool } from '@modelcontextprotocol/server'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { inputSchema } from '../../shared/arguments.ts'
import { ConfigError, messageOf } from '../../shared/errors.ts'
import { bounded } from '../support/bounded-text.ts'
import { ToolCallError } from '../trustgraph/request-client.ts'
import type { ToolHints, ToolSpec } from '../project/tool-services.ts'

/** Every hint, a declared one as declared and the others at their cautious value. */
export function toolAnnotations(declared: ToolHints): Required<ToolHints> {
  const readOnly = declared.readOnlyHint ?? false
  return {
    readOnlyHint: readOnly,
    destructiveHint: declared.destructiveHint ?? !readOnly,
    idempotentHint: declared.idempotentHint ?? readOnly,
    openWorldHint: declared.openWorldHint ?? true,
  }
}

export interface McpToolSet {
  /** tools/list's answer, in serverless.yml's order. */
  readonly list: Tool[]
  /** A successful answer of tool `name` as the result to send. */
  result(name: string, text: string): CallToolResult
}

/** Throws ConfigError when a declared output schema is not a JSON Schema Ajv can compile. */
export function describeTools(tools: Iterable<ToolSpec>): McpToolSet {
  const ajv = new Ajv2020({ allErrors: true, strict: false })
  const checks = new Map<string, ValidateFunction>()
  const list: Tool[] = []
  for (const tool of tools) {
    if (tool.output !== undefined) {
      try {
        checks.set(tool.name, ajv.compile(tool.output))
      } catch (err) {
        throw new ConfigError(`tool "${tool.name}" output`, `is not a JSON Schema: ${(err as Error).message}`)
      }
    }
    list.push({
      name: tool.name,
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      // A declared input schema is listed as it is ($schema, $defs, additionalProperties and all).
      inputSchema: (tool.inputSchema ?? inputSchema(tool.arguments)) as Tool['inputSchema'],
      annotations: toolAnnotations(tool.annotations),
      ...(tool.output === undefined ? {} : { outputSchema: tool.output as Tool['outputSchema'] }),
    })
  }
  return {
    list,
    result(name, text) {
      const check = checks.get(name)
      if (check === undefined) return { content: [{ type: 'text', text }] }
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch (err) {
        return refused(`the answer is not JSON, as the tool's output schema requires: ${(err as Error).message}`)
      }
      if (!check(value))
        return refused(`the answer does not match the tool's output schema: ${ajv.errorsText(check.errors)}`)
      return { content: [{ type: 'text', text }], structuredContent: value as Record<string, unknown> }
    },
  }
}

const refused = (why: string): CallToolResult => ({
  content: [{ type: 'text', text: bounded(`invalid-output: ${why}`) }],
  isError: true,
})

/** How MCP answers a call that failed: a JSON-RPC error for the request's fault, else an error result. */
export type FailedCall = { error: { code: number; message: string } } | { result: CallToolResult }

export function failedCall(err: unknown): FailedCall {
  // Arguments no service could take (nested too deep): the request is at fault, not the tool.
  if (err instanceof ToolCallError && err.type === 'bad-request')
    return { error: { code: ProtocolErrorCode.InvalidParams, message: bounded(err.message) } }
  const text = err instanceof ToolCallError ? `${err.type}: ${err.message}` : messageOf(err)
  return { result: { content: [{ type: 'text', text: bounded(text) }], isError: true } }
}

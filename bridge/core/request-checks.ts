/**
 * What the bridge refuses before invoking, because it cannot succeed: a
 * missing required config param, or an argument of the wrong type for the
 * tool that sent it.
 *
 * A request does not name its tool; tools on one service differ by their
 * config values (docs/wire-contract.md#refused-before-invoking), so the tool
 * is the one whose config values the request carries. When no single tool matches (a tool defined elsewhere),
 * arguments are left to the function's own checks. A tool declared with an
 * `inputSchema:` has its arguments checked against that schema (compiled once,
 * when the project was read), with the same `invalid-arguments` answer.
 */
import { checkArguments, type ArgumentRule } from '../../shared/arguments.ts'
import { checkAgainstSchema, compileInputSchema } from '../project/input-schema.ts'
import type { ToolServiceSpec, ToolSpec } from '../project/tool-services.ts'
import type { Refusal } from '../../shared/errors.ts'
import type { ToolRequest } from '../../shared/protocol.ts'

export type CheckResult = { ok: true; request: ToolRequest } | Refusal

export type RequestCheck = (request: ToolRequest) => CheckResult

const sameRules = (a: readonly ArgumentRule[], b: readonly ArgumentRule[]) =>
  a.length === b.length &&
  a.every((r, i) => r.name === b[i]!.name && r.type === b[i]!.type && r.required === b[i]!.required)

/** Whether two tools check arguments alike: the same schema, or the same flat rules. */
const sameCheck = (a: ToolSpec, b: ToolSpec) =>
  a.inputSchema !== undefined || b.inputSchema !== undefined
    ? a.inputSchema === b.inputSchema
    : sameRules(a.arguments, b.arguments)

function matchesConfig(tool: ToolSpec, config: Record<string, unknown>): boolean {
  for (const [key, value] of Object.entries(tool.config)) {
    if (!Object.hasOwn(config, key) || String(config[key]) !== String(value)) return false
  }
  return true
}

export function compileRequestCheck(spec: ToolServiceSpec): RequestCheck {
  const required = spec.configParams.filter((p) => p.required).map((p) => p.name)
  const tools = spec.tools
  // One way of checking arguments for the whole service, when every tool declares the same.
  const shared = tools.every((t) => sameCheck(t, tools[0]!)) ? tools[0]! : undefined

  /** The tool whose declaration checks a request with these config values. */
  const toolFor = (config: Record<string, unknown>): ToolSpec | undefined => {
    if (shared) return shared
    const matching = tools.filter((t) => matchesConfig(t, config))
    if (matching.length === 0) return undefined
    return matching.every((t) => sameCheck(t, matching[0]!)) ? matching[0] : undefined
  }

  return (request) => {
    const missing = required.filter((name) => !Object.hasOwn(request.config, name) || request.config[name] == null)
    if (missing.length > 0) {
      return {
        ok: false,
        kind: 'missing-config',
        message: `tool service "${spec.id}" requires config param${missing.length > 1 ? 's' : ''} ${missing.map((m) => `"${m}"`).join(', ')}`,
      }
    }
    const tool = toolFor(request.config)
    if (tool?.inputSchema !== undefined) {
      const schema = compileInputSchema(tool.name, tool.inputSchema)
      const checked = checkAgainstSchema(schema, request.arguments)
      return checked.ok ? { ok: true, request } : { ok: false, kind: 'invalid-arguments', message: checked.message }
    }
    const rules = tool?.arguments
    if (!rules || rules.length === 0) return { ok: true, request }
    const checked = checkArguments(request.arguments, rules)
    if (!checked.ok) return { ok: false, kind: 'invalid-arguments', message: checked.message }
    return {
      ok: true,
      request: checked.value === request.arguments ? request : { ...request, arguments: checked.value },
    }
  }
}

/** The name of the one tool whose config values a request carries; '' when none or several match. */
export function compileToolIdentifier(spec: ToolServiceSpec): (config: Record<string, unknown>) => string {
  const tools = spec.tools
  if (tools.length === 1 && Object.keys(tools[0]!.config).length === 0) {
    const only = tools[0]!.name
    return () => only
  }
  return (config) => {
    let found = ''
    for (const tool of tools) {
      if (!matchesConfig(tool, config)) continue
      if (found !== '') return ''
      found = tool.name
    }
    return found
  }
}

/**
 * What the bridge refuses before invoking, because it cannot succeed: a
 * missing required config param, or an argument of the wrong type for the
 * tool that sent it.
 *
 * A request does not name its tool; tools on one service differ by their
 * config values (docs/wire-contract.md#refused-before-invoking), so the tool
 * is the one whose config values the request carries. When no single tool matches (a tool defined elsewhere),
 * arguments are left to the function's own checks.
 */
import { checkArguments, type ArgumentRule } from '../../shared/arguments.ts'
import type { ToolServiceSpec, ToolSpec } from '../project/tool-services.ts'
import type { Refusal } from '../../shared/errors.ts'
import type { ToolRequest } from '../../shared/protocol.ts'

export type CheckResult = { ok: true; request: ToolRequest } | Refusal

export type RequestCheck = (request: ToolRequest) => CheckResult

const sameRules = (a: readonly ArgumentRule[], b: readonly ArgumentRule[]) =>
  a.length === b.length &&
  a.every((r, i) => r.name === b[i]!.name && r.type === b[i]!.type && r.required === b[i]!.required)

function matchesConfig(tool: ToolSpec, config: Record<string, unknown>): boolean {
  for (const [key, value] of Object.entries(tool.config)) {
    if (!Object.hasOwn(config, key) || String(config[key]) !== String(value)) return false
  }
  return true
}

export function compileRequestCheck(spec: ToolServiceSpec): RequestCheck {
  const required = spec.configParams.filter((p) => p.required).map((p) => p.name)
  const tools = spec.tools
  // One set of argument rules for the whole service, when every tool declares the same.
  const shared = tools.every((t) => sameRules(t.arguments, tools[0]!.arguments)) ? tools[0]!.arguments : undefined

  const rulesFor = (config: Record<string, unknown>): readonly ArgumentRule[] | undefined => {
    if (shared) return shared
    const matching = tools.filter((t) => matchesConfig(t, config))
    if (matching.length === 0) return undefined
    return matching.every((t) => sameRules(t.arguments, matching[0]!.arguments)) ? matching[0]!.arguments : undefined
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
    const rules = rulesFor(request.config)
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

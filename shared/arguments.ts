/**
 * The one definition of argument types: which exist, their JSON Schema (the
 * MCP server's `inputSchema`), and the checks shared by the bridge (before
 * it invokes), the HTTP and MCP gateways (before they send) and
 * `defineToolService` (inside the function), so a bad value gets the same
 * error on every path.
 *
 * Agents and the CLI often send scalars as strings, so a string that is
 * exactly a number or `true`/`false` is accepted for a number, integer or
 * boolean argument and converted; anything else of the wrong type is refused.
 */
import { isRecord, ToolbridgeError } from './errors.ts'
import { typeName } from './protocol.ts'
import { ARGUMENT_TYPES, type ArgumentType } from './tool-service-schema.ts'

export { ARGUMENT_TYPES, type ArgumentType }

export const isArgumentType = (value: unknown): value is ArgumentType =>
  (ARGUMENT_TYPES as readonly unknown[]).includes(value)

/** For declarations made in code; serverless.yml's schema refuses unknown types itself. */
export function assertArgumentType(value: unknown, where: string): asserts value is ArgumentType {
  if (!isArgumentType(value)) {
    throw new ToolbridgeError(
      'config',
      `${where}: unknown argument type ${JSON.stringify(value)}: use one of ${ARGUMENT_TYPES.join(', ')}`,
    )
  }
}

/** JSON Schema per type. `items` on arrays: some LLM tool-calling APIs refuse an array schema without it. */
const JSON_SCHEMA: Record<ArgumentType, Record<string, unknown>> = {
  string: { type: 'string' },
  number: { type: 'number' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  object: { type: 'object' },
  array: { type: 'array', items: {} },
}

export interface DescribedArgument {
  name: string
  type: ArgumentType
  description?: string
  required?: boolean
}

/** A JSON Schema object for declared arguments: an empty object schema when there are none. */
export function inputSchema(args: readonly DescribedArgument[]): {
  type: 'object'
  properties: Record<string, Record<string, unknown>>
  required?: string[]
} {
  const properties: Record<string, Record<string, unknown>> = {}
  for (const a of args)
    properties[a.name] = { ...JSON_SCHEMA[a.type], ...(a.description ? { description: a.description } : {}) }
  const required = args.filter((a) => a.required).map((a) => a.name)
  return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties }
}

export interface ArgumentRule {
  name: string
  type: ArgumentType
  required?: boolean
}

const NUMERIC = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/

function coerce(type: ArgumentType, value: unknown): { ok: true; value: unknown } | { ok: false } {
  switch (type) {
    case 'string':
      return typeof value === 'string' ? { ok: true, value } : { ok: false }
    case 'number':
    case 'integer': {
      const n = typeof value === 'string' && NUMERIC.test(value.trim()) ? Number(value) : value
      if (typeof n !== 'number' || !Number.isFinite(n)) return { ok: false }
      if (type === 'integer' && !Number.isInteger(n)) return { ok: false }
      return { ok: true, value: n }
    }
    case 'boolean':
      if (typeof value === 'boolean') return { ok: true, value }
      if (value === 'true' || value === 'false') return { ok: true, value: value === 'true' }
      return { ok: false }
    case 'object':
      return isRecord(value) ? { ok: true, value } : { ok: false }
    case 'array':
      return Array.isArray(value) ? { ok: true, value } : { ok: false }
  }
}

export type Checked =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; message: string; onlyMissing: boolean }

/**
 * Checks (and converts, see above) declared values; undeclared ones pass
 * through untouched. `label` names them in the message ("arguments", "config").
 */
export function checkArguments(
  values: Record<string, unknown>,
  rules: readonly ArgumentRule[],
  label = 'arguments',
): Checked {
  let checked: Record<string, unknown> | undefined
  const problems: string[] = []
  let wrongTypes = 0
  for (const rule of rules) {
    // Own keys only: an argument named "constructor" must not find Object.prototype's.
    const value = Object.hasOwn(values, rule.name) ? values[rule.name] : undefined
    if (value === undefined || value === null) {
      if (rule.required) problems.push(`"${rule.name}" is required`)
      continue
    }
    const result = coerce(rule.type, value)
    if (!result.ok) {
      wrongTypes++
      problems.push(`"${rule.name}" must be ${article(rule.type)} ${rule.type}, got ${describe(value)}`)
    } else if (result.value !== value) {
      checked ??= { ...values }
      checked[rule.name] = result.value
    }
  }
  if (problems.length > 0) {
    return { ok: false, message: `invalid ${label}: ${problems.join('; ')}`, onlyMissing: wrongTypes === 0 }
  }
  return { ok: true, value: checked ?? values }
}

const article = (type: string) => (/^[aeiou]/.test(type) ? 'an' : 'a')

function describe(value: unknown): string {
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`
  return typeName(value)
}

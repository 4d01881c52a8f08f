/**
 * A tool's `inputSchema:` (JSON Schema 2020-12), the alternative to its flat
 * `arguments:` list: compiled once with ajv's 2020 draft when the project is
 * read (a schema that does not compile refuses the start, naming the tool
 * and the place in the schema), then used by the bridge's request check.
 *
 * TrustGraph's descriptors know only a flat list of typed arguments: each
 * top-level property becomes one, its type mapped (a nested object or a
 * `$ref` as `object`, a list as `array`), required as the schema says.
 *
 * ajv is loaded only when some tool declares an input schema: reading a
 * serverless.yml without one stays as quick as before.
 */
import { createRequire } from 'node:module'
import type { Ajv2020 as Ajv2020Class, ValidateFunction } from 'ajv/dist/2020.js'
import { ARGUMENT_TYPES, type ArgumentType } from '../../shared/arguments.ts'
import { ConfigError, isRecord } from '../../shared/errors.ts'
import { bounded } from '../support/bounded-text.ts'

/** How many of a refused request's schema errors its message lists. */
const ERRORS_SHOWN = 5

let ajv: Ajv2020Class | undefined
const compiled = new WeakMap<object, ValidateFunction>()

function compiler(): Ajv2020Class {
  if (ajv) return ajv
  const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')
  // Unknown keywords and formats are annotations, as JSON Schema says: a schema written for models may carry them.
  ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false })
  return ajv
}

/** The validator of `schema`, compiled once; throws ConfigError naming `where` and the failing place. */
export function compileInputSchema(where: string, schema: Record<string, unknown>): ValidateFunction {
  const known = compiled.get(schema)
  if (known) return known
  let validate: ValidateFunction
  try {
    validate = compiler().compile(schema)
  } catch (err) {
    throw new ConfigError(where, `is not a JSON Schema (2020-12) ajv can compile: ${(err as Error).message}`)
  }
  compiled.set(schema, validate)
  return validate
}

export type SchemaCheck = { ok: true } | { ok: false; message: string }

/** Checks `args` against a compiled schema: the refusal names where each of the first few errors is. */
export function checkAgainstSchema(validate: ValidateFunction, args: Record<string, unknown>): SchemaCheck {
  if (validate(args)) return { ok: true }
  const errors = validate.errors ?? []
  const listed = errors
    .slice(0, ERRORS_SHOWN)
    .map((e) => `${e.instancePath === '' ? 'arguments' : `arguments${e.instancePath}`} ${e.message ?? 'is invalid'}`)
  const more = errors.length > ERRORS_SHOWN ? ` (and ${errors.length - ERRORS_SHOWN} more)` : ''
  return { ok: false, message: bounded(`${listed.join('; ')}${more}`) }
}

export interface DerivedArgument {
  name: string
  type: ArgumentType
  description: string
  required: boolean
}

/** The flat argument list TrustGraph's descriptors carry, from the schema's top-level properties. */
export function argumentsOfSchema(schema: Record<string, unknown>): DerivedArgument[] {
  const properties = isRecord(schema.properties) ? schema.properties : {}
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === 'string') : [])
  return Object.entries(properties).map(([name, property]) => {
    const described = isRecord(property) ? property : {}
    return {
      name,
      type: argumentType(described),
      description: typeof described.description === 'string' ? described.description : '',
      required: required.has(name),
    }
  })
}

function argumentType(property: Record<string, unknown>): ArgumentType {
  const type = property.type
  if (typeof type === 'string' && (ARGUMENT_TYPES as readonly string[]).includes(type)) return type as ArgumentType
  if ('items' in property || 'prefixItems' in property) return 'array'
  // A reference, a combination (anyOf, oneOf) or a list of types: an agent passes it on as JSON.
  if (
    'properties' in property ||
    '$ref' in property ||
    Array.isArray(type) ||
    'anyOf' in property ||
    'oneOf' in property
  )
    return 'object'
  return 'string'
}

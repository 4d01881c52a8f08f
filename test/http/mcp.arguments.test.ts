/**
 * One definition of argument types (shared/arguments.ts) behind the MCP
 * server's inputSchema, the bridge's and gateways' checks and
 * defineToolService: each type has its schema, and a bad value gets the
 * same message on every path.
 */
import { describe, expect, it } from 'vitest'
import { compileRequestCheck } from '../../bridge/core/request-checks.ts'
import { ARGUMENT_TYPES, assertArgumentType, checkArguments, inputSchema } from '../../shared/arguments.ts'
import { readToolServices } from '../../bridge/project/tool-services.ts'
import { defineToolService, type Declarations } from '../../shared/handler.ts'

describe('inputSchema', () => {
  it('gives every accepted type its JSON Schema, required ones listed', () => {
    const args = ARGUMENT_TYPES.map((type, i) => ({
      name: `a${i}`,
      type,
      description: `an ${type}`,
      required: i % 2 === 0,
    }))
    expect(inputSchema(args)).toEqual({
      type: 'object',
      properties: {
        a0: { type: 'string', description: 'an string' },
        a1: { type: 'number', description: 'an number' },
        a2: { type: 'integer', description: 'an integer' },
        a3: { type: 'boolean', description: 'an boolean' },
        a4: { type: 'object', description: 'an object' },
        a5: { type: 'array', items: {}, description: 'an array' },
      },
      required: ['a0', 'a2', 'a4'],
    })
  })

  it('is an empty object schema for a tool without arguments', () => {
    expect(inputSchema([])).toEqual({ type: 'object', properties: {} })
  })
})

describe('a bad value gets the same message from the bridge, the gateways and defineToolService', () => {
  const declarations: Declarations = {
    n: { type: 'integer', required: true },
    tags: { type: 'array' },
    opts: { type: 'object' },
  }
  const rules = Object.entries(declarations).map(([name, d]) => ({ name, type: d.type, required: d.required ?? false }))
  const [spec] = readToolServices({
    functions: {
      f: {
        handler: 'f.handler',
        toolService: {
          id: 's',
          topic: 's',
          tools: [{ name: 't', description: 'd', arguments: rules.map((r) => ({ ...r, description: '' })) }],
        },
      },
    },
  })
  const bridgeCheck = compileRequestCheck(spec!)
  const handler = defineToolService({ arguments: declarations, handler: () => 'ok' })

  for (const [label, args, message] of [
    [
      'a string that is not an integer',
      { n: '1.5' },
      'invalid arguments: "n" must be an integer, got the string "1.5"',
    ],
    ['a missing required argument', { tags: [] }, 'invalid arguments: "n" is required'],
    [
      'an object for an array and a string for an object',
      { n: 1, tags: {}, opts: 'x' },
      'invalid arguments: "tags" must be an array, got object; "opts" must be an object, got the string "x"',
    ],
  ] as const) {
    it(`for ${label}`, async () => {
      expect(checkArguments(args, rules)).toMatchObject({ ok: false, message })
      expect(bridgeCheck({ user: '', config: {}, arguments: { ...args } })).toEqual({
        ok: false,
        kind: 'invalid-arguments',
        message,
      })
      await expect(handler({ config: '{}', arguments: JSON.stringify(args) }, undefined)).rejects.toThrow(message)
    })
  }

  it('and converts the same way everywhere: "42" for an integer is 42', async () => {
    const echo = defineToolService({ arguments: declarations, handler: ({ arguments: a }) => a.n })
    expect(await echo({ arguments: '{"n": "42"}' }, undefined)).toBe(42)
    expect(bridgeCheck({ user: '', config: {}, arguments: { n: '42' } })).toMatchObject({
      ok: true,
      request: { arguments: { n: 42 } },
    })
  })
})

describe('an unknown declared type', () => {
  it('is refused when defineToolService is called, naming the declaration', () => {
    expect(() => defineToolService({ arguments: { q: { type: 'str' as 'string' } }, handler: () => '' })).toThrow(
      'defineToolService: arguments.q.type: unknown argument type "str": use one of string, number, integer, boolean, object, array',
    )
  })

  it('is refused by assertArgumentType for any other declaration made in code', () => {
    expect(() => assertArgumentType('float', 'x')).toThrow('x: unknown argument type "float"')
    expect(() => assertArgumentType('integer', 'x')).not.toThrow()
  })
})

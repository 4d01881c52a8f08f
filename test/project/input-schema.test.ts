/**
 * A tool declared with `inputSchema:` (JSON Schema 2020-12) instead of `arguments:`
 * (bridge/project/input-schema.ts): read from serverless.yml, compiled once, a schema that
 * does not compile refused naming the tool and the place; requests checked against it by
 * the bridge with the same `invalid-arguments` refusal; TrustGraph's descriptor given the
 * top-level properties as its arguments.
 */
import { describe, expect, it } from 'vitest'
import { compileRequestCheck } from '../../bridge/core/request-checks.ts'
import { toolDescriptor } from '../../bridge/project/descriptors.ts'
import { readToolServices } from '../../bridge/project/tool-services.ts'

const ADDRESS_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string', minLength: 1 } },
      required: ['city'],
      additionalProperties: false,
    },
  },
  properties: {
    name: { type: 'string', description: 'Who lives there' },
    address: { $ref: '#/$defs/address' },
    tags: { type: 'array', items: { enum: ['home', 'work'] } },
    floor: { type: 'integer', minimum: 0 },
  },
  required: ['name', 'address'],
  additionalProperties: false,
}

function serviceWith(tool: Record<string, unknown>) {
  return readToolServices({
    functions: {
      post: {
        handler: 'post.handler',
        toolService: { id: 'post', topic: 'post', tools: [{ name: 'send', description: 'Sends it', ...tool }] },
      },
    },
  })[0]!
}

const request = (args: Record<string, unknown>) => ({ user: 'u', config: {}, arguments: args })

describe('inputSchema', () => {
  const spec = serviceWith({ inputSchema: ADDRESS_SCHEMA })
  const check = compileRequestCheck(spec)

  it('keeps the schema as declared and derives TrustGraph arguments from its top-level properties', () => {
    expect(spec.tools[0]!.inputSchema).toEqual(ADDRESS_SCHEMA)
    expect(toolDescriptor(spec, spec.tools[0]!).arguments).toEqual([
      { name: 'name', type: 'string', description: 'Who lives there' },
      { name: 'address', type: 'object', description: '' },
      { name: 'tags', type: 'array', description: '' },
      { name: 'floor', type: 'integer', description: '' },
    ])
  })

  it('takes arguments the schema accepts, unchanged', () => {
    const args = { name: 'Ada', address: { city: 'London' }, tags: ['home'] }
    expect(check(request(args))).toEqual({ ok: true, request: request(args) })
  })

  it('refuses arguments that break the schema deep inside, saying where, as invalid-arguments', () => {
    expect(check(request({ name: 'Ada', address: { city: '' } }))).toEqual({
      ok: false,
      kind: 'invalid-arguments',
      message: 'arguments/address/city must NOT have fewer than 1 characters',
    })
    const refused = check(request({ name: 'Ada', address: { city: 'x', zip: 1 }, tags: ['moon'], floor: -1 }))
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.message).toContain('arguments/address must NOT have additional properties')
      expect(refused.message).toContain('arguments/tags/0 must be equal to one of the allowed values')
      expect(refused.message).toContain('arguments/floor must be >= 0')
    }
  })

  it('does not coerce as flat arguments do: a number sent as a string is refused', () => {
    expect(check(request({ name: 'Ada', address: { city: 'x' }, floor: '2' }))).toMatchObject({
      ok: false,
      message: 'arguments/floor must be integer',
    })
  })

  it('refuses to start with a schema that does not compile, naming the tool and where', () => {
    expect(() => serviceWith({ inputSchema: { type: 'object', properties: { a: { type: 'strin' } } } })).toThrow(
      /functions\.post\.toolService\.tools\[0\]\.inputSchema.*is not a JSON Schema \(2020-12\)/,
    )
    expect(() => serviceWith({ inputSchema: { $ref: '#/$defs/missing' } })).toThrow(/tools\[0\]\.inputSchema/)
  })

  it('refuses a tool that declares both arguments: and inputSchema:', () => {
    expect(() =>
      serviceWith({
        inputSchema: ADDRESS_SCHEMA,
        arguments: [{ name: 'name', type: 'string', description: 'x' }],
      }),
    ).toThrow(/either as `arguments:` or as `inputSchema:`/)
  })
})

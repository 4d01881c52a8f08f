/**
 * What each declared argument type accepts (shared/arguments.ts), the rule
 * the bridge, the gateways and defineToolService share: a value of the type
 * as it is, a string that is exactly a number or `true`/`false` converted
 * for a number, integer or boolean, and nothing else.
 */
import { describe, expect, it } from 'vitest'
import {
  ARGUMENT_TYPES,
  assertArgumentType,
  checkArguments,
  inputSchema,
  isArgumentType,
  type ArgumentType,
} from '../../shared/arguments.ts'

/** The value an argument of `type` arrives at the function with, or the refusal's message. */
function accepted(type: ArgumentType, value: unknown): unknown {
  const result = checkArguments({ v: value }, [{ name: 'v', type }])
  return result.ok ? result.value.v : { refused: result.message }
}

const refusal = (type: ArgumentType, got: string) => ({
  refused: `invalid arguments: "v" must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}, got ${got}`,
})

describe('each argument type accepts its own JSON values as they are', () => {
  const cases: [ArgumentType, unknown][] = [
    ['string', 'hello'],
    ['string', ''],
    ['number', 2.5],
    ['number', -0.001],
    ['number', 0],
    ['integer', 42],
    ['integer', -7],
    ['boolean', true],
    ['boolean', false],
    ['object', {}],
    ['object', { nested: { a: [1] } }],
    ['array', []],
    ['array', [1, 'two', { three: 3 }, null]],
  ]
  for (const [type, value] of cases) {
    it(`${type}: ${JSON.stringify(value)}`, () => {
      const values = { v: value }
      const result = checkArguments(values, [{ name: 'v', type, required: true }])
      // Nothing to convert: the very object comes back.
      expect(result).toStrictEqual({ ok: true, value: values })
      expect(result.ok && result.value).toBe(values)
    })
  }
})

describe('a string that is exactly a number is converted for a number or an integer', () => {
  const numbers: [string, number][] = [
    ['5', 5],
    ['-3', -3],
    ['2.5', 2.5],
    ['5.', 5],
    ['.5', 0.5],
    ['-.5', -0.5],
    ['1e-5', 0.00001],
    ['1E+3', 1000],
    ['2e3', 2000],
    [' 5 ', 5],
    ['\t7\n', 7],
    ['007', 7],
    ['12.25', 12.25],
    ['.25', 0.25],
    ['1e10', 1e10],
  ]
  for (const [text, number] of numbers) {
    it(`${JSON.stringify(text)} -> ${number}`, () => expect(accepted('number', text)).toBe(number))
  }

  it('for an integer, when the number is whole', () => {
    expect(accepted('integer', '12')).toBe(12)
    expect(accepted('integer', '1e3')).toBe(1000)
    expect(accepted('integer', '2.0')).toBe(2)
    expect(accepted('integer', ' -4 ')).toBe(-4)
    expect(accepted('integer', '2.5')).toStrictEqual(refusal('integer', 'the string "2.5"'))
    expect(accepted('integer', 2.5)).toStrictEqual(refusal('integer', 'number'))
  })

  it('and refuses any other string, naming it', () => {
    for (const text of [
      '',
      ' ',
      '.',
      '-',
      '+5',
      '1e',
      'e5',
      '1.2.3',
      '5px',
      '0x10',
      '1_000',
      'Infinity',
      '-Infinity',
      'NaN',
      '1e400',
      '5 5',
    ]) {
      expect(accepted('number', text), JSON.stringify(text)).toStrictEqual(
        refusal('number', `the string ${JSON.stringify(text)}`),
      )
    }
  })

  it('refuses a number that is not finite, and values of other types', () => {
    expect(accepted('number', Number.POSITIVE_INFINITY)).toStrictEqual(refusal('number', 'number'))
    expect(accepted('number', Number.NaN)).toStrictEqual(refusal('number', 'number'))
    expect(accepted('number', true)).toStrictEqual(refusal('number', 'boolean'))
    expect(accepted('number', [5])).toStrictEqual(refusal('number', 'array'))
    expect(accepted('integer', { n: 5 })).toStrictEqual(refusal('integer', 'object'))
  })
})

describe('a boolean', () => {
  it('is converted from exactly "true" or "false"', () => {
    expect(accepted('boolean', 'true')).toBe(true)
    expect(accepted('boolean', 'false')).toBe(false)
  })

  it('is refused in any other spelling or type', () => {
    for (const text of ['TRUE', 'False', 'yes', '1', '', ' true']) {
      expect(accepted('boolean', text), text).toStrictEqual(refusal('boolean', `the string ${JSON.stringify(text)}`))
    }
    expect(accepted('boolean', 1)).toStrictEqual(refusal('boolean', 'number'))
    expect(accepted('boolean', 0)).toStrictEqual(refusal('boolean', 'number'))
  })
})

describe('strings, objects and arrays are never converted', () => {
  it('a string is refused a number, a boolean, an object', () => {
    expect(accepted('string', 5)).toStrictEqual(refusal('string', 'number'))
    expect(accepted('string', false)).toStrictEqual(refusal('string', 'boolean'))
    expect(accepted('string', {})).toStrictEqual(refusal('string', 'object'))
  })

  it('an object is refused an array and a string of JSON', () => {
    expect(accepted('object', [])).toStrictEqual(refusal('object', 'array'))
    expect(accepted('object', '{}')).toStrictEqual(refusal('object', 'the string "{}"'))
    expect(accepted('object', 3)).toStrictEqual(refusal('object', 'number'))
  })

  it('an array is refused an object and a string of JSON', () => {
    expect(accepted('array', {})).toStrictEqual(refusal('array', 'object'))
    expect(accepted('array', '[1]')).toStrictEqual(refusal('array', 'the string "[1]"'))
  })
})

describe('missing values', () => {
  it('null and absent are both missing: refused when required, left as they are otherwise', () => {
    const rules = [
      { name: 'a', type: 'string' as const, required: true },
      { name: 'b', type: 'integer' as const },
    ]
    expect(checkArguments({ a: null }, rules)).toStrictEqual({
      ok: false,
      message: 'invalid arguments: "a" is required',
      onlyMissing: true,
    })
    expect(checkArguments({ b: 1 }, rules)).toStrictEqual({
      ok: false,
      message: 'invalid arguments: "a" is required',
      onlyMissing: true,
    })
    const values = { a: 'x', b: null }
    expect(checkArguments(values, rules)).toStrictEqual({ ok: true, value: { a: 'x', b: null } })
  })

  it('every problem is named, in the order of the rules', () => {
    const rules = [
      { name: 'x', type: 'integer' as const },
      { name: 'y', type: 'string' as const, required: true },
      { name: 'z', type: 'array' as const },
    ]
    expect(checkArguments({ x: '1.5', z: 'no' }, rules, 'config')).toStrictEqual({
      ok: false,
      message:
        'invalid config: "x" must be an integer, got the string "1.5"; "y" is required; "z" must be an array, got the string "no"',
      onlyMissing: false,
    })
  })

  it('a string of exactly 40 characters is quoted whole in the message', () => {
    const forty = 'y'.repeat(40)
    expect(accepted('number', forty)).toStrictEqual(refusal('number', `the string "${forty}"`))
  })
})

describe('conversions', () => {
  it('come back in a copy that keeps every other value, the object given unchanged', () => {
    const values = { n: '5', flag: 'true', other: 'as is', list: [1] }
    const result = checkArguments(values, [
      { name: 'n', type: 'integer' },
      { name: 'flag', type: 'boolean' },
      { name: 'list', type: 'array' },
    ])
    expect(result).toStrictEqual({ ok: true, value: { n: 5, flag: true, other: 'as is', list: [1] } })
    expect(values).toStrictEqual({ n: '5', flag: 'true', other: 'as is', list: [1] })
  })
})

describe('the types and their JSON Schema', () => {
  it('are exactly these six', () => {
    expect(ARGUMENT_TYPES).toStrictEqual(['string', 'number', 'integer', 'boolean', 'object', 'array'])
    for (const type of ARGUMENT_TYPES) expect(isArgumentType(type)).toBe(true)
    for (const other of ['float', 'String', '', undefined, null, 1]) expect(isArgumentType(other)).toBe(false)
  })

  it('a declaration made in code with another type is a configuration error naming it', () => {
    expect(() => assertArgumentType('float', 'tools[0].arguments.x')).toThrow(
      expect.objectContaining({
        kind: 'config',
        message:
          'tools[0].arguments.x: unknown argument type "float": use one of string, number, integer, boolean, object, array',
      }),
    )
  })

  it('leaves out an empty description and the required list when nothing is required', () => {
    expect(
      inputSchema([
        { name: 'q', type: 'string', description: '' },
        { name: 'n', type: 'integer', required: false },
      ]),
    ).toStrictEqual({
      type: 'object',
      properties: { q: { type: 'string' }, n: { type: 'integer' } },
    })
  })
})

/**
 * JSON as TrustGraph's Python services write it (shared/python-json.ts):
 * `json.dumps` with its defaults, so that what toolbridge puts on the wire is
 * byte for byte what a TrustGraph service would.
 */
import { describe, expect, it } from 'vitest'
import { pythonJsonDumps, pythonJsonString } from '../../shared/python-json.ts'

describe('pythonJsonDumps', () => {
  it('writes scalars as json.dumps does', () => {
    expect(pythonJsonDumps(null)).toBe('null')
    expect(pythonJsonDumps(undefined)).toBe('null')
    expect(pythonJsonDumps(true)).toBe('true')
    expect(pythonJsonDumps(false)).toBe('false')
    expect(pythonJsonDumps(0)).toBe('0')
    expect(pythonJsonDumps(-2.5)).toBe('-2.5')
    expect(pythonJsonDumps('a"b')).toBe('"a\\"b"')
  })

  it('writes what JSON cannot hold as null: numbers that are not finite, functions, symbols, bigints', () => {
    expect(pythonJsonDumps(Number.NaN)).toBe('null')
    expect(pythonJsonDumps(Number.POSITIVE_INFINITY)).toBe('null')
    expect(pythonJsonDumps(() => 1)).toBe('null')
    expect(pythonJsonDumps(Symbol('s'))).toBe('null')
    expect(pythonJsonDumps(10n)).toBe('null')
  })

  it('separates with ", " and ": ", and leaves out object fields that are undefined or functions', () => {
    expect(pythonJsonDumps({ a: 1, b: [true, null, 'x'], c: { d: {} }, e: [] })).toBe(
      '{"a": 1, "b": [true, null, "x"], "c": {"d": {}}, "e": []}',
    )
    expect(pythonJsonDumps({ gone: undefined, f: () => 1, kept: 0 })).toBe('{"kept": 0}')
    // In an array, a missing value keeps its place as null.
    expect(pythonJsonDumps([undefined, 1])).toBe('[null, 1]')
  })
})

describe('pythonJsonString', () => {
  it('leaves printable ASCII as JSON.stringify writes it', () => {
    const ascii = ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~'
    expect(pythonJsonString(ascii)).toBe(JSON.stringify(ascii))
    expect(pythonJsonString('tab\there\nnew')).toBe('"tab\\there\\nnew"')
  })

  it('escapes DEL and every character beyond ASCII as \\uXXXX, astral ones as surrogate pairs', () => {
    expect(pythonJsonString('\u007f')).toBe('"\\u007f"')
    expect(pythonJsonString('é')).toBe('"\\u00e9"')
    expect(pythonJsonString('漢')).toBe('"\\u6f22"')
    expect(pythonJsonString('a😀b')).toBe('"a\\ud83d\\ude00b"')
    expect(pythonJsonDumps({ clé: 'valeur é' })).toBe('{"cl\\u00e9": "valeur \\u00e9"}')
  })
})

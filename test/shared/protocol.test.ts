import { describe, expect, it } from 'vitest'
import { ERROR_KINDS, type ErrorKind } from '../../shared/errors.ts'
import {
  chunkResponse,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  errorResponse,
  finalResponse,
  kindOfWireErrorType,
  MAX_NESTING_DEPTH,
  resultText,
  type Decoded,
  type ToolRequest,
  type ToolResponse,
} from '../../shared/protocol.ts'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const text = (body: Uint8Array): string => new TextDecoder('utf-8', { fatal: true }).decode(body)

function decoded<T>(result: Decoded<T>): T {
  if (!result.ok) throw new Error(`expected a decoded value, got: ${result.message}`)
  return result.value
}

function failure<T>(result: Decoded<T>): string {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`)
  return result.message
}

describe('decodeRequest', () => {
  it('treats an absent user as the empty string', () => {
    const wire = String.raw`{"config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"cats\"}"}`
    expect(decoded(decodeRequest(bytes(wire))).user).toBe('')
  })

  it('treats a null user as the empty string', () => {
    expect(decoded(decodeRequest(bytes('{"user":null}'))).user).toBe('')
  })

  it.each<[string, string, ToolRequest]>([
    [
      'decodes the exact request bytes of the example in docs/wire-contract.md',
      String.raw`{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"cats\"}"}`,
      { user: 'alice', config: { style: 'pun' }, arguments: { topic: 'cats' } },
    ],
    [
      'treats empty-string config and arguments as {}',
      '{"user":"bob","config":"","arguments":""}',
      { user: 'bob', config: {}, arguments: {} },
    ],
    ['treats absent config and arguments as {}', '{}', { user: '', config: {}, arguments: {} }],
    [
      'treats null config and arguments as {}',
      '{"config":null,"arguments":null}',
      { user: '', config: {}, arguments: {} },
    ],
    [
      'decodes config and arguments given as objects rather than strings',
      '{"user":"alice","config":{"style":"dad-joke"},"arguments":{"topic":"music","n":2}}',
      { user: 'alice', config: { style: 'dad-joke' }, arguments: { topic: 'music', n: 2 } },
    ],
    [
      'ignores unknown fields',
      '{"user":"alice","workspace":"default","extra":[1,2],"config":"{}","arguments":"{\\"topic\\":\\"x\\"}"}',
      { user: 'alice', config: {}, arguments: { topic: 'x' } },
    ],
    [
      'decodes non-ASCII UTF-8 text',
      '{"user":"zoë","arguments":"{\\"topic\\":\\"猫 😀\\"}"}',
      { user: 'zoë', config: {}, arguments: { topic: '猫 😀' } },
    ],
  ])('%s', (_title, wire, request) => {
    expect(decoded(decodeRequest(bytes(wire)))).toStrictEqual(request)
  })

  it('refuses bytes that are not valid UTF-8', () => {
    expect(failure(decodeRequest(new Uint8Array([0xff, 0xfe])))).toBe('body is not valid UTF-8')
  })

  it('refuses a truncated multi-byte sequence as invalid UTF-8', () => {
    // '{"user":"' + first two bytes of the 3-byte '猫' + '"}'
    const body = new Uint8Array([...bytes('{"user":"'), 0xe7, 0x8c, ...bytes('"}')])
    expect(failure(decodeRequest(body))).toBe('body is not valid UTF-8')
  })

  it('refuses invalid JSON, saying so', () => {
    expect(failure(decodeRequest(bytes('{"user": "alice"')))).toMatch(/^body is not valid JSON: .+/)
  })

  it('refuses an empty body as invalid JSON', () => {
    expect(failure(decodeRequest(new Uint8Array()))).toMatch(/^body is not valid JSON: /)
  })

  it.each([
    ['refuses a JSON array body', '[]', 'request must be a JSON object, got array'],
    ['refuses a JSON string body', '"x"', 'request must be a JSON object, got string'],
    ['refuses a JSON null body', 'null', 'request must be a JSON object, got null'],
    [
      'refuses config that is a JSON string of an array',
      '{"config":"[1,2]"}',
      '"config" must encode a JSON object, got array',
    ],
    [
      'refuses arguments that are a JSON string of null',
      '{"arguments":"null"}',
      '"arguments" must encode a JSON object, got null',
    ],
    [
      'refuses config given as a bare array',
      '{"config":["a"]}',
      '"config" must be a JSON-encoded object string, got array',
    ],
    [
      'refuses arguments given as a number',
      '{"arguments":5}',
      '"arguments" must be a JSON-encoded object string, got number',
    ],
    ['refuses a user that is a number', '{"user":42}', '"user" must be a string, got number'],
    ['refuses arguments that are not valid JSON', '{"arguments":"{topic: cats}"}', '"arguments" is not valid JSON'],
    ['refuses config that is not valid JSON', '{"config":"{\\"style\\":"}', '"config" is not valid JSON'],
  ])('%s', (_title, wire, message) => {
    expect(failure(decodeRequest(bytes(wire)))).toBe(message)
  })

  it('does not pollute Object.prototype through a __proto__ key in arguments or config', () => {
    const wire = String.raw`{"arguments":"{\"__proto__\":{\"polluted\":true}}","config":{"__proto__":{"pollutedConfig":true}}}`
    const request = decoded(decodeRequest(bytes(wire)))
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).pollutedConfig).toBeUndefined()
    expect(Object.prototype).not.toHaveProperty('polluted')
    expect(Object.getPrototypeOf(request.arguments)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(request.config)).toBe(Object.prototype)
    expect(request.arguments.polluted).toBeUndefined()
    expect(request.config.pollutedConfig).toBeUndefined()
    // The key stays plain data.
    expect(JSON.stringify(request.arguments)).toBe('{"__proto__":{"polluted":true}}')
    expect(JSON.stringify(request.config)).toBe('{"__proto__":{"pollutedConfig":true}}')
  })
})

// Expected bytes below are what Python 3's json.dumps writes for the same values
// (TrustGraph's own serialisation): ", " / ": " separators, ensure_ascii escapes.
const isAscii = (body: Uint8Array) => body.every((byte) => byte < 0x80)

describe('encodeRequest', () => {
  it('encodes an empty request as config and arguments JSON strings, without user', () => {
    expect(text(encodeRequest({}))).toBe('{"config": "{}", "arguments": "{}"}')
  })

  it('encodes config and arguments as JSON strings and user only when given', () => {
    expect(text(encodeRequest({ config: { style: 'pun' }, arguments: { topic: 'cats' } }))).toBe(
      String.raw`{"config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"cats\"}"}`,
    )
  })

  it('writes exactly the request bytes of the example in docs/wire-contract.md', () => {
    expect(text(encodeRequest({ user: 'alice', config: { style: 'pun' }, arguments: { topic: 'cats' } }))).toBe(
      String.raw`{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"cats\"}"}`,
    )
  })

  it('keeps an empty-string user', () => {
    expect(text(encodeRequest({ user: '' }))).toBe('{"user": "", "config": "{}", "arguments": "{}"}')
  })

  it('escapes non-ASCII text as Python does, nested arrays included', () => {
    const body = encodeRequest({ user: 'alice', config: { style: 'pun' }, arguments: { t: 'é', n: [1, 2] } })
    expect(text(body)).toBe(
      String.raw`{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"t\": \"\\u00e9\", \"n\": [1, 2]}"}`,
    )
    expect(isAscii(body)).toBe(true)
  })

  it('round-trips through decodeRequest', () => {
    const request: ToolRequest = {
      user: 'zoë',
      config: { style: 'pun' },
      arguments: { topic: 'cats 😀', n: [1, 2], nested: { a: null } },
    }
    expect(decoded(decodeRequest(encodeRequest(request)))).toStrictEqual(request)
  })
})

describe('encodeResponse', () => {
  it('encodes a final response byte for byte in TrustGraph field order and spelling', () => {
    expect(text(encodeResponse(finalResponse('Hey alice!')))).toBe(
      '{"error": null, "response": "Hey alice!", "end_of_stream": true}',
    )
  })

  it('encodes a chunk with end_of_stream false', () => {
    expect(text(encodeResponse(chunkResponse('part')))).toBe(
      '{"error": null, "response": "part", "end_of_stream": false}',
    )
  })

  it('keeps the field order whatever order the object was built in', () => {
    const response = { end_of_stream: true, response: 'x', error: null } as ToolResponse
    expect(text(encodeResponse(response))).toBe('{"error": null, "response": "x", "end_of_stream": true}')
  })

  it('drops fields that are not part of the response or its error', () => {
    const response = {
      error: { message: 'm', type: 't', stack: 'at x' },
      response: '',
      end_of_stream: true,
      extra: 1,
    } as ToolResponse
    expect(text(encodeResponse(response))).toBe(
      '{"error": {"type": "t", "message": "m"}, "response": "", "end_of_stream": true}',
    )
  })

  it('encodes an error response with type and message', () => {
    expect(text(encodeResponse(errorResponse('function-error', 'boom')))).toBe(
      '{"error": {"type": "tool-service-error", "message": "boom"}, "response": "", "end_of_stream": true}',
    )
  })

  it('escapes a non-ASCII error message as Python does', () => {
    const body = encodeResponse(errorResponse('function-error', 'é boom'))
    expect(text(body)).toBe(
      '{"error": {"type": "tool-service-error", "message": "\\u00e9 boom"}, "response": "", "end_of_stream": true}',
    )
  })

  it('escapes quotes, control characters, DEL and non-ASCII text exactly as Python json.dumps does', () => {
    const body = encodeResponse(finalResponse('a"b\n😀é\u007f\u0001\t/'))
    expect(text(body)).toBe(
      String.raw`{"error": null, "response": "a\"b\n\ud83d\ude00\u00e9\u007f\u0001\t/", "end_of_stream": true}`,
    )
    expect(isAscii(body)).toBe(true)
  })

  it('escapes a lone surrogate instead of writing invalid UTF-8', () => {
    const body = encodeResponse(finalResponse('x\ud800y'))
    expect(text(body)).toBe(String.raw`{"error": null, "response": "x\ud800y", "end_of_stream": true}`)
  })
})

describe('errorResponse', () => {
  const expectedWireType: Record<ErrorKind, string> = {
    'bad-request': 'bad-request',
    'missing-config': 'missing-config',
    'invalid-arguments': 'invalid-arguments',
    'too-large': 'too-large',
    'function-error': 'tool-service-error',
    timeout: 'timeout',
    crash: 'tool-service-error',
    unavailable: 'unavailable',
    expired: 'expired',
    config: 'tool-service-error',
  }

  it('covers every error kind', () => {
    expect(Object.keys(expectedWireType).sort()).toStrictEqual([...ERROR_KINDS].sort())
  })

  for (const kind of ERROR_KINDS) {
    it(`maps kind ${kind} to wire type ${expectedWireType[kind]}, with empty response and end of stream`, () => {
      expect(errorResponse(kind, `msg ${kind}`)).toStrictEqual({
        error: { type: expectedWireType[kind], message: `msg ${kind}` },
        response: '',
        end_of_stream: true,
      })
    })
  }

  it('reads a wire type back as its kind where the type names one, else as a failure of the function', () => {
    for (const kind of ERROR_KINDS) {
      expect(kindOfWireErrorType(expectedWireType[kind])).toBe(
        expectedWireType[kind] === kind ? kind : 'function-error',
      )
    }
    expect(kindOfWireErrorType('tool-service-error')).toBe('function-error')
    expect(kindOfWireErrorType('RuntimeError')).toBe('function-error')
    expect(kindOfWireErrorType('')).toBe('function-error')
  })
})

describe('decodeResponse', () => {
  it('decodes a final response', () => {
    expect(decoded(decodeResponse(bytes('{"error": null, "response": "Hey", "end_of_stream": true}')))).toStrictEqual({
      error: null,
      response: 'Hey',
      end_of_stream: true,
    })
  })

  it('decodes a chunk with end_of_stream false', () => {
    expect(decoded(decodeResponse(bytes('{"error":null,"response":"a","end_of_stream":false}')))).toStrictEqual({
      error: null,
      response: 'a',
      end_of_stream: false,
    })
  })

  it('gives an error without type or message empty ones, and writes other values of them as text', () => {
    expect(decoded(decodeResponse(bytes('{"error": {}}')))).toStrictEqual({
      error: { type: '', message: '' },
      response: '',
      end_of_stream: true,
    })
    expect(decoded(decodeResponse(bytes('{"error": {"type": 7, "message": false}}'))).error).toStrictEqual({
      type: '7',
      message: 'false',
    })
  })

  it('takes a null response as the empty text and refuses one that is not a string', () => {
    expect(decoded(decodeResponse(bytes('{"error": null, "response": null}')))).toStrictEqual({
      error: null,
      response: '',
      end_of_stream: false,
    })
    expect(decodeResponse(bytes('{"response": 5}'))).toStrictEqual({
      ok: false,
      message: '"response" must be a string',
    })
    expect(decodeResponse(bytes('{"error": "boom"}'))).toStrictEqual({
      ok: false,
      message: '"error" must be an object or null',
    })
  })

  it('forces end_of_stream to true when an error is set', () => {
    const wire = '{"error":{"type":"tool-service-error","message":"boom"},"response":"","end_of_stream":false}'
    expect(decoded(decodeResponse(bytes(wire)))).toStrictEqual({
      error: { type: 'tool-service-error', message: 'boom' },
      response: '',
      end_of_stream: true,
    })
  })

  it('treats absent response, error and end_of_stream as "", null and false', () => {
    expect(decoded(decodeResponse(bytes('{}')))).toStrictEqual({ error: null, response: '', end_of_stream: false })
  })

  it('round-trips what encodeResponse writes', () => {
    for (const response of [chunkResponse('x'), finalResponse('ÿ😀'), errorResponse('timeout', 'late')]) {
      expect(decoded(decodeResponse(encodeResponse(response)))).toStrictEqual(response)
    }
  })

  it('refuses a non-string response', () => {
    expect(failure(decodeResponse(bytes('{"response":5}')))).toBe('"response" must be a string')
  })

  it('refuses an error that is not an object', () => {
    expect(failure(decodeResponse(bytes('{"error":"boom"}')))).toBe('"error" must be an object or null')
  })

  it('refuses a body that is not an object', () => {
    expect(failure(decodeResponse(bytes('[1]')))).toBe('response must be a JSON object, got array')
  })

  it('refuses invalid UTF-8', () => {
    expect(failure(decodeResponse(new Uint8Array([0xff, 0xfe])))).toBe('body is not valid UTF-8')
  })
})

describe('resultText', () => {
  it('keeps a string as it is', () => {
    expect(resultText('Hey "you"\n')).toBe('Hey "you"\n')
    expect(resultText('')).toBe('')
  })

  it('sends objects and arrays as their JSON text', () => {
    expect(resultText({ a: 1, b: 'x' })).toBe('{"a":1,"b":"x"}')
    expect(resultText([1, 'two', null])).toBe('[1,"two",null]')
  })

  it('sends other JSON values as their JSON text', () => {
    expect(resultText(42)).toBe('42')
    expect(resultText(true)).toBe('true')
    expect(resultText(null)).toBe('null')
  })

  it('sends undefined as the empty string', () => {
    expect(resultText(undefined)).toBe('')
  })

  it('sends what JSON cannot write, a function or a symbol, as the empty string', () => {
    expect(resultText(() => 'never called')).toBe('')
    expect(resultText(Symbol('s'))).toBe('')
  })
})

describe('nesting depth of config and arguments', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
  const body = (args: string) => new TextEncoder().encode(`{"config": "{}", "arguments": {"a": ${args}}}`)

  it(`accepts ${MAX_NESTING_DEPTH} levels (the object itself is one)`, () => {
    expect(decodeRequest(body(nested(MAX_NESTING_DEPTH - 1))).ok).toBe(true)
  })

  it('refuses one level more, and 100,000 levels, as a bad request without walking them recursively', () => {
    for (const depth of [MAX_NESTING_DEPTH, 100_000]) {
      expect(decodeRequest(body(nested(depth)))).toStrictEqual({
        ok: false,
        message: `"arguments" nests deeper than ${MAX_NESTING_DEPTH} levels`,
      })
    }
  })

  it('counts only objects and arrays: strings, numbers and null at the deepest level add none', () => {
    expect(
      decodeRequest(body('['.repeat(MAX_NESTING_DEPTH - 1) + '"x", 1, null, true' + ']'.repeat(MAX_NESTING_DEPTH - 1)))
        .ok,
    ).toBe(true)
    expect(
      decodeRequest(body('['.repeat(MAX_NESTING_DEPTH - 2) + '[], {}, null' + ']'.repeat(MAX_NESTING_DEPTH - 2))).ok,
    ).toBe(true)
  })

  it('is refused by encodeRequest too, as a bad request, before anything is written', () => {
    const deep = (depth: number): unknown => (depth === 0 ? 'leaf' : [deep(depth - 1)])
    expect(() => encodeRequest({ arguments: { a: deep(MAX_NESTING_DEPTH) } })).toThrow(
      expect.objectContaining({
        kind: 'bad-request',
        message: `"arguments" nests deeper than ${MAX_NESTING_DEPTH} levels`,
      }),
    )
    expect(() => encodeRequest({ config: { a: deep(MAX_NESTING_DEPTH) } })).toThrow(
      `"config" nests deeper than ${MAX_NESTING_DEPTH} levels`,
    )
    expect(decodeRequest(encodeRequest({ arguments: { a: deep(MAX_NESTING_DEPTH - 1) } })).ok).toBe(true)
  })

  it('counts objects as well as arrays, in config too', () => {
    const deepObject = '{"a":'.repeat(MAX_NESTING_DEPTH + 1) + '1' + '}'.repeat(MAX_NESTING_DEPTH + 1)
    const request = new TextEncoder().encode(JSON.stringify({ config: deepObject, arguments: '{}' }))
    expect(decodeRequest(request)).toStrictEqual({
      ok: false,
      message: `"config" nests deeper than ${MAX_NESTING_DEPTH} levels`,
    })
  })
})

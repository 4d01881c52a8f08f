import { Writable } from 'node:stream'
import middy from '@middy/core'
import { describe, expect, it } from 'vitest'
import { checkArguments } from '../../shared/arguments.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import {
  BAD_REQUEST_ERROR,
  defineToolService,
  INVALID_ARGUMENTS_ERROR,
  isChunkStream,
  lambdaStreaming,
  MISSING_CONFIG_ERROR,
} from '../../shared/handler.ts'

/** A handler that returns the event it was given, after the checks. */
const echo = defineToolService({
  config: {
    style: { type: 'string', default: 'pun' },
    precision: { type: 'integer' },
  },
  arguments: {
    topic: { type: 'string', required: true },
    count: { type: 'integer', default: 3 },
    ratio: { type: 'number' },
    loud: { type: 'boolean' },
    tags: { type: 'array' },
    extra: { type: 'object' },
  },
  async handler(event) {
    return event
  },
})

async function rejection(promise: Promise<unknown>): Promise<ToolbridgeError> {
  try {
    await promise
  } catch (err) {
    expect(err).toBeInstanceOf(ToolbridgeError)
    return err as ToolbridgeError
  }
  throw new Error('expected the handler to throw')
}

describe('defineToolService', () => {
  it('applies typed defaults to absent config and arguments', async () => {
    expect(await echo({ user: 'alice', config: {}, arguments: { topic: 'cats' } }, undefined)).toStrictEqual({
      user: 'alice',
      config: { style: 'pun' },
      arguments: { topic: 'cats', count: 3 },
    })
  })

  it('applies defaults over undefined values (an in-process caller may pass them)', async () => {
    expect(
      await echo({ config: { style: undefined }, arguments: { topic: 'cats', count: undefined } }, undefined),
    ).toStrictEqual({
      user: '',
      config: { style: 'pun' },
      arguments: { topic: 'cats', count: 3 },
    })
  })

  it('names a config declaration of an unknown type as config', () => {
    expect(() => defineToolService({ config: { c: { type: 'text' as 'string' } }, handler: () => '' })).toThrow(
      'defineToolService: config.c.type: unknown argument type "text"',
    )
  })

  it('applies defaults over null values', async () => {
    expect(await echo({ config: { style: null }, arguments: { topic: 'cats', count: null } }, undefined)).toStrictEqual(
      {
        user: '',
        config: { style: 'pun' },
        arguments: { topic: 'cats', count: 3 },
      },
    )
  })

  it('keeps given values over defaults', async () => {
    expect(
      await echo({ user: 'bob', config: { style: 'dad-joke' }, arguments: { topic: 'x', count: 7 } }, undefined),
    ).toStrictEqual({
      user: 'bob',
      config: { style: 'dad-joke' },
      arguments: { topic: 'x', count: 7 },
    })
  })

  it('converts numeric and boolean strings to the declared types', async () => {
    const event = {
      config: { precision: '4' },
      arguments: { topic: 'cats', count: '5', ratio: '2.5', loud: 'true' },
    }
    expect(await echo(event, undefined)).toStrictEqual({
      user: '',
      config: { style: 'pun', precision: 4 },
      arguments: { topic: 'cats', count: 5, ratio: 2.5, loud: true },
    })
  })

  it('converts "false" to false and negative and exponent numbers', async () => {
    expect(
      await echo({ arguments: { topic: 't', loud: 'false', ratio: '-1.5e2', count: '-7' } }, undefined),
    ).toStrictEqual({
      user: '',
      config: { style: 'pun' },
      arguments: { topic: 't', loud: false, ratio: -150, count: -7 },
    })
  })

  it('writes defaults and conversions into copies, never into the objects the caller passed', async () => {
    const config = {}
    const args = { topic: 'cats' }
    const converted = { topic: 'dogs', count: '4' }
    const seen = (await echo({ config, arguments: args }, undefined)) as { config: object; arguments: object }
    expect(seen).toStrictEqual({ user: '', config: { style: 'pun' }, arguments: { topic: 'cats', count: 3 } })
    expect(config).toStrictEqual({})
    expect(args).toStrictEqual({ topic: 'cats' })
    expect(seen.config).not.toBe(config)
    await echo({ config, arguments: converted }, undefined)
    expect(converted).toStrictEqual({ topic: 'dogs', count: '4' })
  })

  it('hands over the very objects the caller passed when there is nothing to add or convert', async () => {
    const plain = defineToolService({
      config: { style: { type: 'string' } },
      arguments: { n: { type: 'integer' } },
      handler: (event) => event,
    })
    const config = { style: 'pun' }
    const args = { n: 1 }
    const seen = (await plain({ config, arguments: args }, undefined)) as { config: object; arguments: object }
    expect(seen.config).toBe(config)
    expect(seen.arguments).toBe(args)
  })

  it('gives each call its own defaults: what one handler does to them is not seen by the next', async () => {
    const tagger = defineToolService({
      arguments: { tags: { type: 'array', default: [] } },
      handler: ({ arguments: a }) => {
        ;(a.tags as unknown[]).push('seen')
        return a.tags
      },
    })
    expect(await tagger({ arguments: {} }, undefined)).toStrictEqual(['seen'])
    expect(await tagger({ arguments: {} }, undefined)).toStrictEqual(['seen'])
  })

  it('passes undeclared arguments through untouched', async () => {
    expect(await echo({ arguments: { topic: 't', other: '5' } }, undefined)).toStrictEqual({
      user: '',
      config: { style: 'pun' },
      arguments: { topic: 't', other: '5', count: 3 },
    })
  })

  it('refuses "abc" for a number with InvalidArgumentsError', async () => {
    const err = await rejection(echo({ arguments: { topic: 't', ratio: 'abc' } }, undefined))
    expect(err.name).toBe(INVALID_ARGUMENTS_ERROR)
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.kind).toBe('invalid-arguments')
    expect(err.message).toBe('invalid arguments: "ratio" must be a number, got the string "abc"')
  })

  it('refuses 1.5 for an integer', async () => {
    const err = await rejection(echo({ arguments: { topic: 't', count: 1.5 } }, undefined))
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.message).toBe('invalid arguments: "count" must be an integer, got number')
  })

  it('refuses "1.5" for an integer', async () => {
    const err = await rejection(echo({ arguments: { topic: 't', count: '1.5' } }, undefined))
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.message).toBe('invalid arguments: "count" must be an integer, got the string "1.5"')
  })

  it('refuses "yes" for a boolean and a number for a string', async () => {
    const err = await rejection(echo({ arguments: { topic: 5, loud: 'yes' } }, undefined))
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.message).toBe(
      'invalid arguments: "topic" must be a string, got number; "loud" must be a boolean, got the string "yes"',
    )
  })

  it('refuses an object for an array and an array for an object', async () => {
    const err = await rejection(echo({ arguments: { topic: 't', tags: {}, extra: [] } }, undefined))
    expect(err.message).toBe(
      'invalid arguments: "tags" must be an array, got object; "extra" must be an object, got array',
    )
  })

  it('refuses a missing required argument with InvalidArgumentsError', async () => {
    const err = await rejection(echo({ user: 'alice', arguments: {} }, undefined))
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.kind).toBe('invalid-arguments')
    expect(err.message).toBe('invalid arguments: "topic" is required')
  })

  it('refuses a missing required config param with MissingConfigError', async () => {
    const handler = defineToolService({
      config: { collection: { type: 'string', required: true } },
      async handler() {
        return 'never'
      },
    })
    const err = await rejection(handler({ arguments: {} }, undefined))
    expect(err.name).toBe(MISSING_CONFIG_ERROR)
    expect(err.name).toBe('MissingConfigError')
    expect(err.kind).toBe('missing-config')
    expect(err.message).toBe('invalid config: "collection" is required')
  })

  it('refuses a wrong-typed config value with InvalidArgumentsError', async () => {
    const err = await rejection(echo({ config: { precision: 'x' }, arguments: { topic: 't' } }, undefined))
    expect(err.name).toBe('InvalidArgumentsError')
    expect(err.kind).toBe('invalid-arguments')
    expect(err.message).toBe('invalid config: "precision" must be an integer, got the string "x"')
  })

  it('accepts an event with config and arguments as JSON strings (the wire form)', async () => {
    const event = { user: 'alice', config: '{"style": "dad-joke"}', arguments: '{"topic": "cats", "count": "2"}' }
    expect(await echo(event, undefined)).toStrictEqual({
      user: 'alice',
      config: { style: 'dad-joke' },
      arguments: { topic: 'cats', count: 2 },
    })
  })

  it('accepts empty-string config and arguments', async () => {
    const handler = defineToolService({
      async handler(event) {
        return event
      },
    })
    expect(await handler({ config: '', arguments: '' }, undefined)).toStrictEqual({
      user: '',
      config: {},
      arguments: {},
    })
  })

  for (const [label, event, message] of [
    ['a string', 'x', 'request must be a JSON object, got string'],
    ['null', null, 'request must be a JSON object, got null'],
    ['an array', [], 'request must be a JSON object, got array'],
    ['undefined', undefined, 'request must be a JSON object, got undefined'],
  ] as const) {
    it(`refuses ${label} as event with BadRequestError`, async () => {
      const err = await rejection(echo(event, undefined))
      expect(err.name).toBe(BAD_REQUEST_ERROR)
      expect(err.name).toBe('BadRequestError')
      expect(err.kind).toBe('bad-request')
      expect(err.message).toBe(message)
    })
  }

  it('refuses arguments that are not valid JSON with BadRequestError', async () => {
    const err = await rejection(echo({ arguments: '{nope' }, undefined))
    expect(err.name).toBe('BadRequestError')
    expect(err.message).toBe('"arguments" is not valid JSON')
  })

  it('passes the context through to the handler', async () => {
    const handler = defineToolService<{}, {}, { awsRequestId: string }>({
      async handler(_event, context) {
        return context.awsRequestId
      },
    })
    expect(await handler({}, { awsRequestId: 'req-1' })).toBe('req-1')
  })

  it('returns an async iterable of the chunks when the handler is an async generator', async () => {
    const handler = defineToolService({
      arguments: { n: { type: 'integer', default: 3 } },
      async *handler({ arguments: args }) {
        for (let i = 1; i <= args.n; i++) yield `chunk ${i};`
      },
    })
    const result = await handler({ arguments: { n: '2' } }, undefined)
    expect(isChunkStream(result)).toBe(true)
    const chunks: unknown[] = []
    for await (const chunk of result as AsyncIterable<unknown>) chunks.push(chunk)
    expect(chunks).toStrictEqual(['chunk 1;', 'chunk 2;'])
  })

  it('does not take a string, array or plain object result for a chunk stream', async () => {
    expect(isChunkStream('abc')).toBe(false)
    expect(isChunkStream(['a'])).toBe(false)
    expect(isChunkStream({ a: 1 })).toBe(false)
    expect(isChunkStream(null)).toBe(false)
  })

  it('still returns the value when wrapped by middy with a middleware', async () => {
    const seen: unknown[] = []
    const handler = defineToolService({
      config: { style: { type: 'string', default: 'pun' } },
      arguments: { topic: { type: 'string', required: true } },
      async handler({ user, config, arguments: args }) {
        return `Hey ${user}! A ${config.style} about ${args.topic}`
      },
    })
    const wrapped = middy(handler).use({
      before: (request) => {
        seen.push(request.event)
      },
    })
    const event = { user: 'alice', arguments: { topic: 'cats' } }
    expect(await wrapped(event, {} as never)).toBe('Hey alice! A pun about cats')
    expect(seen).toStrictEqual([event])
  })

  it('rejects through middy with the same named error', async () => {
    const wrapped = middy(echo).use({ before: () => {} })
    let thrown: unknown
    try {
      await wrapped({ arguments: {} }, {} as never)
    } catch (err) {
      thrown = err
    }
    expect((thrown as Error).name).toBe('InvalidArgumentsError')
    expect((thrown as Error).message).toBe('invalid arguments: "topic" is required')
  })

  it('serves an argument named like an Object.prototype member (valueOf) with its default', async () => {
    const handler = defineToolService({
      arguments: { valueOf: { type: 'string' as const, default: 'v' } },
      async handler({ arguments: args }) {
        return args
      },
    })
    expect(await handler({ arguments: {} }, undefined)).toStrictEqual({ valueOf: 'v' })
  })

  it('does not pollute Object.prototype through a __proto__ key in wire arguments', async () => {
    const result = (await echo(
      { arguments: '{"topic": "t", "count": "2", "__proto__": {"polluted": true}}' },
      undefined,
    )) as { arguments: Record<string, unknown> }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.getPrototypeOf(result.arguments)).toBe(Object.prototype)
    expect(result.arguments.polluted).toBeUndefined()
    expect(result.arguments.count).toBe(2)
  })
})

describe('checkArguments', () => {
  it('converts without changing the object it was given', () => {
    const values = { n: '5' }
    expect(checkArguments(values, [{ name: 'n', type: 'integer' }])).toStrictEqual({ ok: true, value: { n: 5 } })
    expect(values).toStrictEqual({ n: '5' })
  })

  it('reports only-missing problems so config can become missing-config', () => {
    expect(checkArguments({}, [{ name: 'a', type: 'string', required: true }], 'config')).toStrictEqual({
      ok: false,
      message: 'invalid config: "a" is required',
      onlyMissing: true,
    })
  })

  it('reports a mix of missing and wrong-typed values as not only missing', () => {
    expect(
      checkArguments({ b: 'x' }, [
        { name: 'a', type: 'string', required: true },
        { name: 'b', type: 'number' },
      ]),
    ).toStrictEqual({
      ok: false,
      message: 'invalid arguments: "a" is required; "b" must be a number, got the string "x"',
      onlyMissing: false,
    })
  })

  it('refuses numeric strings that are not exactly numbers', () => {
    for (const value of ['', ' ', '0x10', '1,5', 'Infinity', 'NaN', '1e400', '5abc']) {
      const result = checkArguments({ n: value }, [{ name: 'n', type: 'number' }])
      expect(result.ok, `value ${JSON.stringify(value)}`).toBe(false)
    }
  })

  it('shortens a long offending string in the message', () => {
    const result = checkArguments({ n: 'x'.repeat(50) }, [{ name: 'n', type: 'number' }])
    expect(result).toStrictEqual({
      ok: false,
      message: `invalid arguments: "n" must be a number, got the string "${'x'.repeat(40)}…"`,
      onlyMissing: false,
    })
  })

  it('treats an absent optional argument named like an Object.prototype member as absent', () => {
    // "constructor", "toString", "valueOf" are valid argument names (^[A-Za-z0-9._-]+$).
    expect(
      checkArguments({}, [
        { name: 'constructor', type: 'string' },
        { name: 'toString', type: 'string' },
      ]),
    ).toStrictEqual({ ok: true, value: {} })
  })

  it('refuses an absent required argument named like an Object.prototype member', () => {
    expect(checkArguments({}, [{ name: 'valueOf', type: 'string', required: true }])).toStrictEqual({
      ok: false,
      message: 'invalid arguments: "valueOf" is required',
      onlyMissing: true,
    })
  })
})

describe('lambdaStreaming() on the Lambda runtime', () => {
  type Streamified = (event: unknown, responseStream: Writable, context: unknown) => Promise<void>
  const globals = globalThis as { awslambda?: { streamifyResponse: (fn: Streamified) => Streamified } }

  /**
   * Runs `run` with the global `awslambda` set to `value` (absent when undefined), then puts back
   * what was there: a dependency (the AWS SDK) may have set one of its own in this process.
   */
  function withAwsLambdaGlobal<T>(value: typeof globals.awslambda, run: () => T): T {
    const had = Object.hasOwn(globals, 'awslambda')
    const before = globals.awslambda
    if (value === undefined) delete globals.awslambda
    else globals.awslambda = value
    try {
      return run()
    } finally {
      if (had) globals.awslambda = before
      else delete globals.awslambda
    }
  }

  /** The Node.js runtime's `awslambda.streamifyResponse`, as far as the helper can tell. */
  const onLambda = <T>(run: () => T): T => withAwsLambdaGlobal({ streamifyResponse: (fn) => fn }, run)

  function responseStream() {
    const written: string[] = []
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString())
        done()
      },
    })
    return { stream, written }
  }

  const story = defineToolService({
    arguments: { fail: { type: 'boolean', default: false } },
    async handler({ arguments: args }) {
      return (async function* () {
        yield 'Once '
        yield 'upon a time.'
        if (args.fail) throw new Error('the muse left')
      })()
    },
  })

  it('leaves the handler as it is off Lambda, where there is no awslambda global', () => {
    withAwsLambdaGlobal(undefined, () => {
      expect('awslambda' in globalThis).toBe(false)
      expect(lambdaStreaming(story)).toBe(story)
    })
  })

  it('leaves the handler as it is where an awslambda global has no streamifyResponse', () => {
    withAwsLambdaGlobal({} as typeof globals.awslambda, () => expect(lambdaStreaming(story)).toBe(story))
  })

  it('writes each chunk to the response stream and ends it', async () => {
    const streaming = onLambda(() => lambdaStreaming(story)) as unknown as Streamified
    const { stream, written } = responseStream()
    await streaming({ arguments: {} }, stream, {})
    expect(written).toStrictEqual(['Once ', 'upon a time.'])
    expect(stream.writableFinished).toBe(true)
  })

  it('writes a plain result whole', async () => {
    const plain = defineToolService({ handler: async () => ({ answer: 42 }) })
    const streaming = onLambda(() => lambdaStreaming(plain)) as unknown as Streamified
    const { stream, written } = responseStream()
    await streaming({}, stream, {})
    expect(written).toStrictEqual(['{"answer":42}'])
  })

  it('fails the invocation when the handler throws mid-stream', async () => {
    const streaming = onLambda(() => lambdaStreaming(story)) as unknown as Streamified
    const { stream, written } = responseStream()
    await expect(streaming({ arguments: { fail: true } }, stream, {})).rejects.toThrow('the muse left')
    expect(written).toStrictEqual(['Once ', 'upon a time.'])
    expect(stream.destroyed).toBe(true)
  })

  it('answers the joined chunks when a runtime ignores the streaming mark and calls (event, context), as serverless-offline does', async () => {
    const streaming = onLambda(() => lambdaStreaming(story)) as unknown as (
      event: unknown,
      context: unknown,
    ) => Promise<unknown>
    expect(await streaming({ arguments: {} }, { functionName: 'story', awsRequestId: '1' })).toBe('Once upon a time.')
  })

  it('answers the joined chunks when called with the event alone, or a null second argument', async () => {
    const streaming = onLambda(() => lambdaStreaming(story)) as unknown as (
      event: unknown,
      context?: unknown,
    ) => Promise<unknown>
    expect(await streaming({ arguments: {} })).toBe('Once upon a time.')
    expect(await streaming({ arguments: {} }, null)).toBe('Once upon a time.')
  })

  it('writes no empty chunks: an empty yield or an empty result writes nothing', async () => {
    const sparse = defineToolService({
      handler: async () =>
        (async function* () {
          yield ''
          yield 'a'
          yield ''
          yield 'b'
        })(),
    })
    const streaming = onLambda(() => lambdaStreaming(sparse)) as unknown as Streamified
    const { stream, written } = responseStream()
    await streaming({}, stream, {})
    expect(written).toStrictEqual(['a', 'b'])
    const empty = onLambda(() =>
      lambdaStreaming(defineToolService({ handler: async () => '' })),
    ) as unknown as Streamified
    const nothing = responseStream()
    await empty({}, nothing.stream, {})
    expect(nothing.written).toStrictEqual([])
    expect(nothing.stream.writableFinished).toBe(true)
  })

  it('fails the invocation when the arguments are invalid', async () => {
    const streaming = onLambda(() => lambdaStreaming(story)) as unknown as Streamified
    const { stream } = responseStream()
    await expect(streaming({ arguments: { fail: 'yes' } }, stream, {})).rejects.toMatchObject({
      name: 'InvalidArgumentsError',
    })
  })
})

/**
 * The error tree: every error the project throws is a ToolbridgeError with a
 * kind and a retriable flag, so callers (the retrier, the bridge's publish
 * path, the front doors) can decide by those two alone.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError, isToolbridgeError, messageOf, ToolbridgeError } from '../../shared/errors.ts'
import { encodeResponse, errorResponse, ID_PROPERTY } from '../../shared/protocol.ts'
import { parseQueueName, QueueNameError } from '../../shared/queues.ts'
import { HttpError } from '../../bridge/http/responses.ts'
import { CallerGoneError } from '../../bridge/http/admission.ts'
import { StreamTooLarge } from '../../bridge/invokers/run-handler.ts'
import { createRetry, isRetriable, RetriesExhaustedError, RetryableAttempt } from '../../bridge/support/retry.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { RequestClient, ToolCallError, ToolCallTimeoutError } from '../../bridge/trustgraph/request-client.ts'
import { thrownBy } from '../support/thrown.ts'

describe('messageOf', () => {
  it("is an Error's own message", () => {
    expect(messageOf(new Error('boom'))).toBe('boom')
    expect(messageOf(new ConfigError('serverless.yml', 'no functions'))).toBe('serverless.yml: no functions')
  })

  it('is the value as text for anything else thrown', () => {
    expect(messageOf('a string')).toBe('a string')
    expect(messageOf(42)).toBe('42')
    expect(messageOf(undefined)).toBe('undefined')
    expect(messageOf(null)).toBe('null')
    expect(messageOf({ message: 'not an Error' })).toBe('[object Object]')
  })
})

describe('ToolbridgeError and ConfigError', () => {
  it('carry their name, kind, cause and retriable flag (not retriable unless said)', () => {
    const cause = new Error('socket closed')
    const error = new ToolbridgeError('unavailable', 'broker gone', { cause, retriable: true })
    expect(error).toMatchObject({
      name: 'ToolbridgeError',
      kind: 'unavailable',
      retriable: true,
      message: 'broker gone',
      cause,
    })
    const plain = new ToolbridgeError('crash', 'died')
    expect(plain.retriable).toBe(false)
    expect('cause' in plain).toBe(false)
    expect(new ConfigError('functions.f', 'bad')).toMatchObject({
      name: 'ConfigError',
      kind: 'config',
      retriable: false,
      message: 'functions.f: bad',
    })
  })

  it('isToolbridgeError tells them from other errors', () => {
    expect(isToolbridgeError(new ConfigError('x', 'y'))).toBe(true)
    expect(isToolbridgeError(new ToolbridgeError('timeout', 'late'))).toBe(true)
    expect(isToolbridgeError(new Error('plain'))).toBe(false)
    expect(isToolbridgeError({ kind: 'timeout', retriable: false, message: 'a look-alike' })).toBe(false)
  })
})

describe('each error is a ToolbridgeError with its kind', () => {
  it.each([
    [
      'CallerGoneError: the HTTP caller left before its call was sent, nothing to retry',
      () => new CallerGoneError('caller gone before the call was sent'),
      CallerGoneError,
      { name: 'CallerGoneError', kind: 'unavailable', retriable: false },
    ],
    [
      'StreamTooLarge: a stream past its byte limit is too large',
      () => new StreamTooLarge(1024),
      StreamTooLarge,
      {
        name: 'StreamTooLarge',
        kind: 'too-large',
        retriable: false,
        message: 'the function streamed more than 1024 bytes, the limit of one response',
      },
    ],
    [
      'QueueNameError: a configuration mistake, never retried',
      () => thrownBy(() => parseQueueName('joke')),
      QueueNameError,
      { name: 'QueueNameError', kind: 'config', retriable: false },
    ],
    [
      'ToolCallTimeoutError: a timeout, not retried (the tool may still run)',
      () => new ToolCallTimeoutError('no answer'),
      ToolCallTimeoutError,
      { name: 'ToolCallTimeoutError', kind: 'timeout', retriable: false, message: 'no answer' },
    ],
  ])('%s', (_title, make, type, expected) => {
    const error = make()
    expect(error).toBeInstanceOf(type)
    expect(error).toBeInstanceOf(ToolbridgeError)
    expect(error).toMatchObject(expected)
    expect(isRetriable(error)).toBe(false)
  })

  it("ToolCallError: the wire type's kind, or a function failure for a type that names none", () => {
    const invalid = new ToolCallError('invalid-arguments', '"topic" is required')
    expect(invalid).toBeInstanceOf(ToolbridgeError)
    expect(invalid).toMatchObject({
      name: 'ToolCallError',
      type: 'invalid-arguments',
      kind: 'invalid-arguments',
      retriable: false,
      message: '"topic" is required',
    })
    expect(new ToolCallError('timeout', 'late')).toMatchObject({ type: 'timeout', kind: 'timeout' })
    expect(new ToolCallError('tool-service-error', 'it broke')).toMatchObject({
      type: 'tool-service-error',
      kind: 'function-error',
    })
    expect(new ToolCallError('bad-response', 'not JSON')).toMatchObject({
      type: 'bad-response',
      kind: 'function-error',
    })
    expect(isRetriable(invalid)).toBe(false)
  })

  it('HttpError: a refused request with its status; 413 is too large', () => {
    const notFound = new HttpError(404, 'unknown tool "x"')
    expect(notFound).toBeInstanceOf(ToolbridgeError)
    expect(notFound).toMatchObject({
      name: 'HttpError',
      status: 404,
      kind: 'bad-request',
      retriable: false,
      message: 'unknown tool "x"',
    })
    expect(new HttpError(413, 'request body over 10 bytes')).toMatchObject({ status: 413, kind: 'too-large' })
  })

  it('RetryableAttempt: unavailable and retriable, with the wait it asks for and its cause', () => {
    const cause = new Error('ECONNREFUSED')
    const error = new RetryableAttempt('POST http://x: refused', { cause, retryAfterMs: 1500 })
    expect(error).toBeInstanceOf(ToolbridgeError)
    expect(error).toMatchObject({
      name: 'RetryableAttempt',
      kind: 'unavailable',
      retriable: true,
      retryAfterMs: 1500,
      cause,
    })
    const plain = new RetryableAttempt('throttled')
    expect(plain.retryAfterMs).toBe(0)
    expect(plain.cause).toBeUndefined()
    expect(isRetriable(error)).toBe(true)
  })
})

describe('the retrier goes by the tree', () => {
  const retry = createRetry({ retries: 3, initialRetryTime: 1, maxRetryTime: 2 })

  it('retries a RetryableAttempt until the attempt succeeds', async () => {
    let attempts = 0
    const result = await retry(async () => {
      attempts++
      if (attempts < 3) throw new RetryableAttempt(`attempt ${attempts} throttled`)
      return 'answered'
    })
    expect(result).toBe('answered')
    expect(attempts).toBe(3)
  })

  it('gives up after its retries with the last RetryableAttempt as the cause, keeping its kind', async () => {
    let attempts = 0
    const failure = await retry(async () => {
      attempts++
      throw new RetryableAttempt(`attempt ${attempts} refused`)
    }).catch((err: unknown) => err)
    expect(attempts).toBe(4)
    expect(failure).toBeInstanceOf(RetriesExhaustedError)
    expect(failure).toMatchObject({ kind: 'unavailable', message: 'gave up after 3 retries: attempt 4 refused' })
  })

  it.each([
    ['a ToolCallError', () => new ToolCallError('invalid-arguments', 'bad')],
    ['a ToolCallTimeoutError', () => new ToolCallTimeoutError('late')],
    ['a QueueNameError', () => new QueueNameError('queue "x": bad')],
  ])('does not retry %s', async (_what, make) => {
    let attempts = 0
    const thrown = make()
    const failure = await retry(async () => {
      attempts++
      throw thrown
    }).catch((err: unknown) => err)
    expect(failure).toBe(thrown)
    expect(attempts).toBe(1)
  })
})

describe('a RequestClient rejects with the tree', () => {
  const queues = { requestQueue: 'request:tg:errors-test', responseQueue: 'response:tg:errors-test' }
  const broker = new MemoryBroker()
  const transports: MemoryTransport[] = []
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close()))
  })
  const connected = async () => {
    const transport = new MemoryTransport(broker)
    await transport.connect()
    transports.push(transport)
    return transport
  }

  it("with a ToolCallError of the service's type and kind", async () => {
    const service = await connected()
    await service.subscribe(queues.requestQueue, (delivery) => {
      delivery.ack()
      const id = delivery.properties[ID_PROPERTY] ?? ''
      void service.publish(queues.responseQueue, encodeResponse(errorResponse('missing-config', 'no style')), {
        [ID_PROPERTY]: id,
      })
    })
    const client = new RequestClient(await connected(), queues)
    await client.start()
    try {
      const failure = await client.call({ arguments: {} }).catch((err: unknown) => err)
      expect(failure).toBeInstanceOf(ToolCallError)
      expect(failure).toMatchObject({
        type: 'missing-config',
        kind: 'missing-config',
        retriable: false,
        message: 'no style',
      })
    } finally {
      await client.close()
    }
  })

  it('with a ToolCallTimeoutError when nothing answers', async () => {
    const client = new RequestClient(await connected(), { ...queues, requestQueue: 'request:tg:nobody-listens' })
    await client.start()
    try {
      const failure = await client.call({ arguments: {} }, { timeoutMs: 10 }).catch((err: unknown) => err)
      expect(failure).toBeInstanceOf(ToolCallTimeoutError)
      expect(failure).toMatchObject({ kind: 'timeout', retriable: false })
    } finally {
      await client.close()
    }
  })
})

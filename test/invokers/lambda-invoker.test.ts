/**
 * The Lambda invoker against a fake Lambda endpoint that speaks the real wire
 * format (test/support/fake-lambda.ts): called directly, and through the
 * bridge on the embedded broker. No test asserts on time; waits in the
 * scripts are gates on what the test has seen.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import type { Project } from '../../bridge/project/project.ts'
import { INVOKERS, resolveSettings } from '../../bridge/project/settings.ts'
import type { FunctionTarget, Outcome } from '../../bridge/invokers/invoker.ts'
import {
  LAMBDA_MAX_REQUEST_BYTES,
  LambdaInvoker,
  type LambdaInvokerOptions,
  type OnLambda,
} from '../../bridge/invokers/lambda/lambda-invoker.ts'
import { LocationInvoker } from '../../bridge/invokers/invoker-for-location.ts'
import { createRetry } from '../../bridge/support/retry.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import type { Consumer, Transport } from '../../bridge/transports/transport.ts'
import { ConfigError } from '../../shared/errors.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import {
  decodeResponse,
  encodeRequest,
  ID_PROPERTY,
  type ToolRequest,
  type ToolResponse,
} from '../../shared/protocol.ts'
import { FakeLambda, reply } from '../support/fake-lambda.ts'
import { locatedAt } from '../support/located.ts'

// The SDK must never look for credentials on the network (instance metadata).
process.env.AWS_EC2_METADATA_DISABLED = 'true'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** serverless.yml, as parsed: `echo` answers once, `story` streams. Handlers are never loaded. */
const SERVERLESS = {
  service: 'lambda-fixture',
  provider: { name: 'aws', runtime: 'nodejs24.x', stage: 'test' },
  functions: {
    echo: {
      handler: 'functions/echo.handler',
      toolService: {
        id: 'lambda-echo-service',
        topic: 'lambda-echo',
        timeout: 1,
        tools: [
          {
            name: 'lambda-echo',
            description: 'Echoes',
            arguments: [{ name: 'text', type: 'string', description: 'Any text' }],
          },
        ],
      },
    },
    story: {
      name: 'story-fn',
      handler: 'functions/story.handler',
      toolService: {
        id: 'lambda-story-service',
        topic: 'lambda-story',
        response: 'stream',
        timeout: 1,
        tools: [{ name: 'lambda-story', description: 'Streams' }],
      },
    },
  },
}

const SERVICES = readToolServices(SERVERLESS)
const ECHO = locatedAt(SERVICES.find((s) => s.id === 'lambda-echo-service')!, 'handler')
const STORY = locatedAt(SERVICES.find((s) => s.id === 'lambda-story-service')!, 'handler')
const PROJECT: Project = { baseDir: ROOT, services: SERVICES }

const event = (args: Record<string, unknown> = {}): ToolRequest => ({ user: 'alice', config: {}, arguments: args })

/** Resolves once `condition()` holds; a gate, not a timing assertion. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

let fake: FakeLambda

beforeAll(async () => {
  fake = await FakeLambda.start()
})
afterAll(async () => {
  await fake.close()
})
afterEach(() => fake.reset())

describe('the Lambda function name', () => {
  it('is `name:` when set, else <service>-<stage>-<key> (stage dev by default)', () => {
    expect(ECHO.location.lambdaName).toBe('lambda-fixture-test-echo')
    expect(STORY.location.lambdaName).toBe('story-fn')
    const noStage = { ...SERVERLESS, provider: { name: 'aws' } }
    expect(
      locatedAt(readToolServices(noStage).find((s) => s.functionName === 'echo')!, 'handler').location.lambdaName,
    ).toBe('lambda-fixture-dev-echo')
  })
})

describe('settings for the lambda invoker', () => {
  it('is one of the invokers', () => {
    expect(INVOKERS).toContain('lambda')
  })

  it('uses dummy credentials and us-east-1 for an endpoint when the environment has no credentials', () => {
    const settings = resolveSettings({ invoker: 'lambda', lambdaEndpoint: 'http://localhost:3002' }, {})
    expect(settings.invoker).toBe('lambda')
    expect(settings.lambda).toStrictEqual({
      endpoint: 'http://localhost:3002',
      region: 'us-east-1',
      dummyCredentials: true,
      retryWindowMs: 60_000,
    })
  })

  it('leaves AWS to the standard chain without an endpoint, and takes the endpoint from TOOLBRIDGE_LAMBDA_ENDPOINT', () => {
    expect(resolveSettings({ invoker: 'lambda' }, {}).lambda).toStrictEqual({
      endpoint: undefined,
      region: undefined,
      dummyCredentials: false,
      retryWindowMs: 60_000,
    })
    const fromEnv = resolveSettings(
      {},
      { TOOLBRIDGE_LAMBDA_ENDPOINT: 'http://127.0.0.1:9', AWS_ACCESS_KEY_ID: 'AKIA', AWS_REGION: 'eu-west-1' },
    )
    expect(fromEnv.lambda).toMatchObject({
      endpoint: 'http://127.0.0.1:9',
      region: 'eu-west-1',
      dummyCredentials: false,
    })
    expect(resolveSettings({ lambdaRetryWindow: '5' }, {}).lambda.retryWindowMs).toBe(5000)
  })

  it('refuses an endpoint that is not an http(s) URL', () => {
    expect(() => resolveSettings({ lambdaEndpoint: 'localhost:3002' }, {})).toThrow(ConfigError)
    expect(() => resolveSettings({ lambdaEndpoint: 'ftp://x' }, {})).toThrow(/--lambda-endpoint/)
  })
})

describe('the retrier honours a Retry-After', () => {
  it('waits at least retryAfterMs before the next attempt', async () => {
    const retry = createRetry({ retries: 1, initialRetryTime: 1, maxRetryTime: 1 })
    const waits: number[] = []
    let first = true
    await retry(
      async () => {
        if (first) {
          first = false
          throw Object.assign(new Error('throttled'), { retryAfterMs: 50 })
        }
      },
      { onRetry: (_err, _count, waitMs) => waits.push(waitMs) },
    )
    expect(waits).toStrictEqual([50])
  })
})

describe('LambdaInvoker, called directly', () => {
  let invoker: LambdaInvoker
  const options = (): LambdaInvokerOptions => ({
    endpoint: fake.url,
    region: 'us-east-1',
    dummyCredentials: true,
    retryWindowMs: 500,
    networkRetries: 2,
    retry: { initialRetryTime: 10, maxRetryTime: 50 },
  })

  beforeAll(() => {
    invoker = new LambdaInvoker(options())
  })
  afterAll(async () => {
    await invoker.close()
  })

  async function invoke(
    target: FunctionTarget<OnLambda>,
    args: Record<string, unknown> = {},
  ): Promise<{ outcome: Outcome; chunks: string[] }> {
    const chunks: string[] = []
    const outcome = await invoker.invoke({ target, event: event(args), onChunk: (text) => chunks.push(text) })
    return { outcome, chunks }
  }

  it('prepares without calling anything', async () => {
    expect(await invoker.prepare(ECHO)).toBeUndefined()
    expect(fake.calls).toHaveLength(0)
  })

  it('says so when preparing without a region', async () => {
    vi.stubEnv('AWS_REGION', undefined)
    vi.stubEnv('AWS_PROFILE', undefined)
    vi.stubEnv('AWS_CONFIG_FILE', join(tmpdir(), `no-aws-config-${randomUUID()}`))
    const regionless = new LambdaInvoker({ ...options(), region: undefined })
    try {
      expect(await regionless.prepare(ECHO)).toMatch(/no AWS region.*AWS_REGION/)
    } finally {
      vi.unstubAllEnvs()
      await regionless.close()
    }
  })

  it('calls the deployed name with the event as payload, and a string result is the text', async () => {
    fake.script(ECHO.location.lambdaName, reply.result('Hey alice'))
    const { outcome } = await invoke(ECHO, { text: 'hi' })
    expect(outcome).toStrictEqual({ ok: true, text: 'Hey alice' })
    expect(fake.calls).toHaveLength(1)
    expect(fake.calls[0]!.streaming).toBe(false)
    expect(JSON.parse(fake.calls[0]!.payload.toString())).toStrictEqual(event({ text: 'hi' }))
  })

  it('answers any other JSON value with its JSON text', async () => {
    fake.script(ECHO.location.lambdaName, reply.result({ a: 1, b: [true, null] }), reply.result(42), reply.result(null))
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: '{"a":1,"b":[true,null]}' })
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: '42' })
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: 'null' })
  })

  it('turns a FunctionError into errorType and errorMessage, without the trace', async () => {
    fake.script(
      ECHO.location.lambdaName,
      reply.functionError('TypeError', 'x is undefined'),
      reply.functionError('Error', 'boom', 'Handled'),
    )
    const unhandled = await invoke(ECHO)
    expect(unhandled.outcome).toStrictEqual({ ok: false, kind: 'function-error', message: 'TypeError: x is undefined' })
    expect(JSON.stringify(unhandled.outcome)).not.toContain('secretFrame')
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: false, kind: 'function-error', message: 'boom' })
    expect(fake.calls).toHaveLength(2) // a function's own error is never retried
  })

  it("keeps the authoring helper's error kinds (invalid arguments, missing config)", async () => {
    fake.script(
      ECHO.location.lambdaName,
      reply.functionError('InvalidArgumentsError', '"text" must be a string'),
      reply.functionError('MissingConfigError', 'no "style"'),
    )
    expect((await invoke(ECHO)).outcome).toStrictEqual({
      ok: false,
      kind: 'invalid-arguments',
      message: '"text" must be a string',
    })
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: false, kind: 'missing-config', message: 'no "style"' })
  })

  it('abandons a call its caller cancels, and tries no more after a cancellation', async () => {
    fake.script(ECHO.location.lambdaName, reply.hang())
    const cancelled = new AbortController()
    setTimeout(() => cancelled.abort(), 100)
    const outcome = await invoker.invoke({
      target: ECHO,
      event: event({}),
      onChunk: () => {},
      signal: cancelled.signal,
    })
    expect(outcome).toStrictEqual({
      ok: false,
      kind: 'unavailable',
      message: `the call to "${ECHO.location.lambdaName}" was cancelled by its caller and abandoned`,
    })
    expect(fake.calls).toHaveLength(1)
    fake.reset()
    const gone = AbortSignal.abort()
    expect(await invoker.invoke({ target: ECHO, event: event({}), onChunk: () => {}, signal: gone })).toMatchObject({
      ok: false,
      kind: 'unavailable',
    })
    fake.script(ECHO.location.lambdaName, reply.throttle())
    const throttled = new AbortController()
    setTimeout(() => throttled.abort(), 30)
    const gaveUp = await invoker.invoke({ target: ECHO, event: event({}), onChunk: () => {}, signal: throttled.signal })
    expect(gaveUp).toMatchObject({ ok: false, kind: 'unavailable' })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const calls = fake.calls.length
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(fake.calls.length).toBe(calls) // no attempt after the cancellation
  })

  it("reports Lambda's own timeout (Task timed out) as a timeout", async () => {
    fake.script(
      ECHO.location.lambdaName,
      reply.runtimeError('Sandbox.Timedout', 'RequestId: 1 Error: Task timed out after 1.00 seconds'),
    )
    expect((await invoke(ECHO)).outcome).toMatchObject({ ok: false, kind: 'timeout' })
  })

  it("reports Lambda's refusal of a result over 6 MB as too-large", async () => {
    fake.script(
      ECHO.location.lambdaName,
      reply.runtimeError(
        'Function.ResponseSizeTooLarge',
        'Response payload size exceeded maximum allowed payload size (6291556 bytes).',
      ),
    )
    expect((await invoke(ECHO)).outcome).toMatchObject({ ok: false, kind: 'too-large' })
  })

  it('retries throttling (429) and then answers', async () => {
    fake.script(ECHO.location.lambdaName, reply.throttle(), reply.throttle(0), reply.result('at last'))
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: 'at last' })
    expect(fake.calls).toHaveLength(3)
  })

  it('gives up with an error once throttling outlasts the retry window', async () => {
    fake.script(ECHO.location.lambdaName, reply.throttle())
    const { outcome } = await invoke(ECHO)
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(outcome.ok || outcome.message).toMatch(/throttled.*TooManyRequestsException/)
    expect(fake.calls.length).toBeGreaterThan(1)
  })

  it('honours retryAfterSeconds: one past the window ends the retries at once', async () => {
    fake.script(ECHO.location.lambdaName, reply.throttle(3600), reply.result('never asked'))
    const { outcome } = await invoke(ECHO)
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(fake.calls).toHaveLength(1)
  })

  it("retries Lambda's 5xx, with a JSON or an HTML body", async () => {
    fake.script(ECHO.location.lambdaName, reply.serviceError(500), reply.serviceError(502), reply.result('fine'))
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: 'fine' })
    expect(fake.calls).toHaveLength(3)
  })

  it('gives up on 5xx past the window', async () => {
    fake.script(ECHO.location.lambdaName, reply.serviceError(503))
    const { outcome } = await invoke(ECHO)
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(outcome.ok || outcome.message).toMatch(/failing.*HTTP 503/)
  })

  it('retries a reset connection a bounded number of times, then answers with an error', async () => {
    fake.script(ECHO.location.lambdaName, reply.reset())
    const { outcome } = await invoke(ECHO)
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(outcome.ok || outcome.message).toMatch(/3 network failures/)
    expect(fake.calls).toHaveLength(3) // networkRetries: 2
  })

  it('recovers from one reset connection', async () => {
    fake.script(ECHO.location.lambdaName, reply.reset(), reply.result('again'))
    expect((await invoke(ECHO)).outcome).toStrictEqual({ ok: true, text: 'again' })
  })

  it('answers with an error when nothing listens at the endpoint', async () => {
    const nowhere = new LambdaInvoker({ ...options(), endpoint: 'http://127.0.0.1:9' })
    try {
      const outcome = await nowhere.invoke({ target: ECHO, event: event(), onChunk: () => {} })
      expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
      expect(outcome.ok || outcome.message).toMatch(/ECONNREFUSED/)
    } finally {
      await nowhere.close()
    }
  })

  it('does not retry a missing function', async () => {
    const { outcome } = await invoke({ ...ECHO, location: { ...ECHO.location, lambdaName: 'no-such-function' } })
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(outcome.ok || outcome.message).toMatch(/ResourceNotFoundException/)
    expect(fake.calls).toHaveLength(1)
  })

  it("refuses a request over Lambda's 6 MB limit without calling", async () => {
    fake.script(ECHO.location.lambdaName, reply.result('should not be called'))
    const { outcome } = await invoke(ECHO, { text: 'x'.repeat(LAMBDA_MAX_REQUEST_BYTES) })
    expect(outcome).toMatchObject({ ok: false, kind: 'too-large' })
    expect(outcome.ok || outcome.message).toMatch(/was not called/)
    expect(fake.calls).toHaveLength(0)
  })

  it('times out a call that outlives the function timeout, without retrying it', async () => {
    fake.script(ECHO.location.lambdaName, reply.hang())
    const { outcome } = await invoke({ ...ECHO, timeoutMs: 200 })
    expect(outcome).toStrictEqual({
      ok: false,
      kind: 'timeout',
      message: 'function "lambda-fixture-test-echo" timed out after 200 ms',
    })
    expect(fake.calls).toHaveLength(1)
  })

  it('streams: InvokeWithResponseStream, each PayloadChunk handed on as it arrives', async () => {
    const chunks: string[] = []
    fake.script(
      STORY.location.lambdaName,
      reply.stream(['Once ', 'upon ', () => until(() => chunks.length === 2), 'a time.']),
    )
    const outcome = await invoker.invoke({ target: STORY, event: event(), onChunk: (text) => chunks.push(text) })
    expect(outcome).toStrictEqual({ ok: true, text: '' })
    expect(chunks).toStrictEqual(['Once ', 'upon ', 'a time.'])
    expect(fake.calls[0]!.streaming).toBe(true)
  })

  it('streams a character split across two PayloadChunks whole', async () => {
    const bytes = Buffer.from('é…')
    fake.script(
      STORY.location.lambdaName,
      reply.stream([bytes.subarray(0, 1), bytes.subarray(1, 3), bytes.subarray(3)]),
    )
    const { outcome, chunks } = await invoke(STORY)
    expect(outcome.ok).toBe(true)
    expect(chunks.join('')).toBe('é…')
  })

  it('ends with an error after the chunks when InvokeComplete has an ErrorCode', async () => {
    fake.script(STORY.location.lambdaName, reply.stream(['one ', 'two '], { code: 'Error', details: 'the muse left' }))
    const { outcome, chunks } = await invoke(STORY)
    expect(chunks).toStrictEqual(['one ', 'two '])
    expect(outcome).toStrictEqual({ ok: false, kind: 'function-error', message: 'the muse left' })
  })

  it('reads ErrorDetails given as Lambda error JSON, dropping its trace', async () => {
    const details = JSON.stringify({
      errorType: 'RangeError',
      errorMessage: 'too far',
      trace: ['RangeError: too far', '    at secretFrame'],
    })
    fake.script(STORY.location.lambdaName, reply.stream(['x'], { code: 'Unhandled', details }))
    const { outcome } = await invoke(STORY)
    expect(outcome).toStrictEqual({ ok: false, kind: 'function-error', message: 'RangeError: too far' })
  })

  it('retries a throttled stream before it starts', async () => {
    fake.script(STORY.location.lambdaName, reply.throttle(), reply.stream(['ok']))
    const { outcome, chunks } = await invoke(STORY)
    expect(outcome.ok).toBe(true)
    expect(chunks).toStrictEqual(['ok'])
    expect(fake.calls).toHaveLength(2)
  })

  it('never retries a stream that broke off after chunks went out', async () => {
    const chunks: string[] = []
    // The connection drops once the first chunk has been handed on.
    fake.script(
      STORY.location.lambdaName,
      { type: 'stream', steps: ['half ', () => until(() => chunks.length === 1)], complete: false },
      reply.stream(['whole']),
    )
    const outcome = await invoker.invoke({ target: STORY, event: event(), onChunk: (text) => chunks.push(text) })
    expect(chunks).toStrictEqual(['half '])
    expect(outcome).toMatchObject({ ok: false, kind: 'unavailable' })
    expect(outcome.ok || outcome.message).toMatch(/broke off/)
    expect(fake.calls).toHaveLength(1)
  })

  it('times out a stream that stalls', async () => {
    fake.script(STORY.location.lambdaName, reply.stream(['start ', () => new Promise(() => {})]))
    const { outcome, chunks } = await invoke({ ...STORY, timeoutMs: 200 })
    expect(chunks).toStrictEqual(['start '])
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout' })
  })

  it('falls back to Invoke, for good, on an endpoint without InvokeWithResponseStream (serverless-offline)', async () => {
    const offline = new LambdaInvoker(options())
    try {
      fake.script(STORY.location.lambdaName, (call) =>
        call.streaming ? reply.notFound() : reply.result('the whole story'),
      )
      const chunks: string[] = []
      const first = await offline.invoke({ target: STORY, event: event(), onChunk: (text) => chunks.push(text) })
      expect(first).toStrictEqual({ ok: true, text: 'the whole story' })
      expect(chunks).toStrictEqual([])
      expect(await offline.invoke({ target: STORY, event: event(), onChunk: () => {} })).toMatchObject({ ok: true })
      expect(fake.calls.map((c) => c.streaming)).toStrictEqual([true, false, false])
    } finally {
      await offline.close()
    }
  })

  it('ends calls in flight when closed', async () => {
    const closing = new LambdaInvoker(options())
    fake.script(ECHO.location.lambdaName, reply.hang())
    const pending = closing.invoke({ target: { ...ECHO, timeoutMs: 30_000 }, event: event(), onChunk: () => {} })
    await until(() => fake.calls.length === 1)
    await closing.close()
    expect(await pending).toMatchObject({ ok: false, kind: 'unavailable' })
  })
})

/** Every response message for an id, as bytes and decoded. */
class ResponseTap {
  private readonly seen = new Map<string, { raw: string; response: ToolResponse }[]>()
  private consumer: Consumer | undefined

  static async open(transport: Transport, queue: string): Promise<ResponseTap> {
    const tap = new ResponseTap()
    tap.consumer = await transport.subscribe(queue, (delivery) => {
      delivery.ack()
      const id = delivery.properties[ID_PROPERTY] ?? '(none)'
      const decoded = decodeResponse(delivery.body)
      if (!decoded.ok) throw new Error(decoded.message)
      let list = tap.seen.get(id)
      if (!list) tap.seen.set(id, (list = []))
      list.push({ raw: Buffer.from(delivery.body).toString(), response: decoded.value })
    })
    return tap
  }

  messages(id: string) {
    return this.seen.get(id) ?? []
  }

  async ended(id: string) {
    await until(() => this.messages(id).some((m) => m.response.end_of_stream))
    return this.messages(id)
  }

  close() {
    return this.consumer?.close()
  }
}

describe('the bridge with the lambda invoker, on the embedded broker', () => {
  let runtime: Runtime
  let client: Transport
  const taps = new Map<string, ResponseTap>()

  beforeAll(async () => {
    const settings = resolveSettings(
      { invoker: 'lambda', port: 'off', lambdaEndpoint: fake.url, lambdaRetryWindow: '1', drainTimeout: '1' },
      {}, // no AWS credentials: dummy ones, region us-east-1
    )
    runtime = await startRuntime(PROJECT, settings, { memoryBroker: new MemoryBroker() })
    client = await runtime.connectClient()
    for (const spec of SERVICES) taps.set(spec.id, await ResponseTap.open(client, spec.responseQueue))
  })
  afterAll(async () => {
    await Promise.all([...taps.values()].map((tap) => tap.close()))
    await runtime?.stop()
  })

  async function request(spec: ToolServiceSpec, args: Record<string, unknown> = {}, id = randomUUID()) {
    await client.publish(spec.requestQueue, encodeRequest({ user: 'alice', config: {}, arguments: args }), {
      [ID_PROPERTY]: id,
    })
    return taps.get(spec.id)!.ended(id)
  }

  const only = (messages: { response: ToolResponse }[]) => {
    expect(messages).toHaveLength(1)
    return messages[0]!.response
  }

  it('answers with the string result in one message', async () => {
    fake.script(ECHO.location.lambdaName, reply.result('Hey alice'))
    expect(only(await request(ECHO, { text: 'hi' }))).toStrictEqual({
      error: null,
      response: 'Hey alice',
      end_of_stream: true,
    })
    expect(JSON.parse(fake.calls[0]!.payload.toString())).toStrictEqual(event({ text: 'hi' }))
  })

  it('answers with the JSON text of any other value', async () => {
    fake.script(ECHO.location.lambdaName, reply.result({ sum: 3 }))
    expect(only(await request(ECHO))).toStrictEqual({ error: null, response: '{"sum":3}', end_of_stream: true })
  })

  it('sends a FunctionError as error type and message, with no trace on the wire', async () => {
    fake.script(ECHO.location.lambdaName, reply.functionError('Oops', 'bad input'))
    const messages = await request(ECHO)
    expect(only(messages)).toStrictEqual({
      error: { type: 'tool-service-error', message: 'Oops: bad input' },
      response: '',
      end_of_stream: true,
    })
    expect(messages[0]!.raw).not.toMatch(/trace|secretFrame|handler\.mjs/)
  })

  it('sends invalid arguments reported by the function with their own type', async () => {
    fake.script(ECHO.location.lambdaName, reply.functionError('InvalidArgumentsError', '"text" must be a string'))
    expect(only(await request(ECHO)).error).toStrictEqual({
      type: 'invalid-arguments',
      message: '"text" must be a string',
    })
  })

  it('retries throttling, then answers', async () => {
    fake.script(ECHO.location.lambdaName, reply.throttle(), reply.result('after the storm'))
    expect(only(await request(ECHO)).response).toBe('after the storm')
    expect(fake.calls).toHaveLength(2)
  })

  it('answers with an error once throttling outlasts the window', async () => {
    fake.script(ECHO.location.lambdaName, reply.throttle())
    const response = only(await request(ECHO))
    expect(response.error?.type).toBe('unavailable')
    expect(response.error?.message).toMatch(/throttled/)
  })

  it('retries 5xx, then answers', async () => {
    fake.script(ECHO.location.lambdaName, reply.serviceError(502), reply.result('recovered'))
    expect(only(await request(ECHO)).response).toBe('recovered')
  })

  it('answers with an error after a bounded number of network failures', async () => {
    fake.script(ECHO.location.lambdaName, reply.reset())
    const response = only(await request(ECHO))
    expect(response.error?.type).toBe('unavailable')
    expect(fake.calls).toHaveLength(3)
  })

  it('answers a call past the function timeout with a timeout error', async () => {
    fake.script(ECHO.location.lambdaName, reply.hang())
    expect(only(await request(ECHO)).error).toStrictEqual({
      type: 'timeout',
      message: 'function "lambda-fixture-test-echo" timed out after 1000 ms',
    })
  })

  it('streams each PayloadChunk as its own message, in order, as it arrives, then end_of_stream', async () => {
    const id = randomUUID()
    const tap = taps.get(STORY.id)!
    // The fake holds back the rest until the first two chunks are on the response queue.
    fake.script(
      STORY.location.lambdaName,
      reply.stream(['Once ', 'upon ', () => until(() => tap.messages(id).length === 2), 'a time.']),
    )
    const messages = await request(STORY, {}, id)
    expect(messages.map((m) => m.response)).toStrictEqual([
      { error: null, response: 'Once ', end_of_stream: false },
      { error: null, response: 'upon ', end_of_stream: false },
      { error: null, response: 'a time.', end_of_stream: false },
      { error: null, response: '', end_of_stream: true },
    ])
  })

  it('sends an InvokeComplete ErrorCode as an error after the chunks', async () => {
    fake.script(STORY.location.lambdaName, reply.stream(['one ', 'two '], { code: 'Error', details: 'the muse left' }))
    const messages = await request(STORY)
    expect(messages.map((m) => m.response)).toStrictEqual([
      { error: null, response: 'one ', end_of_stream: false },
      { error: null, response: 'two ', end_of_stream: false },
      { error: { type: 'tool-service-error', message: 'the muse left' }, response: '', end_of_stream: true },
    ])
  })
})

describe('the bridge refuses a request over 6 MB for Lambda', () => {
  /** The embedded broker stops at 5 MB; RabbitMQ carries 128 MB, so the bridge must stop it first. */
  class RoomyTransport extends MemoryTransport {
    override readonly maxMessageBytes = 16 * 1024 * 1024
  }

  let bridge: Bridge
  let client: RoomyTransport
  let tap: ResponseTap

  beforeAll(async () => {
    const broker = new MemoryBroker()
    bridge = createBridge({
      transport: new RoomyTransport(broker),
      invoker: new LocationInvoker({
        settings: resolveSettings({ invoker: 'lambda', lambdaEndpoint: fake.url }, {}),
        baseDir: ROOT,
      }),
      services: [ECHO],
    })
    await bridge.start()
    client = new RoomyTransport(broker)
    await client.connect()
    tap = await ResponseTap.open(client, ECHO.responseQueue)
  })
  afterAll(async () => {
    await tap?.close()
    await client?.close()
    await bridge?.stop()
  })

  it('with a too-large error, without calling the function', async () => {
    fake.script(ECHO.location.lambdaName, reply.result('should not be called'))
    const id = randomUUID()
    const big = encodeRequest({ config: {}, arguments: { text: 'x'.repeat(LAMBDA_MAX_REQUEST_BYTES + 1) } })
    await client.publish(ECHO.requestQueue, big, { [ID_PROPERTY]: id })
    const messages = await tap.ended(id)
    expect(messages).toHaveLength(1)
    expect(messages[0]!.response.error?.type).toBe('too-large')
    expect(fake.calls).toHaveLength(0)
  })
})

describe('toolbridge invoke --invoker lambda --lambda-endpoint', () => {
  let dir: string

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-lambda-'))
    writeFileSync(join(dir, 'serverless.yml'), toYaml(SERVERLESS))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('calls the function on the endpoint with no AWS credentials in the environment', async () => {
    fake.script(ECHO.location.lambdaName, (call) =>
      reply.result(`you said ${JSON.parse(call.payload.toString()).arguments.text}`),
    )
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_') && !key.startsWith('AWS_')),
    )
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          join(ROOT, 'bridge/cli/main.ts'),
          '-c',
          join(dir, 'serverless.yml'),
          'invoke',
          'lambda-echo',
          '-a',
          'text=hello',
          '--invoker',
          'lambda',
          '--lambda-endpoint',
          fake.url,
        ],
        { env: { ...env, AWS_EC2_METADATA_DISABLED: 'true' }, timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      )
    })
    expect(run.stderr).toBe('toolbridge: via an embedded bridge in this process (lambda invoker)\n')
    expect(run).toMatchObject({ code: 0, stdout: 'you said hello\n' })
    expect(fake.callsTo(ECHO.location.lambdaName)).toHaveLength(1)
  })
})

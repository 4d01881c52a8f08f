/**
 * What a function can do to the bridge from the inside, with real worker
 * threads (and in process where it says so): flood a stream, outgrow its
 * memorySize on or off the heap, read the bridge's secrets, fail after it
 * returned, end its thread between invocations, live outside the project.
 * Assertions are on answers and counts, never on durations.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBridge } from '../../bridge/core/bridge.ts'
import { LocationInvoker } from '../../bridge/invokers/invoker-for-location.ts'
import { DEFAULT_MAX_STREAM_BYTES, resolveHandler } from '../../bridge/invokers/run-handler.ts'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings, type Settings } from '../../bridge/project/settings.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { silentLogger, type Logger } from '../../bridge/support/logger.ts'
import { RequestClient } from '../../bridge/trustgraph/request-client.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import type { Transport } from '../../bridge/transports/transport.ts'
import { ConfigError } from '../../shared/errors.ts'
import { decodeResponse, encodeRequest, ID_PROPERTY, type ToolResponse } from '../../shared/protocol.ts'
import { handler as joke } from '../../functions/joke/handler.ts'
import { chunkOf } from '../fixtures/hardening/functions/flood.ts'
import { callError } from '../support/call-error.ts'

const HARDENING_YML = fileURLToPath(new URL('../fixtures/hardening/serverless.yml', import.meta.url))
const OUTSIDE_YML = fileURLToPath(new URL('../fixtures/hardening/outside/serverless.yml', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 30_000
const MB = 1024 * 1024

const project = loadProject(HARDENING_YML)
const settings = (overrides: Partial<Settings> = {}): Settings => ({
  ...resolveSettings({ invoker: 'worker-threads', port: 'off' }, {}),
  ...overrides,
})

function service(id: string, from: Project = project): ToolServiceSpec {
  const spec = from.services.find((s) => s.id === id)
  if (!spec) throw new Error(`no tool service "${id}" in the fixture`)
  return spec
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await sleep(10)
}

/**
 * Counts turns of this thread's event loop, and the highest RSS seen on
 * them, until stopped: a loop starved by messages counts none.
 */
function watchEventLoop() {
  let turns = 0
  let peakRss = process.memoryUsage.rss()
  let watching = true
  const turn = () => {
    if (!watching) return
    turns++
    peakRss = Math.max(peakRss, process.memoryUsage.rss())
    setImmediate(turn)
  }
  setImmediate(turn)
  return {
    get turns() {
      return turns
    },
    stop() {
      watching = false
      return { turns, peakRss }
    },
  }
}

interface Streamed {
  bytes: number
  messages: number
  /** The chunks joined, when asked to keep them. */
  text: string
  last: ToolResponse
}

/** Sends one request and reads its answer off the response queue, counting bytes and messages as they come. */
async function streamFrom(
  transport: Transport,
  spec: ToolServiceSpec,
  args: Record<string, unknown>,
  keep = false,
): Promise<Streamed> {
  const id = randomUUID()
  const pieces: string[] = []
  let bytes = 0
  let messages = 0
  let end: (last: ToolResponse) => void = () => {}
  const ended = new Promise<ToolResponse>((resolve) => (end = resolve))
  const consumer = await transport.subscribe(spec.responseQueue, (delivery) => {
    delivery.ack()
    if (delivery.properties[ID_PROPERTY] !== id) return
    const decoded = decodeResponse(delivery.body)
    if (!decoded.ok)
      return end({
        error: { type: '(undecodable response)', message: decoded.message },
        response: '',
        end_of_stream: true,
      })
    messages++
    bytes += decoded.value.response.length
    if (keep) pieces.push(decoded.value.response)
    if (decoded.value.end_of_stream) end(decoded.value)
  })
  try {
    await transport.publish(spec.requestQueue, encodeRequest({ arguments: args }), { [ID_PROPERTY]: id })
    const last = await ended
    return { bytes, messages, text: pieces.join(''), last }
  } finally {
    await consumer.close()
  }
}

/** A runtime on the embedded broker with a RequestClient per service. */
class Harness {
  runtime!: Runtime
  transport!: Transport
  private readonly clients = new Map<string, Promise<RequestClient>>()

  async start(
    overrides: Partial<Settings> = {},
    logger: Logger = silentLogger,
    from: Project = project,
  ): Promise<this> {
    this.runtime = await startRuntime(from, settings(overrides), { logger })
    this.transport = await this.runtime.connectClient()
    return this
  }

  call(serviceId: string, args: Record<string, unknown> = {}): Promise<string> {
    let client = this.clients.get(serviceId)
    if (!client) {
      const created = new RequestClient(this.transport, service(serviceId))
      client = created.start().then(() => created)
      this.clients.set(serviceId, client)
    }
    return client.then((c) => c.call({ arguments: args }, { timeoutMs: CALL_TIMEOUT_MS }))
  }

  async stop(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.then((client) => client.close())))
    await this.runtime?.stop()
  }
}

describe('a stream that floods the bridge from a worker thread', () => {
  const bridge = new Harness()
  beforeAll(() => bridge.start())
  afterAll(() => bridge.stop())

  it('is cut at the stream byte limit with too-large, and the main thread keeps turning meanwhile', async () => {
    const rssBefore = process.memoryUsage.rss()
    const loop = watchEventLoop()
    const streamed = await streamFrom(bridge.transport, service('flood-service'), {})
    const { turns, peakRss } = loop.stop()
    expect(streamed.last.error).toMatchObject({ type: 'too-large' })
    expect(streamed.last.error!.message).toContain(`more than ${DEFAULT_MAX_STREAM_BYTES} bytes`)
    expect(streamed.bytes).toBeLessThanOrEqual(DEFAULT_MAX_STREAM_BYTES)
    expect(streamed.bytes).toBeGreaterThan(DEFAULT_MAX_STREAM_BYTES / 2)
    // The loop turned while the stream ran (how often depends on the machine's speed, so only that it did).
    expect(turns).toBeGreaterThan(1)
    expect(peakRss - rssBefore).toBeLessThan(512 * MB)
    // The environment survived: a short stream from it is whole.
    const short = await streamFrom(bridge.transport, service('flood-service'), { count: 3, size: 4 }, true)
    expect(short.text).toBe('000000010002')
  })

  it('delivers 100,000 chunks of 100 bytes whole and in order, letting the event loop turn while it does', async () => {
    const loop = watchEventLoop()
    const streamed = await streamFrom(bridge.transport, service('flood-service'), { count: 100_000, size: 100 }, true)
    const { turns } = loop.stop()
    expect(streamed.last.error).toBeNull()
    const expected = Array.from({ length: 100_000 }, (_, i) => chunkOf(i, 100)).join('')
    expect(streamed.text.length).toBe(expected.length)
    expect(streamed.text === expected).toBe(true) // not toBe(): a failure would print 10 MB
    // Chunks were joined: far fewer messages than chunks.
    expect(streamed.messages).toBeLessThan(100_000)
    expect(turns).toBeGreaterThan(1)
  })
})

describe('a stream that floods for ever, with no byte limit', () => {
  const broker = new MemoryBroker()
  const flood = service('flood-service')
  const transport = new MemoryTransport(broker)
  const bridge = createBridge({
    transport: new MemoryTransport(broker),
    invoker: new LocationInvoker({
      settings: resolveSettings({ invoker: 'worker-threads', maxStreamBytes: String(2 ** 40) }, {}),
      baseDir: project.baseDir,
    }),
    services: [flood],
  })
  beforeAll(async () => {
    await bridge.start()
    await transport.connect()
  })
  afterAll(async () => {
    await bridge.stop()
    await transport.close()
  })

  it('gets a timeout answer once its timeout is over, its worker replaced, with the event loop turning and memory bounded', async () => {
    const rssBefore = process.memoryUsage.rss()
    const loop = watchEventLoop()
    const streamed = await streamFrom(transport, flood, {})
    const { turns, peakRss } = loop.stop()
    expect(streamed.last.error).toMatchObject({ type: 'timeout' })
    expect(streamed.last.error!.message).toBe('function "flood" timed out after 4000 ms')
    expect(streamed.bytes).toBeGreaterThan(0)
    expect(turns).toBeGreaterThan(100)
    expect(peakRss - rssBefore).toBeLessThan(512 * MB)
    const short = await streamFrom(transport, flood, { count: 2, size: 3 }, true)
    expect(short.text).toBe('000001')
  })
})

describe('the in-process invoker and a stream', () => {
  const invoker = new LocationInvoker({
    settings: resolveSettings({ invoker: 'in-process' }, {}),
    baseDir: project.baseDir,
  })
  afterAll(() => invoker.close())

  it('cuts a stream that never awaits at the byte limit', async () => {
    let bytes = 0
    const outcome = await invoker.invoke({
      target: service('flood-service'),
      event: { arguments: {} },
      onChunk: (text) => (bytes += text.length),
    })
    expect(outcome).toMatchObject({ ok: false, kind: 'too-large' })
    expect(bytes).toBeLessThanOrEqual(DEFAULT_MAX_STREAM_BYTES)
  })

  it('closes a timed-out stream (its finally runs) instead of letting it run for ever', async () => {
    const chunks: string[] = []
    const outcome = await invoker.invoke({
      target: service('ticker-service'),
      event: { arguments: {} },
      onChunk: (text) => chunks.push(text),
    })
    expect(outcome).toEqual({ ok: false, kind: 'timeout', message: 'function "ticker" timed out after 1000 ms' })
    const state = async () => {
      const answer = await invoker.invoke({ target: service('ticker-state-service'), event: {}, onChunk: () => {} })
      if (!answer.ok) throw new Error(answer.message)
      return JSON.parse(answer.text) as { ticks: number; closed: boolean }
    }
    await until(async () => (await state()).closed)
    const { ticks } = await state()
    await sleep(200) // ten ticks' worth, were it still running
    expect(await state()).toEqual({ ticks, closed: true })
  })
})

describe('memorySize in worker threads', () => {
  const bridge = new Harness()
  beforeAll(async () => {
    // What NODE_OPTIONS=--max-old-space-size=2048 does to the process: V8 lets it override every worker's limit.
    setFlagsFromString('--max-old-space-size=2048')
    await bridge.start()
  })
  afterAll(() => bridge.stop())

  it('is the heap limit whatever --max-old-space-size says, and the crash message tells the limit V8 applied', async () => {
    const error = await callError(bridge.call('heap-hog-service'))
    expect(error.type).toBe('tool-service-error')
    const match = /^function "heap-hog" crashed: it ran out of memory \(memorySize 64 MB, heap limit (\d+) MB\)$/.exec(
      error.message,
    )
    expect(match, error.message).not.toBeNull()
    expect(Number(match![1])).toBeGreaterThanOrEqual(64)
    expect(Number(match![1])).toBeLessThan(96) // 64 MB old space and a small young generation
  })

  it('bounds Buffer memory kept after an invocation: the environment is replaced with an error naming both sizes', async () => {
    const first = await bridge.call('buffers-service', { mb: 64 })
    expect(first).toMatch(/^holds 64 MiB in thread \d+$/)
    expect(await bridge.call('buffers-service', { mb: 64 })).toBe(first) // the same environment, under its memorySize
    const error = await callError(bridge.call('buffers-service', { mb: 256 }))
    expect(error.type).toBe('tool-service-error')
    expect(error.message).toMatch(
      /^function "buffers" crashed: it ran out of memory \(25[6-9] MB of Buffer\/ArrayBuffer memory kept after the invocation; memorySize 128 MB\)$/,
    )
    const after = await bridge.call('buffers-service', { mb: 64 })
    expect(after).toMatch(/^holds 64 MiB in thread \d+$/)
    expect(after).not.toBe(first)
  })
})

describe("a function's environment variables in worker threads", () => {
  const SECRETS: Record<string, string> = {
    TOOLBRIDGE_HTTP_TOKEN: 'http-token-secret',
    TOOLBRIDGE_MCP_TOKEN: 'mcp-token-secret',
    TOOLBRIDGE_BROKER: 'amqp://user:password-secret@broker:5672',
    PULSAR_TOKEN: 'pulsar-token-secret',
    AWS_ACCESS_KEY_ID: 'AKIA-secret',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    ONLY_THIS: 'from-the-bridge',
  }
  const saved = Object.fromEntries(Object.keys(SECRETS).map((name) => [name, process.env[name]]))
  const bridge = new Harness()
  beforeAll(async () => {
    Object.assign(process.env, SECRETS)
    await bridge.start()
  })
  afterAll(async () => {
    await bridge.stop()
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })

  it("are the provider's and its own environment: from serverless.yml, none of the bridge's tokens, URLs or credentials", async () => {
    expect(JSON.parse(await bridge.call('envdump-service'))).toEqual({
      AWS_LAMBDA_FUNCTION_NAME: 'toolbridge-hardening-dev-envdump',
      ONLY_THIS: 'visible-on-lambda',
      OVERRIDDEN: 'by-the-function',
      PROVIDER_WIDE: 'from-the-provider',
    })
  })

  it('take ${env:NAME} from the bridge only where serverless.yml asks for it, and refuse an unset one', () => {
    const yml = (value: string) => ({
      functions: {
        f: {
          handler: 'f.handler',
          environment: { KEY: value },
          toolService: { id: 's', topic: 't', tools: [{ name: 't', description: 'd' }] },
        },
      },
    })
    expect(readToolServices(yml('pre-${env:PULSAR_TOKEN}'))[0]!.environment).toEqual({ KEY: 'pre-pulsar-token-secret' })
    expect(() => readToolServices(yml('${env:TOOLBRIDGE_NOT_SET_ANYWHERE}'))).toThrow(ConfigError)
    expect(() => readToolServices(yml('${env:TOOLBRIDGE_NOT_SET_ANYWHERE}'))).toThrow(/functions\.f\.environment\.KEY/)
  })
})

describe('worker threads between invocations', () => {
  const warnings: string[] = []
  const logger: Logger = { ...silentLogger, warn: (_fields, message) => void warnings.push(message) }
  const bridge = new Harness()
  beforeAll(() => bridge.start({}, logger))
  afterAll(() => bridge.stop())

  it('log a worker that ended between invocations, and the next invocation gets a new one', async () => {
    const before = await bridge.call('exits-later-service', { exit: true })
    await until(() => warnings.some((w) => w.includes('exits-later')))
    expect(warnings).toContainEqual(
      'function "exits-later": a worker thread ended between invocations (its worker exited with code 7); the next invocation starts a new one',
    )
    const after = await bridge.call('exits-later-service')
    expect(after).toMatch(/^thread \d+$/)
    expect(after).not.toBe(before)
  })
})

describe('a handler outside the project directory', () => {
  const outside = loadProject(OUTSIDE_YML)
  const bridge = new Harness()
  beforeAll(() => bridge.start({ port: 0 }, silentLogger, outside))
  afterAll(() => bridge.stop())

  it('is refused with a clear error, by path and by absolute path', () => {
    expect(() => resolveHandler(outside.baseDir, '../functions/envdump.handler')).toThrow(
      /outside the project directory/,
    )
    expect(() => resolveHandler(outside.baseDir, `${project.baseDir}/functions/envdump.handler`)).toThrow(
      /outside the project directory/,
    )
    expect(resolveHandler(project.baseDir, 'functions/envdump.handler').exportName).toBe('handler')
  })

  it('leaves the bridge not ready (/readyz 503) and its calls unavailable', async () => {
    const url = bridge.runtime.gateway!.url
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    expect((await fetch(`${url}/readyz`)).status).toBe(503)
    const client = new RequestClient(bridge.transport, service('outside-service', outside))
    await client.start()
    try {
      const error = await callError(client.call({ arguments: {} }, { timeoutMs: CALL_TIMEOUT_MS }))
      expect(error.type).toBe('unavailable')
      expect(error.message).toMatch(/outside the project directory/)
    } finally {
      await client.close()
    }
  })
})

describe('the joke example', () => {
  it.each(['constructor', '__proto__'])('tells the default joke for the topic "%s"', async (topic) => {
    const text = await joke({ user: 'alice', config: { style: 'pun' }, arguments: { topic } }, undefined)
    expect(text).toBe(
      `Hey alice! Here's a pun for you:\n\nI would tell you a joke about ${topic}, but it is still in the pun-ding stage.`,
    )
  })
})

/**
 * The bridge end to end on the embedded broker: serverless.yml -> runtime ->
 * bytes on the request queue -> function -> bytes on the response queue.
 * Every case runs with both invokers, except those that only worker threads
 * can survive (a function that never yields, or exits its thread).
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { encodeRequest, ID_PROPERTY, UNKNOWN_ID, type ToolResponse } from '../../shared/protocol.ts'
import { RequestClient, type CallOptions, type ToolCall } from '../../bridge/trustgraph/request-client.ts'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { LOCAL_INVOKERS, resolveSettings, type InvokerKind, type Settings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import {
  MEMORY_MAX_MESSAGE_BYTES,
  MemoryBroker,
  MemoryTransport,
} from '../../bridge/transports/memory/memory-transport.ts'
import type { Consumer, Delivery, Transport } from '../../bridge/transports/transport.ts'
import { bigText } from '../fixtures/faults/functions/big.ts'
import { callError } from '../support/call-error.ts'
import { readResponse } from '../support/response-tap.ts'

const FAULTS_YML = fileURLToPath(new URL('../fixtures/faults/serverless.yml', import.meta.url))
const EXAMPLES_YML = fileURLToPath(new URL('../../serverless.yml', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 20_000

const utf8 = new TextEncoder()

const settingsFor = (invoker: InvokerKind, overrides: Partial<Settings> = {}): Settings => ({
  ...resolveSettings({ invoker, port: 'off' }, {}),
  ...overrides,
})

function service(project: Project, id: string): ToolServiceSpec {
  const spec = project.services.find((s) => s.id === id)
  if (!spec) throw new Error(`no tool service "${id}" in the fixture`)
  return spec
}

/** Resolves once `condition()` holds, checking on every turn of the event loop. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

/** A private subscriber on a response queue that keeps every message it sees, by id. */
class ResponseTap {
  private readonly seen = new Map<string, { bytes: number; response: ToolResponse }[]>()
  private readonly waiters = new Set<() => void>()
  private consumer: Consumer | undefined

  static async open(transport: Transport, queue: string): Promise<ResponseTap> {
    const tap = new ResponseTap()
    tap.consumer = await transport.subscribe(queue, (delivery) => tap.take(delivery))
    return tap
  }

  private take(delivery: Delivery): void {
    delivery.ack()
    const { id, response } = readResponse(delivery)
    let list = this.seen.get(id)
    if (!list) this.seen.set(id, (list = []))
    list.push({ bytes: delivery.body.byteLength, response })
    for (const waiter of [...this.waiters]) waiter()
  }

  messages(id: string) {
    return this.seen.get(id) ?? []
  }

  /** Every message for `id` up to the one with `end_of_stream: true`. */
  ended(id: string) {
    return new Promise<{ bytes: number; response: ToolResponse }[]>((resolve) => {
      const check = () => {
        const list = this.messages(id)
        if (list.some((m) => m.response.end_of_stream)) {
          this.waiters.delete(check)
          resolve(list)
        }
      }
      this.waiters.add(check)
      check()
    })
  }

  async close(): Promise<void> {
    await this.consumer?.close()
  }
}

/** Starts a runtime and hands out one started RequestClient per tool service. */
class Harness {
  readonly project: Project
  readonly broker = new MemoryBroker()
  runtime!: Runtime
  transport!: Transport
  private readonly clients = new Map<string, Promise<RequestClient>>()

  constructor(project: Project) {
    this.project = project
  }

  async start(settings: Settings): Promise<this> {
    this.runtime = await startRuntime(this.project, settings, { memoryBroker: this.broker })
    this.transport = await this.runtime.connectClient()
    return this
  }

  client(serviceId: string): Promise<RequestClient> {
    let client = this.clients.get(serviceId)
    if (!client) {
      const created = new RequestClient(this.transport, service(this.project, serviceId))
      client = created.start().then(() => created)
      this.clients.set(serviceId, client)
    }
    return client
  }

  /** Calls a tool service with its first tool's config, as an agent would. */
  async call(
    serviceId: string,
    args: Record<string, unknown> = {},
    options: CallOptions & Omit<ToolCall, 'arguments'> = {},
  ) {
    const spec = service(this.project, serviceId)
    const client = await this.client(serviceId)
    const { user, config, ...callOptions } = options
    return client.call(
      { user, config: config ?? spec.tools[0]!.config, arguments: args },
      { timeoutMs: CALL_TIMEOUT_MS, ...callOptions },
    )
  }

  async stream(serviceId: string, args: Record<string, unknown> = {}, options: Omit<ToolCall, 'arguments'> = {}) {
    const chunks: string[] = []
    const text = await this.call(serviceId, args, { ...options, onChunk: (chunk) => chunks.push(chunk) })
    return { chunks, text }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.then((client) => client.close())))
    await this.runtime.stop()
  }
}

const STACK_LINE = /^\s*at /m

/** Every service of a project with several invocations per worker thread. */
const sharingWorkers = (project: Project, invocationsPerWorker: number): Project => ({
  ...project,
  services: project.services.map((spec) => ({ ...spec, invocationsPerWorker })),
})

const VARIANTS = [
  ...LOCAL_INVOKERS.map((invoker) => ({ name: `the ${invoker} invoker`, invoker, perWorker: 1 })),
  { name: 'worker threads running 4 invocations each', invoker: 'worker-threads' as const, perWorker: 4 },
]

describe.each(VARIANTS)('the bridge with $name', ({ invoker, perWorker }) => {
  /** Worker threads can be terminated; the in-process invoker cannot survive a blocked loop or process.exit. */
  const isolated = invoker === 'worker-threads'
  const faults = new Harness(sharingWorkers(loadProject(FAULTS_YML), perWorker))
  const examples = new Harness(sharingWorkers(loadProject(EXAMPLES_YML), perWorker))

  beforeAll(async () => {
    await Promise.all([faults.start(settingsFor(invoker)), examples.start(settingsFor(invoker))])
  })
  afterAll(async () => {
    await Promise.all([faults.stop(), examples.stop()])
  })

  describe('answers', () => {
    it('answers a single-message service with the JSON of what the function returned', async () => {
      const text = await faults.call('echo-service', { text: 'hello', n: '42' }, { user: 'alice' })
      expect(JSON.parse(text)).toEqual({ user: 'alice', config: {}, arguments: { text: 'hello', n: 42 } })
    })

    it('gives a streaming client every chunk in order and their concatenation', async () => {
      const { chunks, text } = await faults.stream('chunks-service', { count: 5 })
      expect(chunks).toEqual(['chunk 1;', 'chunk 2;', 'chunk 3;', 'chunk 4;', 'chunk 5;'])
      expect(text).toBe(chunks.join(''))
    })

    it('gives a non-streaming client of a streaming service the first message only', async () => {
      expect(await faults.call('chunks-service', { count: 5 })).toBe('chunk 1;')
    })

    it('answers tell-joke with the joke-service greeting and the joke', async () => {
      const text = await examples.call('joke-service', { topic: 'programming' }, { user: 'alice' })
      expect(text).toBe(
        "Hey alice! Here's a pun for you:\n\nI told my computer a joke about UDP. I am not sure it got it.",
      )
    })

    it('streams tell-story sentence by sentence', async () => {
      const { chunks, text } = await examples.stream('story-service', { hero: 'Ada' })
      expect(chunks.length).toBe(5)
      expect(chunks[0]).toBe('Once upon a time, Ada lived in a small town by the sea.')
      expect(text).toBe(chunks.join(''))
      expect(text).toMatch(/ The path led through a forest where the trees whispered old names\.$/)
    })

    it('answers 100 requests in flight at once, each under its own id', async () => {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => faults.call('echo-service', { text: `request ${i}`, n: i })),
      )
      answers.forEach((text, i) => {
        expect(JSON.parse(text).arguments).toEqual({ text: `request ${i}`, n: i })
      })
    })
  })

  describe('bad requests', () => {
    let tap: ResponseTap
    let configTap: ResponseTap
    beforeAll(async () => {
      tap = await ResponseTap.open(faults.transport, service(faults.project, 'echo-service').responseQueue)
      configTap = await ResponseTap.open(
        faults.transport,
        service(faults.project, 'needs-config-service').responseQueue,
      )
    })
    afterAll(async () => {
      await tap.close()
      await configTap.close()
    })

    const echo = () => service(faults.project, 'echo-service')
    const valid = (args: object) => encodeRequest({ user: 'alice', config: {}, arguments: args })
    const oversized = () => {
      const text = 'x'.repeat(MEMORY_MAX_MESSAGE_BYTES)
      return utf8.encode(JSON.stringify({ user: 'alice', arguments: JSON.stringify({ text }) }))
    }

    const cases: {
      name: string
      serviceId: string
      body: () => Uint8Array
      withId?: boolean
      /** Publish on the broker itself, past the client transport's own size check. */
      direct?: boolean
      type: string
      message?: RegExp
    }[] = [
      {
        name: 'malformed JSON',
        serviceId: 'echo-service',
        body: () => utf8.encode('{"user": "alice", '),
        type: 'bad-request',
        message: /JSON/,
      },
      {
        name: 'invalid UTF-8',
        serviceId: 'echo-service',
        body: () => new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        type: 'bad-request',
        message: /UTF-8/,
      },
      {
        name: 'a body that is not an object',
        serviceId: 'echo-service',
        body: () => utf8.encode('["user", "alice"]'),
        type: 'bad-request',
        message: /object/,
      },
      {
        name: 'arguments that do not encode an object',
        serviceId: 'echo-service',
        body: () => utf8.encode('{"arguments": "[1, 2]"}'),
        type: 'bad-request',
        message: /arguments/,
      },
      {
        name: 'a missing required config param',
        serviceId: 'needs-config-service',
        body: () => encodeRequest({ config: {}, arguments: {} }),
        type: 'missing-config',
        message: /region/,
      },
      {
        name: 'an argument of the wrong type',
        serviceId: 'echo-service',
        body: () => valid({ n: 'not a number' }),
        type: 'invalid-arguments',
        message: /"n" must be an integer/,
      },
      {
        name: 'a request over the message size limit',
        serviceId: 'echo-service',
        body: oversized,
        direct: true,
        type: 'too-large',
        message: /request/,
      },
    ]

    it.each(cases)('answers $name with one $type error that ends the stream, and keeps serving', async (c) => {
      const spec = service(faults.project, c.serviceId)
      const responses = c.serviceId === 'echo-service' ? tap : configTap
      const id = randomUUID()
      const body = c.body()
      if (c.direct) faults.broker.publish(spec.requestQueue, body, { [ID_PROPERTY]: id })
      else await faults.transport.publish(spec.requestQueue, body, { [ID_PROPERTY]: id })

      const [only] = await responses.ended(id)
      expect(only!.response).toMatchObject({ error: { type: c.type }, response: '', end_of_stream: true })
      if (c.message) expect(only!.response.error!.message).toMatch(c.message)

      // The bridge still answers, and sent nothing more for the bad request meanwhile.
      const text = await faults.call(c.serviceId, c.serviceId === 'echo-service' ? { text: 'after' } : {})
      expect(text).toMatch(c.serviceId === 'echo-service' ? /"after"/ : /^region eu-west-1$/)
      expect(responses.messages(id)).toHaveLength(1)
    })

    it('answers a request without an id property under the id "unknown"', async () => {
      await faults.transport.publish(echo().requestQueue, valid({ text: 'anonymous' }), {})
      const messages = await tap.ended(UNKNOWN_ID)
      expect(messages).toHaveLength(1)
      expect(messages[0]!.response.error).toBeNull()
      expect(JSON.parse(messages[0]!.response.response).arguments).toEqual({ text: 'anonymous' })
    })

    it('serves a required config param the request does carry', async () => {
      expect(await faults.call('needs-config-service')).toBe('region eu-west-1')
    })
  })

  describe('functions that fail', () => {
    it('answers a function that throws with tool-service-error, its message and no stack trace', async () => {
      const error = await callError(faults.call('throws-service'))
      expect(error.type).toBe('tool-service-error')
      expect(error.message).toContain('boom')
      expect(error.message).not.toMatch(STACK_LINE)
    })

    it('answers a function that never settles with a timeout', async () => {
      const error = await callError(faults.call('hangs-service'))
      expect(error.type).toBe('timeout')
      expect(error.message).not.toMatch(STACK_LINE)
    })

    it.runIf(isolated)('answers a function that blocks its thread with a timeout and replaces the worker', async () => {
      const before = await faults.call('loops-service', { loop: false })
      expect(before).toMatch(/^alive in thread \d+$/)
      const error = await callError(faults.call('loops-service', { loop: true }))
      expect(error.type).toBe('timeout')
      const after = await faults.call('loops-service', { loop: false })
      expect(after).toMatch(/^alive in thread \d+$/)
      expect(after).not.toBe(before)
    })

    it.runIf(isolated)('answers a function that calls process.exit with an error and replaces the worker', async () => {
      const before = await faults.call('crashes-service', { exit: false })
      const error = await callError(faults.call('crashes-service', { exit: true }))
      expect(error.type).toBe('tool-service-error')
      expect(error.message).toMatch(/exit|crash/)
      expect(error.message).not.toMatch(STACK_LINE)
      const after = await faults.call('crashes-service', { exit: false })
      expect(after).toMatch(/^alive in thread \d+$/)
      expect(after).not.toBe(before)
    })

    it.runIf(isolated)(
      'answers a function that outgrows its memorySize with an error and replaces the worker',
      async () => {
        const before = await faults.call('hogs-memory-service', { hog: false })
        const error = await callError(faults.call('hogs-memory-service', { hog: true }))
        expect(error.type).toBe('tool-service-error')
        // The heap limit is the one V8 applied, as the worker measured it: memorySize and a small young generation.
        expect(error.message).toMatch(
          /^function "hogs-memory" crashed: it ran out of memory \(memorySize 64 MB, heap limit (6[4-9]|[78]\d) MB\)$/,
        )
        const after = await faults.call('hogs-memory-service', { hog: false })
        expect(after).toMatch(/^alive in thread \d+$/)
        expect(after).not.toBe(before)
      },
    )

    it.runIf(isolated)('answers a function whose timer throws an uncaught exception with an error', async () => {
      const error = await callError(faults.call('crashes-later-service'))
      expect(error.type).toBe('tool-service-error')
      expect(error.message).toContain('uncaught later')
      expect(error.message).not.toMatch(STACK_LINE)
      // and the next call gets the same answer from a fresh environment
      expect((await callError(faults.call('crashes-later-service'))).message).toContain('uncaught later')
    })

    it('keeps module state between invocations of one environment', async () => {
      const counts: string[] = []
      for (let i = 0; i < 3; i++) counts.push(await faults.call('counter-service'))
      expect(counts).toEqual(['1', '2', '3'])
    })
  })

  describe('large answers', () => {
    let bigTap: ResponseTap
    beforeAll(async () => {
      bigTap = await ResponseTap.open(faults.transport, service(faults.project, 'big-stream-service').responseQueue)
    })
    afterAll(async () => {
      await bigTap.close()
    })

    it('refuses a single-message answer over the message limit with too-large', async () => {
      const error = await callError(faults.call('big-service', { bytes: MEMORY_MAX_MESSAGE_BYTES + 1000 }))
      expect(error.type).toBe('too-large')
      expect(error.message).toMatch(/stream/)
    })

    it('sends a large answer of a streaming service in chunks under the limit that join to the whole text', async () => {
      const bytes = 2 * MEMORY_MAX_MESSAGE_BYTES + 12_345
      const spec = service(faults.project, 'big-stream-service')
      const id = randomUUID()
      await faults.transport.publish(spec.requestQueue, encodeRequest({ arguments: { bytes } }), { [ID_PROPERTY]: id })
      const messages = await bigTap.ended(id)
      expect(messages.length).toBeGreaterThanOrEqual(3)
      for (const m of messages) {
        expect(m.response.error).toBeNull()
        expect(m.bytes).toBeLessThanOrEqual(MEMORY_MAX_MESSAGE_BYTES)
      }
      expect(messages.map((m) => m.response.end_of_stream)).toEqual([...messages.slice(1).map(() => false), true])
      const text = messages.map((m) => m.response.response).join('')
      expect(text.length).toBe(bytes)
      expect(text === bigText(bytes)).toBe(true) // not toBe(): a failure would print 10 MB
    })
  })

  describe('shutdown', () => {
    // Only the slow service: a runtime starts (and stops) faster with one pool of workers.
    const loaded = loadProject(FAULTS_YML)
    const slow = service(loaded, 'slow-service')
    const project: Project = { ...loaded, services: [slow] }
    const started: Runtime[] = []
    const transports: Transport[] = []
    afterEach(async () => {
      await Promise.all(started.splice(0).map((r) => r.stop()))
      await Promise.all(transports.splice(0).map((t) => t.close()))
    })

    async function transportOn(broker: MemoryBroker) {
      const transport = new MemoryTransport(broker)
      await transport.connect()
      transports.push(transport)
      return transport
    }
    async function clientOn(transport: Transport) {
      const client = new RequestClient(transport, slow)
      await client.start()
      return client
    }
    const sleepers = (client: RequestClient, n: number, ms: number) =>
      Promise.allSettled(
        Array.from({ length: n }, (_, i) =>
          client.call({ arguments: { ms, tag: `#${i}` } }, { timeoutMs: CALL_TIMEOUT_MS }),
        ),
      )
    const outcomes = (settled: PromiseSettledResult<string>[]) =>
      settled.map((s) =>
        s.status === 'fulfilled' ? s.value : `${(s.reason as Error).name}: ${(s.reason as Error).message}`,
      )
    const expected = (n: number, ms: number) => Array.from({ length: n }, (_, i) => `slept ${ms} ms #${i}`)

    it('answers every request in flight before stop() resolves', async () => {
      const broker = new MemoryBroker()
      const runtime = await startRuntime(project, settingsFor(invoker), { memoryBroker: broker })
      const answers = sleepers(await clientOn(await transportOn(broker)), 6, 300)
      await until(() => runtime.bridge.inFlight === 6)
      await runtime.stop()
      expect(runtime.bridge.inFlight).toBe(0)
      expect(outcomes(await answers)).toEqual(expected(6, 300))
    })

    it('answers requests in flight to a client of the runtime itself (connectClient) on stop()', async () => {
      const broker = new MemoryBroker()
      const runtime = await startRuntime(project, settingsFor(invoker), { memoryBroker: broker })
      const client = await clientOn(await runtime.connectClient())
      const answers = sleepers(client, 3, 300)
      await until(() => runtime.bridge.inFlight === 3)
      await runtime.stop()
      // stop() closed the client's transport: whatever has not arrived by now never will.
      await client.close()
      expect(outcomes(await answers)).toEqual(expected(3, 300))
    })

    it('answers HTTP callers of the gateway whose requests are in flight on stop()', async () => {
      const broker = new MemoryBroker()
      const runtime = await startRuntime(project, settingsFor(invoker, { port: 0 }), { memoryBroker: broker })
      const calls = [0, 1, 2].map((i) =>
        fetch(`${runtime.gateway!.url}/tools/slow`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ arguments: { ms: 300, tag: `#${i}` } }),
        }).then(
          async (res) => (await res.text()).trimEnd().split('\n').at(-1),
          (err: Error) => `fetch failed: ${err.message}`,
        ),
      )
      await until(() => runtime.bridge.inFlight === 3)
      await runtime.stop()
      const lastLines = await Promise.all(calls)
      expect(lastLines).toEqual(expected(3, 300).map((text) => JSON.stringify({ response: text })))
    })

    it('gives back requests still running when the drain timeout ends, and only another bridge answers them', async () => {
      const broker = new MemoryBroker()
      const stopping = await startRuntime(project, settingsFor(invoker, { drainTimeoutMs: 0 }), {
        memoryBroker: broker,
      })
      const staying = await startRuntime(project, settingsFor(invoker), { memoryBroker: broker })
      started.push(staying)
      const transport = await transportOn(broker)
      const tap = await ResponseTap.open(transport, slow.responseQueue)
      const ids = Array.from({ length: 6 }, () => randomUUID())
      for (const [i, id] of ids.entries()) {
        await transport.publish(slow.requestQueue, encodeRequest({ arguments: { ms: 1000, tag: `#${i}` } }), {
          [ID_PROPERTY]: id,
        })
      }
      // Both bridges share the work; stop one while it holds some of it.
      await until(() => stopping.bridge.inFlight + staying.bridge.inFlight === ids.length)
      expect(stopping.bridge.inFlight).toBeGreaterThan(0)
      await stopping.stop()
      expect(stopping.bridge.inFlight).toBe(0)

      const answers = await Promise.all(ids.map((id) => tap.ended(id)))
      // The first message is what a TrustGraph client keeps: it must be the answer, not an error from the stopped bridge.
      expect(answers.map((messages) => messages[0]!.response)).toEqual(
        expected(ids.length, 1000).map((text) => ({ error: null, response: text, end_of_stream: true })),
      )
      await staying.stop() // nothing more can be published for these ids
      started.splice(0)
      expect(ids.map((id) => tap.messages(id).length)).toEqual(ids.map(() => 1))
    })
  })
})

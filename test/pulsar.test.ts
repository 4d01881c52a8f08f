/**
 * The bridge and the project's own Pulsar client on a real Pulsar
 * (scripts/pulsar.sh; the tests skip in one line without a JDK and Maven):
 * the example tools, bad requests, load, competing replicas, a topic unload
 * and a broker restart mid-load, flow control on non-persistent topics, and
 * batched, compressed messages written by another client (TrustGraph's own
 * native Python client). Waits are fail-safes, never assertions on time;
 * measured recovery times are printed.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { ToolbridgeError } from '../shared/errors.ts'
import { encodeRequest, ID_PROPERTY } from '../shared/protocol.ts'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { loadProject, resolveSettings, type Project, type Settings } from '../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../bridge/runtime.ts'
import { PulsarTransport } from '../bridge/transports/pulsar/pulsar-transport.ts'
import { PulsarClient, PulsarError, type Message } from '../lib/pulsar-client/index.ts'
import type { Delivery, Transport } from '../bridge/transports/transport.ts'
import { pulsarRunnable, pulsarScript, startPulsar, unloadTopic, type PulsarBroker } from './support/pulsar.ts'
import { TRUSTGRAPH_VENV, trustgraphInstalled } from './support/trustgraph.ts'
import { metricValue } from './support/metrics.ts'
import { ResponseTap, waitFor } from './support/response-tap.ts'

const run = promisify(execFile)
const EXAMPLES_YML = fileURLToPath(new URL('../serverless.yml', import.meta.url))
const FIXTURE_YML = fileURLToPath(new URL('./fixtures/brokers/pulsar.yml', import.meta.url))
const CALCULATOR = fileURLToPath(new URL('../functions/calculator/handler.ts', import.meta.url))
const BATCH_PRODUCER = fileURLToPath(new URL('./interop/pulsar_batch_producer.py', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 20_000

const utf8 = new TextEncoder()
const runnable = pulsarRunnable()

function service(project: Project, id: string): ToolServiceSpec {
  const spec = project.services.find((s) => s.id === id)
  if (!spec) throw new Error(`no tool service "${id}"`)
  return spec
}

function asReplica(project: Project, exportName: string): Project {
  return {
    ...project,
    services: project.services.map((s) => (s.id === 'pulsar-replica-service' ? { ...s, handler: `handlers.${exportName}` } : s)),
  }
}



describe.skipIf(!runnable)('the bridge on Pulsar', () => {
  let broker: PulsarBroker
  let settings: Settings
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(FIXTURE_YML)
  const cleanups: (() => Promise<unknown> | unknown)[] = []

  beforeAll(async () => {
    broker = await startPulsar()
    settings = resolveSettings({ broker: broker.url, port: 'off' }, {})
  })
  afterAll(async () => {
    await broker?.stop()
  })
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  async function runtime(project: Project): Promise<Runtime> {
    const started = await startRuntime(project, settings)
    cleanups.push(() => started.stop())
    return started
  }

  async function transport(options: ConstructorParameters<typeof PulsarTransport>[1] = {}): Promise<PulsarTransport> {
    const created = new PulsarTransport(broker.url, options)
    await created.connect()
    cleanups.push(() => created.close())
    return created
  }

  async function client(on: Transport, spec: { requestQueue: string; responseQueue: string }): Promise<RequestClient> {
    const created = new RequestClient(on, spec)
    await created.start()
    cleanups.push(() => created.close())
    return created
  }

  async function pulsarClient(): Promise<PulsarClient> {
    const created = new PulsarClient({ serviceUrl: broker.url })
    await created.connect()
    cleanups.push(() => created.close())
    return created
  }

  describe('the example tools', () => {
    let bridge: Runtime
    let clientTransport: Transport
    beforeAll(async () => {
      bridge = await startRuntime(examples, settings)
      clientTransport = await bridge.connectClient()
    })
    afterAll(async () => {
      await bridge?.stop()
    })

    const call = async (serviceId: string, args: Record<string, unknown>, user?: string) => {
      const spec = service(examples, serviceId)
      const c = await client(clientTransport, spec)
      return c.call({ user, config: spec.tools[0]!.config, arguments: args }, { timeoutMs: CALL_TIMEOUT_MS })
    }

    it('answers tell-joke in one message with the greeting and the joke', async () => {
      expect(await call('joke-service', { topic: 'cats' }, 'alice')).toBe(
        "Hey alice! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.",
      )
    })

    it('streams tell-story chunk by chunk, and only the last message ends the stream', async () => {
      const spec = service(examples, 'story-service')
      const tap = await ResponseTap.open(clientTransport, spec.responseQueue, CALL_TIMEOUT_MS)
      cleanups.push(() => tap.close())
      const id = randomUUID()
      await clientTransport.publish(spec.requestQueue, encodeRequest({ config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 } }), {
        [ID_PROPERTY]: id,
      })
      const messages = await tap.ended(id)
      const chunks = messages.map((m) => m.response.response).filter((text) => text !== '')
      expect(chunks).toEqual([
        'Once upon a time, Ada lived in a small town by the sea.',
        ' Every morning, Ada looked at the horizon and wondered what lay beyond it.',
        ' One day a stranger arrived with a map that nobody in a small town by the sea could read.',
      ])
      expect(messages.map((m) => m.response.end_of_stream)).toEqual([...messages.slice(1).map(() => false), true])
      expect(messages.every((m) => m.response.error === null)).toBe(true)
    })

    it('gives a streaming client of tell-story the chunks and their concatenation', async () => {
      const spec = service(examples, 'story-service')
      const c = await client(clientTransport, spec)
      const chunks: string[] = []
      const text = await c.call(
        { config: { pace: 5 }, arguments: { hero: 'Bo' } },
        { timeoutMs: CALL_TIMEOUT_MS, onChunk: (chunk) => chunks.push(chunk) },
      )
      expect(chunks).toHaveLength(5)
      expect(text).toBe(chunks.join(''))
    })

    it.runIf(existsSync(CALCULATOR))('answers calculate exactly', async () => {
      expect(await call('calculator-service', { expression: '0.1+0.2' })).toBe('0.3')
    })

    it('serves clients that spell the queues as Pulsar URIs: the same topics', async () => {
      const c = await client(clientTransport, {
        requestQueue: 'non-persistent://tg/request/joke',
        responseQueue: 'non-persistent://tg/response/joke',
      })
      const text = await c.call({ config: { style: 'one-liner' }, arguments: { topic: 'music' } }, { timeoutMs: CALL_TIMEOUT_MS })
      expect(text).toBe("Hey there! Here's a one-liner for you:\n\nMusic is the only thing I am not afraid to face the music about.")
    })

    it('puts the answer on the wire as raw JSON bytes with the id as a Pulsar property, no schema', async () => {
      const raw = await pulsarClient()
      const received: Message[] = []
      await raw.subscribe({ topic: 'non-persistent://tg/response/joke', subscription: `wire-${randomUUID()}`, listener: (m) => (m.ack(), received.push(m)) })
      const producer = await raw.createProducer({ topic: 'non-persistent://tg/request/joke' })
      await producer.send(encodeRequest({ config: { style: 'pun' }, arguments: { topic: 'cats' } }), { properties: { id: 'tg-wire-1' } })
      await waitFor('the answer', () => received.some((m) => m.properties.id === 'tg-wire-1'), CALL_TIMEOUT_MS)
      const answer = received.find((m) => m.properties.id === 'tg-wire-1')!
      expect(answer.properties).toEqual({ id: 'tg-wire-1' })
      // Byte for byte what Python's json.dumps writes for TrustGraph's ToolServiceResponse.
      expect(Buffer.from(answer.payload).toString('utf8')).toBe(
        '{"error": null, "response": "Hey there! Here\'s a pun for you:\\n\\nWhat do you call a pile of cats? A meowtain.", "end_of_stream": true}',
      )
    })

    it('answers 500 requests in flight at once, each under its own id', async () => {
      const spec = service(examples, 'joke-service')
      const c = await client(clientTransport, spec)
      const started = performance.now()
      const answers = await Promise.all(
        Array.from({ length: 500 }, (_, i) => c.call({ arguments: { topic: `topic ${i}` } }, { timeoutMs: CALL_TIMEOUT_MS })),
      )
      const seconds = (performance.now() - started) / 1000
      answers.forEach((text, i) => expect(text).toContain(`a joke about topic ${i},`))
      console.info(`Pulsar: 500 tell-joke calls in flight answered in ${seconds.toFixed(2)} s (worker threads starting included)`)
    })
  })

  describe('bad requests, as on the embedded broker', () => {
    let clientTransport: Transport
    let replicaTap: ResponseTap
    let strictTap: ResponseTap
    const replica = service(fixtures, 'pulsar-replica-service')
    const strict = service(fixtures, 'pulsar-strict-service')
    let bridge: Runtime
    beforeAll(async () => {
      bridge = await startRuntime(fixtures, settings)
      clientTransport = await bridge.connectClient()
      replicaTap = await ResponseTap.open(clientTransport, replica.responseQueue, CALL_TIMEOUT_MS)
      strictTap = await ResponseTap.open(clientTransport, strict.responseQueue, CALL_TIMEOUT_MS)
    })
    afterAll(async () => {
      await bridge?.stop()
    })

    it.each([
      { name: 'malformed JSON', spec: replica, body: () => utf8.encode('{"arguments": '), type: 'bad-request', message: /JSON/ },
      { name: 'a body that is not an object', spec: replica, body: () => utf8.encode('[1, 2]'), type: 'bad-request', message: /object/ },
      { name: 'a missing required config param', spec: strict, body: () => encodeRequest({ arguments: { n: 1 } }), type: 'missing-config', message: /region/ },
      { name: 'an argument of the wrong type', spec: replica, body: () => encodeRequest({ arguments: { n: 'one' } }), type: 'invalid-arguments', message: /"n"/ },
      { name: 'a missing required argument', spec: replica, body: () => encodeRequest({ arguments: {} }), type: 'invalid-arguments', message: /"n"/ },
    ])('answers $name with one $type error that ends the stream, and keeps serving', async ({ spec, body, type, message }) => {
      const tap = spec === strict ? strictTap : replicaTap
      const id = randomUUID()
      await clientTransport.publish(spec.requestQueue, body(), { [ID_PROPERTY]: id })
      const [only, ...more] = await tap.ended(id)
      expect(more).toEqual([])
      expect(only!.response.error?.type).toBe(type)
      expect(only!.response.error?.message).toMatch(message)
      expect(only!.response.end_of_stream).toBe(true)
      const c = await client(clientTransport, replica)
      expect(await c.call({ arguments: { n: 7 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:7')
    })

    it('answers a request without an id under the id "unknown"', async () => {
      await clientTransport.publish(replica.requestQueue, encodeRequest({ arguments: { n: 3 } }), {})
      const [only] = await replicaTap.ended('unknown')
      expect(only!.response.response).toBe('A:3')
    })
  })

  describe('replicas', () => {
    const spec = service(fixtures, 'pulsar-replica-service')

    it('shares one Shared subscription between two replicas and answers every request exactly once', async () => {
      const a = await runtime(asReplica(fixtures, 'replicaA'))
      const b = await runtime(asReplica(fixtures, 'replicaB'))
      const t = await transport()
      const tap = await ResponseTap.open(t, spec.responseQueue, CALL_TIMEOUT_MS)
      cleanups.push(() => tap.close())
      const c = await client(t, spec)
      let busyA = false
      let busyB = false
      const sampler = setInterval(() => {
        busyA ||= a.bridge.inFlight > 0
        busyB ||= b.bridge.inFlight > 0
      }, 1)
      cleanups.push(() => clearInterval(sampler))
      const ids: string[] = []
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, n) => {
          const id = randomUUID()
          ids.push(id)
          return new Promise<string>((resolve, reject) => {
            t.publish(spec.requestQueue, encodeRequest({ arguments: { n, ms: 5 } }), { [ID_PROPERTY]: id }).catch(reject)
            tap.ended(id).then((messages) => resolve(messages[0]!.response.response), reject)
          })
        }),
      )
      answers.forEach((text, n) => expect(text).toMatch(new RegExp(`^[AB]:${n}$`)))
      const byA = answers.filter((text) => text.startsWith('A:')).length
      console.info(`Pulsar: two replicas answered 200 requests, ${byA} by A and ${200 - byA} by B`)
      expect(busyA && busyB).toBe(true)
      await Promise.all([0, 1, 2, 3].map((n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })))
      for (const id of ids) expect(tap.messages(id)).toHaveLength(1)
    })
  })

  describe('losing the topic or the broker', () => {
    const spec = service(fixtures, 'pulsar-replica-service')
    const requestTopic = 'non-persistent://tg/request/pulsar-replica'
    const responseTopic = 'non-persistent://tg/response/pulsar-replica'

    /** Calls in a loop from 8 callers; lost calls (non-persistent topics drop what has no consumer) are counted, not failed. */
    function load(c: RequestClient) {
      let loading = true
      let lostOrLate = 0
      let answered = 0
      const done = Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          for (let n = 0; loading; n++) {
            await c.call({ arguments: { n: worker * 1_000_000 + n } }, { timeoutMs: 2000 }).then(
              () => answered++,
              () => lostOrLate++,
            )
          }
        }),
      )
      return {
        get answered() {
          return answered
        },
        async stop() {
          loading = false
          await done
          return lostOrLate
        },
      }
    }

    const answersAgain = (c: RequestClient) =>
      c.call({ arguments: { n: -1 } }, { timeoutMs: 1000 }).then(
        () => true,
        () => false,
      )

    it('reattaches by itself after the broker unloads the request and response topics mid-load', async () => {
      await runtime(fixtures)
      const t = await transport()
      const c = await client(t, spec)
      expect(await c.call({ arguments: { n: 1 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:1')
      const running = load(c)
      await waitFor('some load', () => running.answered > 20)

      const unloading = Date.now()
      await unloadTopic(requestTopic)
      await unloadTopic(responseTopic)
      const unloaded = Date.now()
      await waitFor('the bridge to answer after the unload', () => answersAgain(c))
      const recovered = Date.now()
      const lost = await running.stop()
      console.info(
        `Pulsar unload: first answer ${recovered - unloaded} ms after both unloads returned (${recovered - unloading} ms after the first was issued); ${lost} calls of the load lost or late`,
      )
      const answers = await Promise.all(Array.from({ length: 100 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })))
      answers.forEach((text, n) => expect(text).toBe(`A:${n}`))
    })

    it(
      'comes back by itself after a broker restart mid-load, and answers everything sent after',
      async () => {
        const bridge = await runtime(fixtures)
        const t = await transport()
        const c = await client(t, spec)
        expect(await c.call({ arguments: { n: 0 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:0')
        const running = load(c)
        await waitFor('some load', () => running.answered > 20)

        const stopping = Date.now()
        let parked: Promise<void> | undefined
        try {
          await pulsarScript('stop')
          await waitFor('the bridge to report itself not ready', () => !bridge.bridge.ready)
          // A publish made while the broker is down waits for the producer to come back instead of failing.
          parked = t.publish('response:tg:pulsar-parked', utf8.encode('{}'), { [ID_PROPERTY]: 'parked' })
          parked.catch(() => {})
        } finally {
          await pulsarScript('start', { PULSAR_KEEP_DATA: '1' })
        }
        const started = Date.now()
        await expect(parked).resolves.toBeUndefined()
        await waitFor('the bridge to answer after the restart', () => answersAgain(c))
        const recovered = Date.now()
        const lost = await running.stop()
        console.info(
          `Pulsar restart: first answer ${recovered - started} ms after the broker was healthy again ` +
            `(${recovered - stopping} ms after the stop began); ${lost} calls of the load lost or late, as expected on non-persistent topics`,
        )
        const answers = await Promise.all(Array.from({ length: 100 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })))
        answers.forEach((text, n) => expect(text).toBe(`A:${n}`))
        expect(await metricValue(bridge, 'toolbridge_transport_reconnects_total{transport="pulsar"}')).toBeGreaterThan(0)
        expect(bridge.bridge.ready).toBe(true)
      },
      180_000,
    )
  })

  describe('the transport', () => {
    it('keeps 1000 permits on a non-persistent topic, so a consumer busy with one message loses none of 300 sent at once', async () => {
      const t = await transport()
      const queue = `request:tg:pulsar-permits-${randomUUID().slice(0, 8)}`
      const received: Delivery[] = []
      let unsettled = 0
      let mostUnsettled = 0
      await t.consume(queue, { subscription: 'permits', concurrency: 1 }, (delivery) => {
        received.push(delivery)
        mostUnsettled = Math.max(mostUnsettled, ++unsettled)
        setTimeout(() => {
          unsettled--
          delivery.ack()
        }, 1)
      })
      const sender = await transport()
      await Promise.all(Array.from({ length: 300 }, (_, i) => sender.publish(queue, utf8.encode(String(i)), {})))
      await waitFor('all 300 deliveries', () => received.length === 300)
      expect(received.map((d) => Number(Buffer.from(d.body).toString()))).toEqual(Array.from({ length: 300 }, (_, i) => i))
      expect(mostUnsettled).toBe(1)
    })

    it('hands a consumer at most `concurrency` unsettled deliveries, and redelivers a nacked one on a persistent topic', async () => {
      const t = await transport()
      const queue = `flow:tg:pulsar-nack-${randomUUID().slice(0, 8)}`
      const deliveries: Delivery[] = []
      await t.consume(queue, { subscription: 'sub', concurrency: 3 }, (delivery) => deliveries.push(delivery))
      for (let i = 0; i < 10; i++) await t.publish(queue, utf8.encode(String(i)), {})
      await waitFor('3 deliveries', () => deliveries.length === 3)
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(deliveries).toHaveLength(3)
      deliveries[0]!.ack()
      await waitFor('a fourth delivery', () => deliveries.length === 4)
      expect(deliveries.map((d) => Buffer.from(d.body).toString())).toEqual(['0', '1', '2', '3'])
      expect(deliveries.every((d) => !d.redelivered)).toBe(true)
      // Pulsar puts a nacked message back behind what this consumer already holds: settle the rest to reach it.
      deliveries[1]!.nack()
      const settleRest = setInterval(() => {
        for (const d of deliveries.slice(2)) if (!d.redelivered) d.ack()
      }, 5)
      cleanups.push(() => clearInterval(settleRest))
      await waitFor('the nacked message back, marked redelivered', () => deliveries.some((d) => d.redelivered))
      expect(deliveries.filter((d) => d.redelivered).map((d) => Buffer.from(d.body).toString())).toEqual(['1'])
    })

    it('carries properties as given, and an ack or nack after close is a no-op', async () => {
      const t = new PulsarTransport(broker.url)
      await t.connect()
      cleanups.push(() => t.close())
      const deliveries: Delivery[] = []
      await t.subscribe('response:tg:pulsar-props', (delivery) => deliveries.push(delivery))
      await t.publish('response:tg:pulsar-props', utf8.encode('"one"'), { id: '1', other: 'x y', empty: '' })
      await waitFor('the delivery', () => deliveries.length === 1)
      expect(deliveries[0]!.properties).toEqual({ id: '1', other: 'x y', empty: '' })
      expect(deliveries[0]!.redelivered).toBe(false)
      await t.close()
      expect(() => deliveries[0]!.ack()).not.toThrow()
      expect(() => deliveries[0]!.nack()).not.toThrow()
    })

    it("carries a message of 4 MB and refuses one over Pulsar's 5 MiB without sending it", async () => {
      const t = await transport()
      const body = new Uint8Array(4 * 1024 * 1024).map((_, i) => i % 251)
      const received: Delivery[] = []
      await t.subscribe('response:tg:pulsar-big', (delivery) => (delivery.ack(), received.push(delivery)))
      await t.publish('response:tg:pulsar-big', body, { [ID_PROPERTY]: 'big' })
      await waitFor('the delivery', () => received.length === 1)
      expect(Buffer.compare(Buffer.from(received[0]!.body), Buffer.from(body))).toBe(0)
      const error = await t.publish('response:tg:pulsar-big', new Uint8Array(t.maxMessageBytes + 1), {}).catch((err: unknown) => err)
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect((error as ToolbridgeError).kind).toBe('too-large')
    })

    it('gives up connecting to a broker that is not there, with a retriable unavailable error', async () => {
      const t = new PulsarTransport('pulsar://127.0.0.1:1', { connectRetry: { retries: 1, initialRetryTime: 10 } })
      cleanups.push(() => t.close())
      const error = (await t.connect().catch((err: unknown) => err)) as ToolbridgeError
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect(error.kind).toBe('unavailable')
      expect(error.retriable).toBe(true)
      expect(error.message).toContain('127.0.0.1:1')
    })

    it('refuses broker URLs it cannot use, saying why', () => {
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650?tlsValidateHostname=true')).toThrow(/need a pulsar\+ssl:\/\/ URL/)
      expect(() => new PulsarTransport('pulsar+ssl://127.0.0.1:6651?tlsTrustCertsFilePath=/no/such/ca.pem')).toThrow(/cannot read/)
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650?colour=blue')).toThrow(/unknown setting "colour"/)
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650/tenant')).toThrow(/no path/)
    })
  })

  describe('the client', () => {
    it('answers lookups, refuses a partitioned topic clearly, and reports the broker error code', async () => {
      const c = await pulsarClient()
      expect(await c.lookup('non-persistent://tg/request/joke')).toEqual({ logical: broker.url, physical: broker.url })
      const topic = `persistent://public/default/partitioned-${randomUUID().slice(0, 8)}`
      const created = await fetch(`${broker.admin}/admin/v2/${topic.replace('://', '/')}/partitions`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '2',
      })
      expect(created.status).toBe(204)
      const partitioned = (await c.createProducer({ topic }).catch((err: unknown) => err)) as PulsarError
      expect(partitioned.code).toBe('Unsupported')
      expect(partitioned.message).toMatch(/partitioned \(2 partitions\)/)
      const missing = (await c.subscribe({ topic: 'persistent://no-such-tenant/ns/t', subscription: 's', listener: () => {} }).catch((err: unknown) => err)) as PulsarError
      expect(missing).toBeInstanceOf(PulsarError)
      console.info(`Pulsar: a topic in a missing tenant fails with ${missing.code}: ${missing.message}`)
      expect(missing.code).not.toBe('Timeout')
    })

    it('gives Exclusive subscriptions to one consumer only, with ConsumerBusy for the second', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/exclusive-${randomUUID().slice(0, 8)}`
      await c.subscribe({ topic, subscription: 'only', subscriptionType: 'Exclusive', listener: () => {} })
      const second = new PulsarClient({ serviceUrl: broker.url, operationTimeoutMs: 1500 })
      cleanups.push(() => second.close())
      const error = (await second.subscribe({ topic, subscription: 'only', subscriptionType: 'Exclusive', listener: () => {} }).catch((err: unknown) => err)) as PulsarError
      expect(error.code).toBe('ConsumerBusy')
    })

    it('starts a subscription at the earliest message when asked, and delivers in order on Failover', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/earliest-${randomUUID().slice(0, 8)}`
      const producer = await c.createProducer({ topic })
      for (let i = 0; i < 5; i++) await producer.send(utf8.encode(`m${i}`))
      const got: string[] = []
      await c.subscribe({ topic, subscription: 'late', subscriptionType: 'Failover', initialPosition: 'Earliest', listener: (m) => (m.ack(), got.push(Buffer.from(m.payload).toString())) })
      await waitFor('five messages', () => got.length === 5)
      expect(got).toEqual(['m0', 'm1', 'm2', 'm3', 'm4'])
    })

    it('reports redeliveryCount and redelivers everything unacked on request', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/redeliver-${randomUUID().slice(0, 8)}`
      const got: Message[] = []
      const consumer = await c.subscribe({ topic, subscription: 's', subscriptionType: 'Shared', listener: (m) => got.push(m) })
      const producer = await c.createProducer({ topic })
      await producer.send(utf8.encode('a'))
      await producer.send(utf8.encode('b'))
      await waitFor('two messages', () => got.length === 2)
      consumer.redeliverUnacknowledgedMessages()
      await waitFor('both again', () => got.length === 4)
      expect(got.map((m) => [Buffer.from(m.payload).toString(), m.redeliveryCount])).toEqual([
        ['a', 0],
        ['b', 0],
        ['a', 1],
        ['b', 1],
      ])
    })

    const batchTest = trustgraphInstalled() ? it.each(['NONE', 'LZ4', 'ZLib', 'ZSTD', 'SNAPPY']) : it.skip.each(['(TrustGraph venv missing)'])
    batchTest('reads 50 messages that the native Python client sent batched with compression %s', async (codec) => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/batch-${codec.toLowerCase()}-${randomUUID().slice(0, 8)}`
      const got: Message[] = []
      const errors: PulsarError[] = []
      await c.subscribe({ topic, subscription: 's', listener: (m) => (m.ack(), got.push(m)), onError: (e) => errors.push(e) })
      await run(`${TRUSTGRAPH_VENV}/bin/python`, [BATCH_PRODUCER, broker.url, topic, codec, '50'], { timeout: 60_000 })
      await waitFor('50 messages', () => got.length === 50)
      expect(errors).toEqual([])
      got.forEach((m, i) => {
        expect(Buffer.from(m.payload).toString()).toBe(`message ${i} `.repeat(20))
        expect(m.properties).toEqual({ n: String(i) })
      })
      // They came batched: several share one entry, told apart by batch index.
      const entries = new Set(got.map((m) => `${m.id.ledgerId}:${m.id.entryId}`))
      expect(entries.size).toBeLessThan(50)
      expect(got.some((m) => m.id.batchIndex > 0)).toBe(true)
    })
  })
})

/**
 * The bridge on a real RabbitMQ (test/support/rabbitmq.ts starts one, or the
 * tests skip in one line when rabbitmq-server is not installed): the example
 * tools, bad requests, load, competing replicas, a replica killed mid-work,
 * dropped connections and a broker restart, and the bytes TrustGraph's
 * aio-pika backend sends and expects. Waits are fail-safes, never assertions
 * on time; the measured recovery time is printed.
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { connect as amqpConnect, type ConsumeMessage } from 'amqplib'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { ToolbridgeError } from '../shared/errors.ts'
import { encodeRequest, ID_PROPERTY, UNKNOWN_ID } from '../shared/protocol.ts'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { loadProject, resolveSettings, type Project, type Settings } from '../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../bridge/runtime.ts'
import { RabbitTransport } from '../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import { coalesceWrites } from '../bridge/transports/rabbitmq/coalesce-writes.ts'
import type { Delivery, Transport } from '../bridge/transports/transport.ts'
import { rabbitmqctl, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from './support/rabbitmq.ts'
import { metricValue } from './support/metrics.ts'
import { ResponseTap, waitFor } from './support/response-tap.ts'

const EXAMPLES_YML = fileURLToPath(new URL('../serverless.yml', import.meta.url))
const FIXTURE_YML = fileURLToPath(new URL('./fixtures/brokers/rabbitmq.yml', import.meta.url))
const CALCULATOR = fileURLToPath(new URL('../functions/calculator/handler.ts', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 20_000

const utf8 = new TextEncoder()
const installed = rabbitmqInstalled()

function service(project: Project, id: string): ToolServiceSpec {
  const spec = project.services.find((s) => s.id === id)
  if (!spec) throw new Error(`no tool service "${id}"`)
  return spec
}

/** The fixture project with the replica service's handler swapped, so answers name the replica. */
function asReplica(project: Project, exportName: string): Project {
  return {
    ...project,
    services: project.services.map((s) => (s.id === 'rabbit-replica-service' ? { ...s, handler: `handlers.${exportName}` } : s)),
  }
}



describe.skipIf(!installed)('the bridge on RabbitMQ', () => {
  let broker: RabbitBroker
  let settings: Settings
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(FIXTURE_YML)
  const cleanups: (() => Promise<unknown> | unknown)[] = []

  /** Every queue the tests use starts empty: leftovers of an earlier run would answer under old ids. */
  async function deleteQueues(): Promise<void> {
    const connection = await amqpConnect(broker.url)
    const channel = await connection.createChannel()
    for (const spec of [...examples.services, ...fixtures.services]) {
      const exchange = spec.requestQueue.replace(/^request:(\w+):/, '$1.request.')
      await channel.deleteQueue(`${exchange}.${spec.id}-request`)
    }
    await connection.close()
  }

  beforeAll(async () => {
    broker = await startRabbitmq()
    settings = resolveSettings({ broker: broker.url, port: 'off' }, {})
    await deleteQueues()
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

  async function transport(url = broker.url, options: ConstructorParameters<typeof RabbitTransport>[1] = {}): Promise<RabbitTransport> {
    const created = new RabbitTransport(url, options)
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

  it("coalesces amqplib's socket writes (its internals still have the shape amqp-coalesce.ts relies on)", async () => {
    const model = await amqpConnect(broker.url)
    try {
      expect(coalesceWrites(model)).toBe(true)
      const channel = await model.createConfirmChannel()
      await new Promise<void>((resolve, reject) => channel.publish('', 'toolbridge-coalesce-check', Buffer.from('x'), {}, (err: unknown) => (err ? reject(err) : resolve())))
    } finally {
      await model.close()
    }
  })

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

    it('serves clients that spell the queues as Pulsar URIs', async () => {
      const c = await client(clientTransport, {
        requestQueue: 'non-persistent://tg/request/joke',
        responseQueue: 'non-persistent://tg/response/joke',
      })
      const text = await c.call({ config: { style: 'one-liner' }, arguments: { topic: 'music' } }, { timeoutMs: CALL_TIMEOUT_MS })
      expect(text).toBe("Hey there! Here's a one-liner for you:\n\nMusic is the only thing I am not afraid to face the music about.")
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
      console.info(`RabbitMQ: 500 tell-joke calls in flight answered in ${seconds.toFixed(2)} s (worker threads starting included)`)
    })
  })

  describe('bad requests, as on the embedded broker', () => {
    let clientTransport: Transport
    let replicaTap: ResponseTap
    let strictTap: ResponseTap
    const replica = service(fixtures, 'rabbit-replica-service')
    const strict = service(fixtures, 'rabbit-strict-service')
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
      { name: 'a missing required config param', spec: strict, body: () => encodeRequest({ arguments: { n: 1 } }), type: 'missing-config', message: /region/ },
      { name: 'an argument of the wrong type', spec: replica, body: () => encodeRequest({ arguments: { n: 'one' } }), type: 'invalid-arguments', message: /"n"/ },
    ])('answers $name with one $type error that ends the stream, and keeps serving', async ({ spec, body, type, message }) => {
      const tap = spec === strict ? strictTap : replicaTap
      const id = randomUUID()
      await clientTransport.publish(spec.requestQueue, body(), { [ID_PROPERTY]: id })
      const [only, ...more] = await tap.ended(id)
      expect(more).toEqual([])
      expect(only!.response).toMatchObject({ error: { type }, response: '', end_of_stream: true })
      expect(only!.response.error!.message).toMatch(message)

      const c = await client(clientTransport, spec)
      const config = spec === strict ? { region: 'eu-west-1' } : {}
      expect(await c.call({ config, arguments: { n: 7 } }, { timeoutMs: CALL_TIMEOUT_MS })).toMatch(/:7$/)
    })

    it('answers a request without an id under the id "unknown"', async () => {
      await clientTransport.publish(replica.requestQueue, encodeRequest({ arguments: { n: 42 } }), {})
      const [only, ...more] = await replicaTap.ended(UNKNOWN_ID)
      expect(more).toEqual([])
      expect(only!.response).toEqual({ error: null, response: 'A:42', end_of_stream: true })
      expect(only!.delivery.properties).toEqual({ [ID_PROPERTY]: UNKNOWN_ID })
    })
  })

  describe('TrustGraph on the wire', () => {
    it('answers a request sent exactly as TrustGraph aio-pika backend sends it, with the bytes TrustGraph expects', async () => {
      await runtime(examples)
      const connection = await amqpConnect(broker.url, { noDelay: true })
      cleanups.push(() => connection.close().catch(() => {}))
      const channel = await connection.createChannel()
      const failures: Error[] = []
      channel.on('error', (err: Error) => failures.push(err))

      // What TrustGraph's backend declares (async_rabbitmq_backend.py): had the bridge declared anything
      // differently, the broker would close the channel with PRECONDITION_FAILED here.
      await channel.assertExchange('tg.request.joke', 'fanout', { durable: true, autoDelete: false, internal: false })
      await channel.assertExchange('tg.response.joke', 'fanout', { durable: true, autoDelete: false, internal: false })
      await channel.assertQueue('tg.request.joke.joke-service-request', { durable: false, exclusive: false, autoDelete: false })
      const { queue } = await channel.assertQueue('', { durable: false, exclusive: true, autoDelete: true })
      await channel.bindQueue(queue, 'tg.response.joke', '')
      const received: ConsumeMessage[] = []
      await channel.consume(queue, (message) => message && received.push(message), { noAck: true })

      const request = '{"config": "{\\"style\\": \\"pun\\"}", "arguments": "{\\"topic\\": \\"cats\\"}"}'
      channel.publish('tg.request.joke', '', Buffer.from(request, 'utf8'), {
        contentType: 'application/json',
        deliveryMode: 1,
        headers: { id: 'tg-wire-1' },
      })

      await waitFor('the response', () => received.some((m) => m.properties.headers?.id === 'tg-wire-1'), CALL_TIMEOUT_MS)
      const response = received.find((m) => m.properties.headers?.id === 'tg-wire-1')!
      expect(response.fields.exchange).toBe('tg.response.joke')
      expect(response.properties.contentType).toBe('application/json')
      expect(response.properties.deliveryMode).toBe(1)
      expect(response.properties.headers).toEqual({ id: 'tg-wire-1' })

      const body = JSON.parse(response.content.toString('utf8')) as Record<string, unknown>
      expect(Object.keys(body)).toEqual(['error', 'response', 'end_of_stream'])
      expect(body.error).toBeNull()
      expect(body.response).toBe("Hey there! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.")
      expect(body.end_of_stream).toBe(true)
      // Byte for byte what Python's json.dumps writes for TrustGraph's ToolServiceResponse.
      expect(response.content.toString('utf8')).toBe(
        '{"error": null, "response": "Hey there! Here\'s a pun for you:\\n\\nWhat do you call a pile of cats? A meowtain.", "end_of_stream": true}',
      )
      expect(failures).toEqual([])
    })

    it('declares flow queues durable and request queues not, as TrustGraph does', async () => {
      const flowQueue = 'tg.flow.rabbit-flow.sub'
      const requestQueue = 'tg.request.rabbit-flags.sub'
      const connection = await amqpConnect(broker.url)
      const drop = async () => {
        const channel = await connection.createChannel()
        await channel.deleteQueue(flowQueue) // durable: would outlive the broker
        await channel.deleteQueue(requestQueue)
        await channel.close()
      }
      await drop()
      cleanups.push(async () => {
        await drop()
        await connection.close()
      })
      const t = await transport() // closed (cleanups run in reverse) before its queues are deleted
      await t.consume('flow:tg:rabbit-flow', { subscription: 'sub', concurrency: 1 }, () => {})
      await t.consume('request:tg:rabbit-flags', { subscription: 'sub', concurrency: 1 }, () => {})
      const redeclare = async (name: string, durable: boolean) => {
        const channel = await connection.createChannel()
        channel.on('error', () => {})
        return channel.assertQueue(name, { durable, exclusive: false, autoDelete: false }).then(
          () => 'same',
          (err: Error) => (/PRECONDITION_FAILED/.test(err.message) ? 'different' : err.message),
        )
      }
      expect(await redeclare(flowQueue, true)).toBe('same')
      expect(await redeclare(flowQueue, false)).toBe('different')
      expect(await redeclare(requestQueue, false)).toBe('same')
      expect(await redeclare(requestQueue, true)).toBe('different')
    })
  })

  describe('replicas', () => {
    const spec = service(fixtures, 'rabbit-replica-service')

    it('shares one request queue between two replicas and answers every request exactly once', async () => {
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
      console.info(`RabbitMQ: two replicas answered 200 requests, ${byA} by A and ${200 - byA} by B`)
      expect(busyA && busyB).toBe(true)
      // One more round trip through each replica flushes anything still on its way; then count.
      await Promise.all([0, 1, 2, 3].map((n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })))
      for (const id of ids) expect(tap.messages(id)).toHaveLength(1)
    })

    it('hands the requests a killed replica had in flight to the other replica', async () => {
      const a = await runtime(asReplica(fixtures, 'replicaA'))
      const b = await runtime(asReplica(fixtures, 'replicaB'))
      const t = await transport()
      const c = await client(t, spec)
      const answeredAfterKill: string[] = []
      let killed = false
      const calls = Array.from({ length: 16 }, (_, n) =>
        c.call({ arguments: { n, ms: 1500 } }, { timeoutMs: CALL_TIMEOUT_MS }).then((text) => {
          if (killed) answeredAfterKill.push(text)
          return text
        }),
      )
      // Each replica takes as many as its concurrency (4 in the fixture); the rest wait in the queue.
      await waitFor('both replicas to be busy', () => a.bridge.inFlight === 4 && b.bridge.inFlight === 4)
      const inFlightOnA = a.bridge.inFlight
      // Killed: its connection goes without acking anything; its functions keep running and finish into nothing.
      await a.transport.close()
      killed = true

      const answers = await Promise.all(calls)
      answers.forEach((text, n) => expect(text).toMatch(new RegExp(`^[AB]:${n}$`)))
      expect(inFlightOnA).toBeGreaterThan(0)
      expect(answeredAfterKill.filter((text) => text.startsWith('A:'))).toEqual([])
      console.info(`RabbitMQ: replica A killed with ${inFlightOnA} requests in flight; B answered ${answeredAfterKill.length} after the kill`)
      // The dead replica settles its requests (ack/nack on a closed channel) without throwing.
      await waitFor('the killed replica to finish its work', () => a.bridge.inFlight === 0)
    })
  })

  describe('losing the broker', () => {
    const spec = service(fixtures, 'rabbit-replica-service')

    it('reconnects by itself after the broker closes every connection, and serves again', async () => {
      const bridge = await runtime(fixtures)
      const t = await transport()
      const c = await client(t, spec)
      expect(await c.call({ arguments: { n: 1 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:1')

      await rabbitmqctl('close_all_connections', 'toolbridge test: connections dropped')
      await waitFor('the bridge to answer again', () =>
        c.call({ arguments: { n: 2 } }, { timeoutMs: 1000 }).then(
          () => true,
          () => false,
        ),
      )
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })),
      )
      answers.forEach((text, n) => expect(text).toBe(`A:${n}`))
      expect(await metricValue(bridge, 'toolbridge_transport_reconnects_total{transport="rabbitmq"}')).toBeGreaterThan(0)
    })

    it(
      'comes back by itself after a broker restart mid-load, and answers everything sent after',
      async () => {
        const bridge = await runtime(fixtures)
        const t = await transport()
        const c = await client(t, spec)
        expect(await c.call({ arguments: { n: 0 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:0')

        // Load: requests in flight when the broker stops are lost (non-persistent queues), so errors are expected.
        let loading = true
        let lostOrLate = 0
        const load = Array.from({ length: 8 }, async (_, worker) => {
          for (let n = 0; loading; n++) {
            await c.call({ arguments: { n: worker * 1_000_000 + n } }, { timeoutMs: 2000 }).catch(() => lostOrLate++)
          }
        })
        await new Promise((resolve) => setTimeout(resolve, 300))

        const stopping = Date.now()
        await rabbitmqctl('stop_app')
        await waitFor('the bridge to report itself not ready', () => !bridge.bridge.ready)
        // A publish made while the broker is down waits for the connection instead of failing.
        const parked = t.publish('response:tg:rabbit-parked', utf8.encode('{}'), { [ID_PROPERTY]: 'parked' })
        const starting = Date.now()
        await rabbitmqctl('start_app')
        const started = Date.now()
        await expect(parked).resolves.toBeUndefined()

        await waitFor('the bridge to answer after the restart', () =>
          c.call({ arguments: { n: -1 } }, { timeoutMs: 1000 }).then(
            () => true,
            () => false,
          ),
        )
        const recovered = Date.now()
        console.info(
          `RabbitMQ restart: first answer ${recovered - started} ms after start_app returned ` +
            `(${recovered - starting} ms after it was issued, ${recovered - stopping} ms after stop_app)`,
        )
        loading = false
        await Promise.all(load)

        const answers = await Promise.all(
          Array.from({ length: 100 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })),
        )
        answers.forEach((text, n) => expect(text).toBe(`A:${n}`))
        expect(bridge.bridge.ready).toBe(true)
        console.info(`RabbitMQ restart: ${lostOrLate} calls of the load were lost or late, as expected on non-persistent queues`)
      },
      120_000,
    )
  })

  describe('the transport', () => {
    it('delivers what is published right after subscribe() resolves, and an ack or nack after close is a no-op', async () => {
      const t = new RabbitTransport(broker.url)
      await t.connect()
      cleanups.push(() => t.close())
      const deliveries: Delivery[] = []
      await t.subscribe('response:tg:rabbit-acks', (delivery) => deliveries.push(delivery))
      await t.publish('response:tg:rabbit-acks', utf8.encode('"one"'), { [ID_PROPERTY]: '1' })
      await t.publish('response:tg:rabbit-acks', utf8.encode('"two"'), { [ID_PROPERTY]: '2' })
      await waitFor('both deliveries', () => deliveries.length === 2)
      await t.close()
      expect(() => deliveries[0]!.ack()).not.toThrow()
      expect(() => deliveries[1]!.nack()).not.toThrow()
      expect(() => deliveries[0]!.ack()).not.toThrow()
    })

    it('hands a consumer at most `concurrency` unacked deliveries, and the rest as it acks', async () => {
      const topic = 'rabbit-prefetch'
      const connection = await amqpConnect(broker.url)
      const channel = await connection.createChannel()
      await channel.deleteQueue(`tg.request.${topic}.sub`) // what an interrupted run left
      cleanups.push(async () => {
        await channel.deleteQueue(`tg.request.${topic}.sub`)
        await connection.close()
      })
      const t = await transport() // closed (cleanups run in reverse) before its queue is deleted
      const deliveries: Delivery[] = []
      await t.consume(`request:tg:${topic}`, { subscription: 'sub', concurrency: 3 }, (delivery) => deliveries.push(delivery))
      for (let i = 0; i < 10; i++) await t.publish(`request:tg:${topic}`, utf8.encode(String(i)), {})
      // The broker holds back what is over the prefetch: 3 handed out, 7 still ready in the queue.
      await waitFor('3 deliveries and 7 held back', async () => {
        const { messageCount } = await channel.checkQueue(`tg.request.${topic}.sub`)
        return deliveries.length === 3 && messageCount === 7
      })
      deliveries[0]!.ack()
      await waitFor('a fourth delivery', () => deliveries.length === 4)
      expect(deliveries.map((d) => new TextDecoder().decode(d.body))).toEqual(['0', '1', '2', '3'])
      deliveries[1]!.nack()
      await waitFor('the nacked message back, marked redelivered', () => deliveries.some((d) => d.redelivered))
      expect(new TextDecoder().decode(deliveries.find((d) => d.redelivered)!.body)).toBe('1')
    })

    it('gives received AMQP headers as strings', async () => {
      const t = await transport()
      const received: Delivery[] = []
      await t.subscribe('response:tg:rabbit-headers', (delivery) => (delivery.ack(), received.push(delivery)))
      const connection = await amqpConnect(broker.url)
      cleanups.push(() => connection.close())
      const channel = await connection.createConfirmChannel()
      channel.publish('tg.response.rabbit-headers', '', Buffer.from('{}'), {
        headers: { id: 'abc', count: 5, ok: true, raw: Buffer.from('bytes'), none: null },
      })
      await channel.waitForConfirms()
      await waitFor('the delivery', () => received.length === 1)
      expect(received[0]!.properties).toEqual({ id: 'abc', count: '5', ok: 'true', raw: 'bytes' })
      expect(received[0]!.redelivered).toBe(false)
    })

    it('carries a 10 MB message, over the default limits of Pulsar and Kafka', async () => {
      const t = await transport()
      expect(t.maxMessageBytes).toBe(128 * 1024 * 1024)
      const body = new Uint8Array(10 * 1024 * 1024).map((_, i) => i % 251)
      const received: Delivery[] = []
      await t.subscribe('response:tg:rabbit-big', (delivery) => (delivery.ack(), received.push(delivery)))
      await t.publish('response:tg:rabbit-big', body, { [ID_PROPERTY]: 'big' })
      await waitFor('the delivery', () => received.length === 1)
      expect(Buffer.compare(Buffer.from(received[0]!.body), Buffer.from(body))).toBe(0)
    })

    it('refuses a message over 128 MiB without sending it', async () => {
      const t = await transport()
      const error = await t.publish('response:tg:rabbit-big', new Uint8Array(t.maxMessageBytes + 1), {}).catch((err: unknown) => err)
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect((error as ToolbridgeError).kind).toBe('too-large')
    })

    it('never shows the password: not in its address, not in a refused login', async () => {
      const secret = 'Sup3r-Secret-Pw'
      const t = new RabbitTransport(`amqp://guest:${secret}@127.0.0.1:5672/`)
      cleanups.push(() => t.close())
      expect(t.address).not.toContain(secret)
      expect(t.address).toContain('***')
      const error = (await t.connect().catch((err: unknown) => err)) as ToolbridgeError
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect(error.kind).toBe('config') // a refused login is not retried
      expect(error.message).toMatch(/refused/i)
      expect(`${error.message} ${String(error.cause ?? '')} ${JSON.stringify(error)}`).not.toContain(secret)
    })

    it('gives up connecting to a broker that is not there, with an unavailable error and no password', async () => {
      const secret = 'Another-Secret-Pw'
      const t = new RabbitTransport(`amqp://guest:${secret}@127.0.0.1:1/`, { connectRetry: { retries: 2, initialRetryTime: 10 } })
      cleanups.push(() => t.close())
      const error = (await t.connect().catch((err: unknown) => err)) as ToolbridgeError
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect(error.kind).toBe('unavailable')
      expect(error.retriable).toBe(true)
      expect(error.message).toContain('127.0.0.1:1')
      expect(error.message).not.toContain(secret)
    })
  })
})

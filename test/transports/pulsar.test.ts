/**
 * The bridge and the project's own Pulsar client on a real Pulsar
 * (scripts/pulsar.sh; the tests skip in one line without a JDK and Maven):
 * the transport contract (test/support/transport-contract.ts: the example
 * tools, bad requests, load, competing replicas, a replica killed mid-work, a
 * broker restart mid-load, flow control), and what is Pulsar's own: the bytes
 * on the wire, a topic unload mid-load, permits on non-persistent topics, the
 * broker URL, the client's lookups and subscription types, and batched,
 * compressed messages written by another client (TrustGraph's own native
 * Python client). Waits are fail-safes, never assertions on time;
 * measured recovery times are printed.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { encodeRequest } from '../../shared/protocol.ts'
import type { RequestClient } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { PulsarTransport } from '../../bridge/transports/pulsar/pulsar-transport.ts'
import { PulsarClient, PulsarError, type Message } from '../../lib/pulsar-client/index.ts'
import type { Delivery } from '../../bridge/transports/transport.ts'
import { PULSAR_URL, pulsarRunnable, pulsarScript, startPulsar, unloadTopic } from '../support/pulsar.ts'
import { TRUSTGRAPH_VENV, trustgraphInstalled } from '../support/trustgraph.ts'
import { waitFor } from '../support/response-tap.ts'
import { brokerSuite, describeTransport, keepCalling, serviceById } from '../support/transport-contract.ts'

const run = promisify(execFile)
const EXAMPLES_YML = fileURLToPath(new URL('../../serverless.yml', import.meta.url))
const FIXTURE_YML = fileURLToPath(new URL('../fixtures/brokers/pulsar.yml', import.meta.url))
const BATCH_PRODUCER = fileURLToPath(new URL('../interop/pulsar_batch_producer.py', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 20_000

const utf8 = new TextEncoder()
const runnable = pulsarRunnable()

describe.skipIf(!runnable)('the bridge on Pulsar', () => {
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(FIXTURE_YML)
  const suite = brokerSuite(startPulsar)
  const { runtime, client, closing } = suite
  const transport = (options: ConstructorParameters<typeof PulsarTransport>[1] = {}) =>
    closing.connected(new PulsarTransport(suite.broker.url, options))
  const pulsarClient = () => closing.connected(new PulsarClient({ serviceUrl: suite.broker.url }))

  describeTransport('Pulsar', {
    settings: resolveSettings({ broker: PULSAR_URL, port: 'off' }, {}),
    fixturesYml: FIXTURE_YML,
    callTimeoutMs: CALL_TIMEOUT_MS,
    maxMessageBytes: 5 * 1024 * 1024, // Pulsar's default maxMessageSize
    bigMessageBytes: 4 * 1024 * 1024,
    replicas: { kill: 'on non-persistent topics Pulsar drops what a closed consumer held, rather than redeliver it' },
    outage: {
      stop: () => pulsarScript('stop').then(() => {}),
      start: () => pulsarScript('start', { PULSAR_KEEP_DATA: '1' }).then(() => {}),
    },
    // A persistent topic: Pulsar redelivers a nacked message there.
    burstQueues: {
      requestQueue: 'persistent://tg/request/joke-burst',
      responseQueue: 'persistent://tg/response/joke-burst',
      why: 'non-persistent topics drop what a backed-up connection cannot take, by design',
    },
    flowControl: { queue: () => `flow:tg:pulsar-nack-${randomUUID().slice(0, 8)}`, nackedComesBackLast: true },
    unreachable: {
      transport: () =>
        new PulsarTransport('pulsar://127.0.0.1:1', { connectRetry: { retries: 1, initialRetryTime: 10 } }),
    },
  })

  describe('the wire', () => {
    it('puts the answer on the wire as raw JSON bytes with the id as a Pulsar property, no schema', async () => {
      await runtime(examples)
      const raw = await pulsarClient()
      const received: Message[] = []
      await raw.subscribe({
        topic: 'non-persistent://tg/response/joke',
        subscription: `wire-${randomUUID()}`,
        listener: (m) => (m.ack(), received.push(m)),
      })
      const producer = await raw.createProducer({ topic: 'non-persistent://tg/request/joke' })
      await producer.send(encodeRequest({ config: { style: 'pun' }, arguments: { topic: 'cats' } }), {
        properties: { id: 'tg-wire-1' },
      })
      await waitFor('the answer', () => received.some((m) => m.properties.id === 'tg-wire-1'), CALL_TIMEOUT_MS)
      const answer = received.find((m) => m.properties.id === 'tg-wire-1')!
      expect(answer.properties).toEqual({ id: 'tg-wire-1' })
      // Byte for byte what Python's json.dumps writes for TrustGraph's ToolServiceResponse.
      expect(Buffer.from(answer.payload).toString('utf8')).toBe(
        '{"error": null, "response": "Hey there! Here\'s a pun for you:\\n\\nWhat do you call a pile of cats? A meowtain.", "end_of_stream": true}',
      )
    })
  })

  describe('losing the topic or the broker', () => {
    const spec = serviceById(fixtures, 'pulsar-replica-service')
    const requestTopic = 'non-persistent://tg/request/pulsar-replica'
    const responseTopic = 'non-persistent://tg/response/pulsar-replica'

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
      const running = keepCalling(c)
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
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })),
      )
      answers.forEach((text, n) => expect(text).toBe(`A:${n}`))
    })
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
      // The consumer's permits reach the broker on its own connection after the subscription succeeds, and a
      // message on another connection may be handled first and dropped. Probes until one arrives, so that the
      // burst tests the permits the broker holds rather than that race (probes from one producer come first).
      const isProbe = (d: Delivery) => Buffer.from(d.body).toString() === 'probe'
      while (!received.some(isProbe)) {
        await sender.publish(queue, utf8.encode('probe'), {})
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await Promise.all(Array.from({ length: 300 }, (_, i) => sender.publish(queue, utf8.encode(String(i)), {})))
      const burst = () => received.filter((d) => !isProbe(d))
      await waitFor('all 300 deliveries', () => burst().length === 300)
      expect(burst().map((d) => Number(Buffer.from(d.body).toString()))).toEqual(
        Array.from({ length: 300 }, (_, i) => i),
      )
      expect(mostUnsettled).toBe(1)
    })

    it('refuses broker URLs it cannot use, saying why', () => {
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650?tlsValidateHostname=true')).toThrow(
        /need a pulsar\+ssl:\/\/ URL/,
      )
      expect(() => new PulsarTransport('pulsar+ssl://127.0.0.1:6651?tlsTrustCertsFilePath=/no/such/ca.pem')).toThrow(
        /cannot read/,
      )
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650?colour=blue')).toThrow(/unknown setting "colour"/)
      expect(() => new PulsarTransport('pulsar://127.0.0.1:6650/tenant')).toThrow(/no path/)
    })
  })

  describe('the client', () => {
    it('answers lookups, refuses a partitioned topic clearly, and reports the broker error code', async () => {
      const c = await pulsarClient()
      expect(await c.lookup('non-persistent://tg/request/joke')).toEqual({
        logical: suite.broker.url,
        physical: suite.broker.url,
      })
      const topic = `persistent://public/default/partitioned-${randomUUID().slice(0, 8)}`
      const created = await fetch(`${suite.broker.admin}/admin/v2/${topic.replace('://', '/')}/partitions`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '2',
      })
      expect(created.status).toBe(204)
      const partitioned = (await c.createProducer({ topic }).catch((err: unknown) => err)) as PulsarError
      expect(partitioned.code).toBe('Unsupported')
      expect(partitioned.message).toMatch(/partitioned \(2 partitions\)/)
      const missing = (await c
        .subscribe({ topic: 'persistent://no-such-tenant/ns/t', subscription: 's', listener: () => {} })
        .catch((err: unknown) => err)) as PulsarError
      expect(missing).toBeInstanceOf(PulsarError)
      console.info(`Pulsar: a topic in a missing tenant fails with ${missing.code}: ${missing.message}`)
      expect(missing.code).not.toBe('Timeout')
    })

    it('gives Exclusive subscriptions to one consumer only, with ConsumerBusy for the second', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/exclusive-${randomUUID().slice(0, 8)}`
      await c.subscribe({ topic, subscription: 'only', subscriptionType: 'Exclusive', listener: () => {} })
      const second = new PulsarClient({ serviceUrl: suite.broker.url, operationTimeoutMs: 1500 })
      closing.add(() => second.close())
      const error = (await second
        .subscribe({ topic, subscription: 'only', subscriptionType: 'Exclusive', listener: () => {} })
        .catch((err: unknown) => err)) as PulsarError
      expect(error.code).toBe('ConsumerBusy')
    })

    it('starts a subscription at the earliest message when asked, and delivers in order on Failover', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/earliest-${randomUUID().slice(0, 8)}`
      const producer = await c.createProducer({ topic })
      for (let i = 0; i < 5; i++) await producer.send(utf8.encode(`m${i}`))
      const got: string[] = []
      await c.subscribe({
        topic,
        subscription: 'late',
        subscriptionType: 'Failover',
        initialPosition: 'Earliest',
        listener: (m) => (m.ack(), got.push(Buffer.from(m.payload).toString())),
      })
      await waitFor('five messages', () => got.length === 5)
      expect(got).toEqual(['m0', 'm1', 'm2', 'm3', 'm4'])
    })

    it('reports redeliveryCount and redelivers everything unacked on request', async () => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/redeliver-${randomUUID().slice(0, 8)}`
      const got: Message[] = []
      const consumer = await c.subscribe({
        topic,
        subscription: 's',
        subscriptionType: 'Shared',
        listener: (m) => got.push(m),
      })
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

    const batchTest = trustgraphInstalled()
      ? it.each(['NONE', 'LZ4', 'ZLib', 'ZSTD', 'SNAPPY'])
      : it.skip.each(['(TrustGraph venv missing)'])
    batchTest('reads 50 messages that the native Python client sent batched with compression %s', async (codec) => {
      const c = await pulsarClient()
      const topic = `persistent://public/default/batch-${codec.toLowerCase()}-${randomUUID().slice(0, 8)}`
      const got: Message[] = []
      const errors: PulsarError[] = []
      await c.subscribe({
        topic,
        subscription: 's',
        listener: (m) => (m.ack(), got.push(m)),
        onError: (e) => errors.push(e),
      })
      await run(`${TRUSTGRAPH_VENV}/bin/python`, [BATCH_PRODUCER, suite.broker.url, topic, codec, '50'], {
        timeout: 60_000,
      })
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

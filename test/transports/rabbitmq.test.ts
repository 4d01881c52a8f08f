/**
 * The bridge on a real RabbitMQ (test/support/rabbitmq.ts starts one, or the
 * tests skip in one line when rabbitmq-server is not installed): the
 * transport contract (test/support/transport-contract.ts: the example tools,
 * bad requests, load, competing replicas, a replica killed mid-work, a broker
 * restart, flow control), and what is RabbitMQ's own: coalesced socket
 * writes, dropped connections, AMQP headers, a refused login, and the bytes
 * and declarations of TrustGraph's aio-pika backend. Waits are fail-safes,
 * never assertions on time; the measured recovery time is printed.
 */
import { fileURLToPath } from 'node:url'
import { connect as amqpConnect, type ConsumeMessage } from 'amqplib'
import { describe, expect, it } from 'vitest'
import { ToolbridgeError } from '../../shared/errors.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { RabbitTransport } from '../../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import { coalesceWrites } from '../../bridge/transports/rabbitmq/coalesce-writes.ts'
import type { Delivery } from '../../bridge/transports/transport.ts'
import { RABBITMQ_URL, rabbitmqctl, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import { metricValue } from '../support/metrics.ts'
import { waitFor } from '../support/response-tap.ts'
import { brokerSuite, describeTransport, serviceById } from '../support/transport-contract.ts'

const EXAMPLES_YML = fileURLToPath(new URL('../../serverless.yml', import.meta.url))
const FIXTURE_YML = fileURLToPath(new URL('../fixtures/brokers/rabbitmq.yml', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 20_000

const installed = rabbitmqInstalled()

/** Messages ready in a queue, not yet handed to a consumer. */
async function readyInQueue(queue: string): Promise<number> {
  const connection = await amqpConnect(RABBITMQ_URL)
  try {
    const channel = await connection.createChannel()
    return (await channel.checkQueue(queue)).messageCount
  } finally {
    await connection.close()
  }
}

/** Deletes a queue; what does not exist is skipped. */
async function deleteQueue(queue: string): Promise<void> {
  const connection = await amqpConnect(RABBITMQ_URL)
  try {
    const channel = await connection.createChannel()
    await channel.deleteQueue(queue)
  } finally {
    await connection.close()
  }
}

/** The queue `consume(queue, {subscription: 'sub'})` declares. */
const subQueue = (queue: string) => `${queue.replace(/^request:(\w+):/, '$1.request.')}.sub`

describe.skipIf(!installed)('the bridge on RabbitMQ', () => {
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(FIXTURE_YML)

  /** Every queue the tests use starts empty: leftovers of an earlier run would answer under old ids. */
  async function deleteQueues(broker: RabbitBroker): Promise<void> {
    const connection = await amqpConnect(broker.url)
    const channel = await connection.createChannel()
    for (const spec of [...examples.services, ...fixtures.services]) {
      const exchange = spec.requestQueue.replace(/^request:(\w+):/, '$1.request.')
      await channel.deleteQueue(`${exchange}.${spec.id}-request`)
    }
    await connection.close()
  }

  const suite = brokerSuite(startRabbitmq, { prepare: deleteQueues })
  const { runtime, client, closing } = suite
  const transport = (url = suite.broker.url, options: ConstructorParameters<typeof RabbitTransport>[1] = {}) =>
    closing.connected(new RabbitTransport(url, options))

  it("coalesces amqplib's socket writes (its internals still have the shape amqp-coalesce.ts relies on)", async () => {
    const model = await amqpConnect(suite.broker.url)
    try {
      expect(coalesceWrites(model)).toBe(true)
      const channel = await model.createConfirmChannel()
      await new Promise<void>((resolve, reject) =>
        channel.publish('', 'toolbridge-coalesce-check', Buffer.from('x'), {}, (err: unknown) =>
          err ? reject(err) : resolve(),
        ),
      )
    } finally {
      await model.close()
    }
  })

  describeTransport('RabbitMQ', {
    settings: resolveSettings({ broker: RABBITMQ_URL, port: 'off' }, {}),
    fixturesYml: FIXTURE_YML,
    callTimeoutMs: CALL_TIMEOUT_MS,
    maxMessageBytes: 128 * 1024 * 1024, // RabbitMQ's default max_message_size
    bigMessageBytes: 10 * 1024 * 1024, // over the default limits of Pulsar and Kafka
    replicas: { kill: true },
    outage: {
      stop: () => rabbitmqctl('stop_app').then(() => {}),
      start: () => rabbitmqctl('start_app').then(() => {}),
    },
    flowControl: {
      queue: () => 'request:tg:rabbit-prefetch',
      heldByBroker: (queue) => readyInQueue(subQueue(queue)),
      drop: (queue) => deleteQueue(subQueue(queue)),
    },
    unreachable: {
      transport: () =>
        new RabbitTransport('amqp://guest:Another-Secret-Pw@127.0.0.1:1/', {
          connectRetry: { retries: 2, initialRetryTime: 10 },
        }),
      secret: 'Another-Secret-Pw',
    },
  })

  describe('TrustGraph on the wire', () => {
    it('answers a request sent exactly as TrustGraph aio-pika backend sends it, with the bytes TrustGraph expects', async () => {
      await runtime(examples)
      const connection = await amqpConnect(suite.broker.url, { noDelay: true })
      closing.add(() => connection.close().catch(() => {}))
      const channel = await connection.createChannel()
      const failures: Error[] = []
      channel.on('error', (err: Error) => failures.push(err))

      // What TrustGraph's backend declares (async_rabbitmq_backend.py): had the bridge declared anything
      // differently, the broker would close the channel with PRECONDITION_FAILED here.
      await channel.assertExchange('tg.request.joke', 'fanout', { durable: true, autoDelete: false, internal: false })
      await channel.assertExchange('tg.response.joke', 'fanout', { durable: true, autoDelete: false, internal: false })
      await channel.assertQueue('tg.request.joke.joke-service-request', {
        durable: false,
        exclusive: false,
        autoDelete: false,
      })
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

      await waitFor(
        'the response',
        () => received.some((m) => m.properties.headers?.id === 'tg-wire-1'),
        CALL_TIMEOUT_MS,
      )
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
      const connection = await amqpConnect(suite.broker.url)
      const drop = async () => {
        const channel = await connection.createChannel()
        await channel.deleteQueue(flowQueue) // durable: would outlive the broker
        await channel.deleteQueue(requestQueue)
        await channel.close()
      }
      await drop()
      closing.add(async () => {
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

  describe('losing the broker', () => {
    const spec = serviceById(fixtures, 'rabbit-replica-service')

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
      expect(await metricValue(bridge, 'toolbridge_transport_reconnects_total{transport="rabbitmq"}')).toBeGreaterThan(
        0,
      )
    })
  })

  describe('the transport', () => {
    it('gives received AMQP headers as strings', async () => {
      const t = await transport()
      const received: Delivery[] = []
      await t.subscribe('response:tg:rabbit-headers', (delivery) => (delivery.ack(), received.push(delivery)))
      const connection = await amqpConnect(suite.broker.url)
      closing.add(() => connection.close())
      const channel = await connection.createConfirmChannel()
      channel.publish('tg.response.rabbit-headers', '', Buffer.from('{}'), {
        headers: { id: 'abc', count: 5, ok: true, raw: Buffer.from('bytes'), none: null },
      })
      await channel.waitForConfirms()
      await waitFor('the delivery', () => received.length === 1)
      expect(received[0]!.properties).toEqual({ id: 'abc', count: '5', ok: 'true', raw: 'bytes' })
      expect(received[0]!.redelivered).toBe(false)
    })

    it('never shows the password: not in its address, not in a refused login', async () => {
      const secret = 'Sup3r-Secret-Pw'
      const t = new RabbitTransport(`amqp://guest:${secret}@127.0.0.1:5672/`)
      closing.add(() => t.close())
      expect(t.address).not.toContain(secret)
      expect(t.address).toContain('***')
      const error = (await t.connect().catch((err: unknown) => err)) as ToolbridgeError
      expect(error).toBeInstanceOf(ToolbridgeError)
      expect(error.kind).toBe('config') // a refused login is not retried
      expect(error.message).toMatch(/refused/i)
      expect(`${error.message} ${String(error.cause ?? '')} ${JSON.stringify(error)}`).not.toContain(secret)
    })
  })
})

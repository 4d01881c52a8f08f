/**
 * Interop with TrustGraph itself, on RabbitMQ: TrustGraph's own
 * RequestResponseClient (through its own aio-pika backend) calls tools
 * served by the bridge, and `toolbridge invoke` calls TrustGraph's own joke
 * service. Needs rabbitmq-server and the virtual environment of
 * scripts/trustgraph-venv.sh; .ci/run provides both.
 */
import type { ChildProcess } from 'node:child_process'
import { connect as amqpConnect } from 'amqplib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeRequest, encodeResponse, decodeResponse } from '../../shared/protocol.ts'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq } from '../support/rabbitmq.ts'
import { startTrustgraphJokeService, invokeJokeOn } from '../support/trustgraph.ts'
import { interopReady } from '../support/interop-ready.ts'
import { brokerSuite, describeTrustgraphClient } from '../support/transport-contract.ts'

const ready = interopReady('TrustGraph interop tests', {
  here: rabbitmqInstalled(),
  install: `rabbitmq-server (${RABBITMQ_INSTALL})`,
})

describe.skipIf(!ready)('TrustGraph interop on RabbitMQ', () => {
  const suite = brokerSuite(startRabbitmq)

  describeTrustgraphClient("TrustGraph's client calling the bridge", {
    settings: () => suite.settings,
    backend: () => ({ backend: 'rabbitmq', host: '127.0.0.1' }),
    concurrentCalls: 100,
  })

  describe("the bridge's client calling TrustGraph's joke service", () => {
    let service: ChildProcess
    beforeAll(async () => {
      service = await startTrustgraphJokeService()
    })
    afterAll(() => {
      service?.kill('SIGKILL')
    })

    it('toolbridge invoke prints its answer', async () => {
      const stdout = await invokeJokeOn(suite.broker.url)
      expect(stdout).toMatch(/^Here's a pun for you:\n\n\S.*\n$/)
    })

    it("writes the same bytes the bridge writes: TrustGraph's response re-encodes byte for byte", async () => {
      const connection = await amqpConnect(suite.broker.url, { noDelay: true })
      try {
        const channel = await connection.createChannel()
        const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true })
        await channel.bindQueue(queue, 'tg.response.joke', '')
        const id = `interop-${Date.now()}`
        const body = new Promise<Buffer>((resolve) => {
          void channel.consume(
            queue,
            (msg) => {
              if (msg && String(msg.properties.headers?.id) === id) resolve(msg.content)
            },
            { noAck: true },
          )
        })
        channel.publish(
          'tg.request.joke',
          '',
          Buffer.from(encodeRequest({ config: { style: 'one-liner' }, arguments: { topic: 'food' } })),
          {
            contentType: 'application/json',
            headers: { id },
          },
        )
        const bytes = await body
        const decoded = decodeResponse(bytes)
        expect(decoded.ok).toBe(true)
        if (!decoded.ok) return
        expect(decoded.value.response).toMatch(/^Here's a one-liner for you:/)
        expect(Buffer.from(encodeResponse(decoded.value)).toString('utf8')).toBe(bytes.toString('utf8'))
      } finally {
        await connection.close()
      }
    })
  })
})

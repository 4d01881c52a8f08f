/**
 * Interop with TrustGraph itself, on RabbitMQ: TrustGraph's own
 * RequestResponseClient (through its own aio-pika backend) calls tools
 * served by the bridge, and `toolbridge invoke` calls TrustGraph's own joke
 * service. Needs rabbitmq-server and the virtual environment of
 * scripts/trustgraph-venv.sh; .ci/run provides both.
 */
import { execFile, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { connect as amqpConnect } from 'amqplib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeRequest, encodeResponse, decodeResponse } from '../../shared/protocol.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import {
  startTrustgraphJokeService,
  TRUSTGRAPH_INSTALL,
  trustgraphClientCalls,
  trustgraphInstalled,
} from '../support/trustgraph.ts'

const run = promisify(execFile)
const ready = rabbitmqInstalled() && trustgraphInstalled()
if (!ready) {
  console.log(
    `skipping TrustGraph interop tests: needs ${rabbitmqInstalled() ? '' : `rabbitmq-server (${RABBITMQ_INSTALL}) and `}TrustGraph's packages (${TRUSTGRAPH_INSTALL})`,
  )
}

describe.skipIf(!ready)('TrustGraph interop on RabbitMQ', () => {
  let broker: RabbitBroker
  const project = loadProject('serverless.yml')
  const queues = (id: string) => project.services.find((s) => s.id === id)!

  beforeAll(async () => {
    broker = await startRabbitmq()
  })
  afterAll(async () => {
    await broker?.stop()
  })

  describe("TrustGraph's client calling the bridge", () => {
    let runtime: Runtime
    beforeAll(async () => {
      runtime = await startRuntime(project, resolveSettings({ broker: broker.url }, {}))
    })
    afterAll(async () => {
      await runtime?.stop()
    })

    it('gets a single answer from request()', async () => {
      const [result] = await trustgraphClientCalls(queues('joke-service'), [
        { config: { style: 'dad-joke' }, arguments: { topic: 'programming' } },
      ])
      expect(result).toEqual({
        response:
          "Hey there! Here's a dad-joke for you:\n\nWhy do programmers prefer dark mode? Because light attracts bugs.",
        error: null,
        messages: 1,
      })
    })

    it('gets every chunk from request_stream(), the last one ending the stream', async () => {
      const [result] = await trustgraphClientCalls(queues('story-service'), [
        { config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 }, stream: true },
      ])
      expect(result!.error).toBeNull()
      expect(result!.messages).toBe(4) // three sentences and the final end_of_stream message
      expect(result!.response).toBe(
        'Once upon a time, Ada lived in a small town by the sea. ' +
          'Every morning, Ada looked at the horizon and wondered what lay beyond it. ' +
          'One day a stranger arrived with a map that nobody in a small town by the sea could read.',
      )
    })

    it("decodes error answers into TrustGraph's Error", async () => {
      const results = await trustgraphClientCalls(queues('calculator-service'), [
        { arguments: {} },
        { arguments: { expression: '1/0' } },
      ])
      expect(results[0]!.error).toEqual({
        type: 'invalid-arguments',
        message: 'invalid arguments: "expression" is required',
      })
      expect(results[1]!.error?.type).toBe('tool-service-error')
      expect(results[1]!.error?.message).toContain('division by zero')
    })

    it('answers 100 concurrent calls, each with its own result', async () => {
      const calls = Array.from({ length: 100 }, (_, i) => ({ arguments: { expression: `${i} * ${i} + 1` } }))
      const results = await trustgraphClientCalls(queues('calculator-service'), calls)
      expect(results.map((r) => r.response)).toEqual(calls.map((_, i) => String(i * i + 1)))
      expect(results.every((r) => r.error === null)).toBe(true)
    })
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
      const { stdout } = await run(
        process.execPath,
        [
          'bridge/cli/main.ts',
          'invoke',
          'tell-joke',
          '--arg',
          'topic=programming',
          '--broker',
          broker.url,
          '--timeout',
          '20',
        ],
        { timeout: 30_000 },
      )
      expect(stdout).toMatch(/^Here's a pun for you:\n\n\S.*\n$/)
    })

    it("writes the same bytes the bridge writes: TrustGraph's response re-encodes byte for byte", async () => {
      const connection = await amqpConnect(broker.url, { noDelay: true })
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

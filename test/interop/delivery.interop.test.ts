/**
 * Delivery beyond at-least-once, as TrustGraph's own client sees it
 * (test/interop/tg_client.py, TrustGraph's RequestResponseClient): a request
 * answered again from memory after a lost ack still gives one correct answer
 * and one call of the function; a request that waited past maxAge comes back
 * as TrustGraph's Error of type `expired`. Never stops a broker.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import type { Invoker } from '../../bridge/invokers/invoker.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { createMetrics } from '../../bridge/support/metrics.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { PULSAR_ADMIN, PULSAR_URL, pulsarRunnable, startPulsar } from '../support/pulsar.ts'
import { RABBITMQ_URL, rabbitmqInstalled, startRabbitmq } from '../support/rabbitmq.ts'
import { waitFor } from '../support/response-tap.ts'
import { trustgraphClientCalls, trustgraphInstalled } from '../support/trustgraph.ts'

const run = randomUUID().slice(0, 8)

function service(id: string, queues: Record<string, string>, extra: Record<string, unknown> = {}): ToolServiceSpec {
  return readToolServices({
    functions: {
      [id]: {
        handler: 'counted.handler',
        toolService: { id, ...queues, tools: [{ name: id, description: 'Answers n squared' }], ...extra },
      },
    },
  })[0]!
}

function counted() {
  const calls: number[] = []
  const invoker: Invoker = {
    async invoke({ event }) {
      const n = (event as { arguments: { n: number } }).arguments.n
      calls.push(n)
      return { ok: true, text: String(n * n) }
    },
    prepare: async () => undefined,
    close: async () => {},
  }
  return { invoker, calls }
}

const bridges: Bridge[] = []
afterAll(async () => {
  for (const bridge of bridges) await bridge.stop().catch(() => {})
})

async function serve(broker: string, spec: ToolServiceSpec, invoker: Invoker, options = {}) {
  const metrics = createMetrics({ processMetrics: false })
  const bridge = createBridge({
    transport: await createTransport(broker),
    invoker,
    services: [spec],
    metrics,
    ...options,
  })
  await bridge.start()
  bridges.push(bridge)
  return { bridge, metrics }
}

describe.skipIf(!(rabbitmqInstalled() && trustgraphInstalled()))("TrustGraph's client, RabbitMQ", () => {
  it('a request whose ack was lost after its answer is answered again from memory: one correct answer, one call', async () => {
    await startRabbitmq()
    const spec = service(`dlvi-once-${run}`, { topic: `dlvi-once-${run}` })
    const { invoker, calls } = counted()
    const lost = new Set<string>()
    const { metrics } = await serve(RABBITMQ_URL, spec, invoker, {
      // The first ack of each request is lost, as with a connection dropped between the publish confirm and the ack.
      loseAckAfterAnswer: (id: string) => {
        if (lost.has(id)) return false
        lost.add(id)
        return true
      },
    })
    const results = await trustgraphClientCalls(spec, [{ arguments: { n: 3 } }, { arguments: { n: 4 } }])
    expect(results).toStrictEqual([
      { response: '9', error: null, messages: 1 },
      { response: '16', error: null, messages: 1 },
    ])
    const replays = async () =>
      (await metrics.registry.getSingleMetric('toolbridge_answers_replayed_total')!.get()).values[0]?.value ?? 0
    await waitFor('both answered again from memory', async () => (await replays()) === 2)
    expect(calls.sort()).toStrictEqual([3, 4])
  }, 60_000)
})

describe.skipIf(!(pulsarRunnable() && trustgraphInstalled()))("TrustGraph's client, Pulsar", () => {
  it('a call that waited in a persistent topic past maxAge while no bridge ran gets an expired error, without a call', async () => {
    await startPulsar()
    const topic = `dlvi-age-${run}`
    const spec = service(
      topic,
      { requestQueue: `flow:tg:${topic}-request`, responseQueue: `flow:tg:${topic}-response` },
      { maxAge: 1 },
    )
    // A first run makes the durable subscription the request waits on.
    const first = await serve(PULSAR_URL, spec, counted().invoker)
    await first.bridge.stop()
    const answer = trustgraphClientCalls(spec, [{ arguments: { n: 5 } }], {
      backend: 'pulsar',
      serviceUrl: PULSAR_URL,
      adminUrl: PULSAR_ADMIN,
    })
    const backlog = async () => {
      const response = await fetch(`${PULSAR_ADMIN}/admin/v2/persistent/tg/flow/${topic}-request/stats`)
      if (!response.ok) return 0
      const stats = (await response.json()) as { subscriptions: Record<string, { msgBacklog: number }> }
      return stats.subscriptions[`${spec.id}-request`]?.msgBacklog ?? 0
    }
    await waitFor('the call waiting in the topic', async () => (await backlog()) >= 1, 30_000)
    await new Promise((resolve) => setTimeout(resolve, 1500)) // past maxAge: 1 s
    const { invoker, calls } = counted()
    await serve(PULSAR_URL, spec, invoker)
    const [result] = await answer
    expect(result!.error?.type).toBe('expired')
    expect(result!.error?.message).toMatch(
      /^the request waited \d+(\.\d)? s since the broker took it, over its maxAge of 1 s/,
    )
    expect(calls).toStrictEqual([])
  }, 90_000)
})

/**
 * Tracing that needs no trace backend to check: the context an HTTP function
 * and a Lambda function are handed (a real HTTP server; the Lambda API as the
 * AWS SDK speaks it, test/support/fake-lambda.ts), and a collector that is
 * down or never answers, which must not fail a request: its spans are
 * dropped and counted. On the embedded broker.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import { LocationInvoker } from '../../bridge/invokers/invoker-for-location.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { readToolServices } from '../../bridge/project/tool-services.ts'
import { createMetrics } from '../../bridge/support/metrics.ts'
import { startTracing } from '../../bridge/tracing/start-tracing.ts'
import type { Tracing } from '../../bridge/tracing/tracing.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { encodeRequest } from '../../shared/protocol.ts'
import { FakeLambda, reply } from '../support/fake-lambda.ts'
import { ResponseTap, waitFor, type Seen } from '../support/response-tap.ts'

const traceparentOf = () => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`
const traceIdOf = (traceparent: string | undefined) => traceparent?.split('-')[1]

/** An OTLP endpoint that takes connections and never answers. */
async function silentCollector(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(() => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

describe('tracing into functions elsewhere, with a collector that is down', () => {
  const broker = new MemoryBroker()
  const metrics = createMetrics({ processMetrics: false })
  let httpServer: Server
  const httpHeaders: IncomingHttpHeaders[] = []
  let fake: FakeLambda
  let tracing: Tracing
  let bridge: Bridge
  let client: MemoryTransport
  let tap: { http: ResponseTap; lambda: ResponseTap; stream: ResponseTap }
  const services = () =>
    readToolServices({
      service: 'traced',
      functions: {},
      custom: {
        toolServices: {
          http: { id: 'traced-http', topic: 'traced-http', url: httpUrl, tools: [{ name: 'http', description: 'd' }] },
          lambda: {
            id: 'traced-lambda',
            topic: 'traced-lambda',
            function: 'fn',
            tools: [{ name: 'lambda', description: 'd' }],
          },
          stream: {
            id: 'traced-stream',
            topic: 'traced-stream',
            function: 'streamer',
            response: 'stream',
            tools: [{ name: 'stream', description: 'd' }],
          },
        },
      },
    })
  let httpUrl = ''

  beforeAll(async () => {
    httpServer = createServer((req, res) => {
      httpHeaders.push(req.headers)
      res.end('ok')
    })
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve))
    httpUrl = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/fn`
    fake = await FakeLambda.start()
    fake.script('fn', reply.result('from lambda'))
    fake.script('streamer', { type: 'stream', steps: ['a', 'b'] })
    // Port 9 (discard) is closed here: every export fails (after the exporter's retries); a small queue fills at once.
    const traced = await startTracing(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
        OTEL_BSP_MAX_QUEUE_SIZE: '20',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
        OTEL_BSP_SCHEDULE_DELAY: '10',
      },
      { handlerInvoker: 'worker-threads', onDropped: (spans) => metrics.spansDropped(spans) },
    )
    tracing = traced!
    const specs = services()
    bridge = createBridge({
      transport: new MemoryTransport(broker),
      invoker: new LocationInvoker({
        settings: resolveSettings({ lambdaEndpoint: fake.url }, {}),
        baseDir: process.cwd(),
      }),
      services: specs,
      metrics,
      tracing,
    })
    await bridge.start()
    client = new MemoryTransport(broker)
    await client.connect()
    const [http, lambda, stream] = await Promise.all(specs.map((s) => ResponseTap.open(client, s.responseQueue)))
    tap = { http: http!, lambda: lambda!, stream: stream! }
  })

  afterAll(async () => {
    await bridge?.stop()
    await tracing?.shutdown()
    await fake?.close()
    httpServer?.closeAllConnections()
    await new Promise<void>((resolve) => httpServer?.close(() => resolve()))
  })

  async function call(queue: string, responses: ResponseTap, traceparent: string): Promise<Seen[]> {
    const id = randomUUID()
    await client.publish(queue, encodeRequest({ arguments: {} }), { id, traceparent })
    return responses.ended(id)
  }

  it('hands an HTTP function its invocation span as a traceparent header', async () => {
    const caller = traceparentOf()
    const [answer] = await call('request:tg:traced-http', tap.http, caller)
    expect(answer?.response.response).toBe('ok')
    const header = httpHeaders.at(-1)?.traceparent as string
    expect(traceIdOf(header)).toBe(traceIdOf(caller))
    expect(header).not.toBe(caller) // the invocation span's own id, a child of the caller's
    expect(traceIdOf(answer?.delivery.properties.traceparent)).toBe(traceIdOf(caller))
  })

  it("hands a Lambda function the context in Invoke's ClientContext, as OpenTelemetry's Lambda instrumentation reads it", async () => {
    const caller = traceparentOf()
    const [answer] = await call('request:tg:traced-lambda', tap.lambda, caller)
    expect(answer?.response.response).toBe('from lambda')
    const encoded = fake.callsTo('fn').at(-1)?.headers['x-amz-client-context'] as string
    const clientContext = JSON.parse(Buffer.from(encoded, 'base64').toString()) as { Custom: { traceparent: string } }
    expect(traceIdOf(clientContext.Custom.traceparent)).toBe(traceIdOf(caller))
  })

  it('and in InvokeWithResponseStream, every chunk sent with a context of the same trace', async () => {
    const caller = traceparentOf()
    const answer = await call('request:tg:traced-stream', tap.stream, caller)
    expect(answer.map((m) => m.response.response).join('')).toBe('ab')
    const call_ = fake.callsTo('streamer').at(-1)
    expect(call_?.streaming).toBe(true)
    const encoded = call_?.headers['x-amz-client-context'] as string
    expect(traceIdOf(JSON.parse(Buffer.from(encoded, 'base64').toString()).Custom.traceparent)).toBe(traceIdOf(caller))
    const contexts = answer.map((m) => m.delivery.properties.traceparent)
    expect(contexts.every((c) => traceIdOf(c) === traceIdOf(caller))).toBe(true)
    expect(new Set(contexts).size).toBe(answer.length) // one send span per message
  })

  it('answers every request while the collector is down, and counts the spans it dropped', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => call('request:tg:traced-http', tap.http, traceparentOf())),
    )
    expect(answers.every((a) => a[0]?.response.error === null)).toBe(true)
    // 150 spans; at most 10 in the export that fails and 20 waiting: the rest are dropped and counted.
    await waitFor('dropped spans counted', async () => (await droppedSpans()) >= 120)
  })

  async function droppedSpans(): Promise<number> {
    const text = await metrics.registry.getSingleMetricAsString('toolbridge_trace_spans_dropped_total')
    return Number(/^toolbridge_trace_spans_dropped_total (\S+)$/m.exec(text)?.[1] ?? 0)
  }
})

describe('a collector that never answers', () => {
  it('holds up no request: past the bounded queue, spans are dropped and counted', async () => {
    const collector = await silentCollector()
    const broker = new MemoryBroker()
    const metrics = createMetrics({ processMetrics: false })
    const tracing = (await startTracing(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_BSP_MAX_QUEUE_SIZE: '20',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
        OTEL_BSP_SCHEDULE_DELAY: '10',
      },
      { handlerInvoker: 'in-process', onDropped: (spans) => metrics.spansDropped(spans) },
    ))!
    const [spec] = readToolServices({
      service: 'silent',
      functions: {
        echo: {
          handler: 'test/fixtures/brokers/handlers.replicaA',
          toolService: {
            id: 'silent',
            topic: 'silent',
            tools: [
              {
                name: 'replica',
                description: 'd',
                arguments: [{ name: 'n', type: 'integer', description: 'n', required: true }],
              },
            ],
          },
        },
      },
    })
    const bridge = createBridge({
      transport: new MemoryTransport(broker),
      invoker: new LocationInvoker({
        settings: resolveSettings({ invoker: 'in-process' }, {}),
        baseDir: process.cwd(),
      }),
      services: [spec!],
      metrics,
      tracing,
    })
    await bridge.start()
    const client = new MemoryTransport(broker)
    await client.connect()
    const tap = await ResponseTap.open(client, spec!.responseQueue)
    try {
      const ids = Array.from({ length: 40 }, () => randomUUID())
      for (const id of ids)
        await client.publish(spec!.requestQueue, encodeRequest({ arguments: { n: 1 } }), {
          id,
          traceparent: traceparentOf(),
        })
      const answers = await Promise.all(ids.map((id) => tap.ended(id)))
      expect(answers.every((a) => a[0]?.response.response === 'A:1')).toBe(true)
      // 40 requests, 3 spans each; one batch of 10 hangs in export, 20 wait: the rest are dropped.
      const text = await metrics.registry.getSingleMetricAsString('toolbridge_trace_spans_dropped_total')
      expect(Number(/^toolbridge_trace_spans_dropped_total (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(120 - 30)
    } finally {
      await tap.close()
      await bridge.stop()
      await tracing.shutdown() // gives up on the silent collector after a bounded wait
      await collector.close()
    }
  }, 30_000)
})

/**
 * One trace from a caller's request to the function and back, read from a
 * real Jaeger (scripts/jaeger.sh) through its query API, on RabbitMQ, Kafka
 * and Pulsar: the caller's traceparent continued, spans named and attributed
 * per the OpenTelemetry conventions for messaging and FaaS, the function
 * handed its span's context, every response message carrying the context of
 * the span that sent it. Skips in one line when Jaeger or a broker is not
 * there. Waits are fail-safes, never assertions on time.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import type { Transport } from '../../bridge/transports/transport.ts'
import { encodeRequest } from '../../shared/protocol.ts'
import { JAEGER_OTLP, jaegerRunning, jaegerTrace, spanNamed, type JaegerSpan } from '../support/jaeger.ts'
import { KAFKA_URL, kafkaAvailable } from '../support/kafka.ts'
import { PULSAR_URL, pulsarRunnable } from '../support/pulsar.ts'
import { RABBITMQ_URL, rabbitmqInstalled } from '../support/rabbitmq.ts'
import { ResponseTap, type Seen } from '../support/response-tap.ts'

const jaeger = await jaegerRunning()

/** A handler that answers with the Lambda context's clientContext, a streamed one, and one that throws. */
const HANDLERS = `
export async function context(event, context) {
  return JSON.stringify({ clientContext: context.clientContext ?? null, requestId: context.awsRequestId })
}
export async function* chunks() {
  yield 'one '
  yield 'two '
  yield 'three'
}
export async function failing() {
  throw new TypeError('no such thing in ' + import.meta.url)
}
`

function projectYml(name: string): string {
  const service = (fn: string, response: string) => `
  ${fn}:
    handler: handlers.${fn}
    toolService:
      id: ${name}-${fn}
      topic: ${name}-${fn}
      response: ${response}
      tools:
        - name: ${fn}
          description: ${fn}
`
  return `service: ${name}
frameworkVersion: "3"
provider:
  name: aws
  runtime: nodejs24.x
  timeout: 30
functions:${service('context', 'single')}${service('chunks', 'stream')}${service('failing', 'single')}`
}

const newTraceId = () => randomBytes(16).toString('hex')
const newSpanId = () => randomBytes(8).toString('hex')
const spanIdOf = (traceparent: string | undefined) => traceparent?.split('-')[2]
const traceIdOf = (traceparent: string | undefined) => traceparent?.split('-')[1]

interface Place {
  broker: string
  url: string | undefined
  system: string
  invoker: 'worker-threads' | 'in-process'
  available: boolean
}

const PLACES: Place[] = [
  {
    broker: 'RabbitMQ',
    url: RABBITMQ_URL,
    system: 'rabbitmq',
    invoker: 'worker-threads',
    available: rabbitmqInstalled(),
  },
  { broker: 'Kafka', url: KAFKA_URL, system: 'kafka', invoker: 'in-process', available: kafkaAvailable() },
  { broker: 'Pulsar', url: PULSAR_URL, system: 'pulsar', invoker: 'worker-threads', available: pulsarRunnable() },
  { broker: 'the embedded broker', url: undefined, system: 'memory', invoker: 'in-process', available: true },
]

describe.skipIf(!jaeger).each(PLACES)('tracing on $broker', (place) => {
  // Unique names: queues, topics and the service name in Jaeger are this run's own.
  const name = `trace-${place.system}-${randomUUID().slice(0, 8)}`
  const serviceName = `toolbridge-test-${name}`
  let dir: string
  let project: Project
  let runtime: Runtime
  let client: Transport
  const taps = new Map<string, ResponseTap>()

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-tracing-'))
    writeFileSync(join(dir, 'handlers.mjs'), HANDLERS)
    writeFileSync(join(dir, 'serverless.yml'), projectYml(name))
    project = loadProject(join(dir, 'serverless.yml'))
    const settings = resolveSettings({ broker: place.url, port: 'off', invoker: place.invoker }, {})
    runtime = await startRuntime(project, settings, {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: JAEGER_OTLP,
        OTEL_SERVICE_NAME: serviceName,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    })
    client = await runtime.connectClient()
    for (const spec of project.services) taps.set(spec.id, await ResponseTap.open(client, spec.responseQueue, 30_000))
  }, 120_000)

  afterAll(async () => {
    for (const tap of taps.values()) await tap.close()
    await runtime?.stop()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  const spec = (fn: string) => {
    const found = project.services.find((s) => s.id === `${name}-${fn}`)
    if (!found) throw new Error(`no service for ${fn}`)
    return found
  }

  /** Publishes a request with these properties as a TrustGraph client would, plus the caller's trace context. */
  async function call(fn: string, context: Record<string, string>): Promise<Seen[]> {
    const id = randomUUID()
    const { requestQueue, id: serviceId } = spec(fn)
    await client.publish(requestQueue, encodeRequest({ user: 'trustgraph', arguments: {} }), { id, ...context })
    return (taps.get(serviceId) as ResponseTap).ended(id)
  }

  /** Calls `fn` as a caller whose trace starts there: the trace's id, and the answer. */
  async function callInNewTrace(fn: string): Promise<{ traceId: string; answer: Seen[] }> {
    const traceId = newTraceId()
    return { traceId, answer: await call(fn, { traceparent: `00-${traceId}-${newSpanId()}-01` }) }
  }

  it.skipIf(!place.available)(
    "continues the caller's trace: process, invoke and send spans, linked, attributed, and handed on",
    async () => {
      const traceId = newTraceId()
      const callerSpan = newSpanId()
      const answer = await call('context', {
        traceparent: `00-${traceId}-${callerSpan}-01`,
        tracestate: 'caller=abc',
        baggage: 'tenant=acme',
      })
      expect(answer).toHaveLength(1)
      const { response, delivery } = answer[0] as Seen
      expect(response.error).toBeNull()

      const spans = await jaegerTrace(traceId, 3)
      const { requestQueue, responseQueue, functionName } = spec('context')
      const processSpan = spanNamed(spans, `process ${requestQueue}`)
      const invokeSpan = spanNamed(spans, functionName)
      const sendSpan = spanNamed(spans, `send ${responseQueue}`)
      expect(spans.every((s) => s.serviceName === serviceName)).toBe(true)

      // Parent and children.
      expect(processSpan.parentId).toBe(callerSpan)
      expect(invokeSpan.parentId).toBe(processSpan.spanId)
      expect(sendSpan.parentId).toBe(processSpan.spanId)

      expect(processSpan.tags).toMatchObject({
        'span.kind': 'consumer',
        'messaging.system': place.system,
        'messaging.operation.type': 'process',
        'messaging.destination.name': requestQueue,
        'messaging.consumer.group.name': `${name}-context-request`,
        'messaging.message.conversation_id': delivery.properties.id,
        'toolbridge.tool': 'context',
        'toolbridge.outcome': 'ok',
        'toolbridge.responses': 1,
      })
      expect(invokeSpan.tags).toMatchObject({
        'span.kind': 'client',
        'faas.invoked_name': functionName,
        'toolbridge.invoker': place.invoker,
        'toolbridge.outcome': 'ok',
      })
      if (place.invoker === 'worker-threads') expect(typeof invokeSpan.tags['faas.coldstart']).toBe('boolean')
      expect(sendSpan.tags).toMatchObject({
        'span.kind': 'producer',
        'messaging.system': place.system,
        'messaging.operation.type': 'send',
        'messaging.destination.name': responseQueue,
        'messaging.message.conversation_id': delivery.properties.id,
        'toolbridge.response.index': 0,
        'toolbridge.response.final': true,
      })

      // The function saw the invocation span as its parent, with the caller's tracestate and baggage.
      const seen = JSON.parse(response.response) as {
        clientContext: { Custom: Record<string, string> }
        requestId: string
      }
      expect(seen.clientContext.Custom).toEqual({
        traceparent: `00-${traceId}-${invokeSpan.spanId}-01`,
        tracestate: 'caller=abc',
        baggage: 'tenant=acme',
      })
      expect(invokeSpan.tags['faas.invocation_id']).toBe(seen.requestId)

      // The answer carries the context of the span that sent it.
      expect(delivery.properties.traceparent).toBe(`00-${traceId}-${sendSpan.spanId}-01`)
      expect(delivery.properties.tracestate).toBe('caller=abc')
    },
    90_000,
  )

  it.skipIf(!place.available)(
    'traces a streamed answer: one send span per message, in order, the last one final',
    async () => {
      const { traceId, answer } = await callInNewTrace('chunks')
      const texts = answer.map((m) => m.response.response)
      expect(texts.join('')).toBe('one two three')
      // Each chunk a message, then the empty final one.
      expect(answer.length).toBe(4)

      const spans = await jaegerTrace(traceId, 2 + answer.length)
      const sends = spans
        .filter((s) => s.operationName === `send ${spec('chunks').responseQueue}`)
        .sort((a, b) => Number(a.tags['toolbridge.response.index']) - Number(b.tags['toolbridge.response.index']))
      expect(sends.map((s) => s.tags['toolbridge.response.index'])).toEqual([0, 1, 2, 3])
      expect(sends.map((s) => s.tags['toolbridge.response.final'])).toEqual([false, false, false, true])
      // Message i carries send span i's context.
      expect(answer.map((m) => spanIdOf(m.delivery.properties.traceparent))).toEqual(sends.map((s) => s.spanId))
      const processSpan = spanNamed(spans, `process ${spec('chunks').requestQueue}`)
      expect(processSpan.tags['toolbridge.responses']).toBe(4)
      expect(sends.every((s) => s.parentId === processSpan.spanId)).toBe(true)
    },
    90_000,
  )

  it.skipIf(!place.available)(
    "records a function's error by its kind, with no stack and no host path",
    async () => {
      const { traceId, answer } = await callInNewTrace('failing')
      expect(answer[0]?.response.error?.type).toBe('tool-service-error')

      const spans = await jaegerTrace(traceId, 3)
      const processSpan = spanNamed(spans, `process ${spec('failing').requestQueue}`)
      const invokeSpan = spanNamed(spans, spec('failing').functionName)
      for (const span of [processSpan, invokeSpan]) {
        expect(span.tags).toMatchObject({
          'error.type': 'function-error',
          'toolbridge.outcome': 'function-error',
          'otel.status_code': 'ERROR',
          error: true,
        })
      }
      // The request's span says what its caller was told: the path scrubbed, no stack; the invocation's says no more than its kind.
      expect(processSpan.tags['otel.status_description']).toBe(answer[0]?.response.error?.message)
      expect(processSpan.tags['otel.status_description']).toBe('TypeError: no such thing in handlers.mjs')
      expect(JSON.stringify(spans)).not.toContain(dir)
      expect(JSON.stringify(spans)).not.toMatch(/\n\s+at /)
    },
    90_000,
  )
})

describe.skipIf(!jaeger)('a malformed traceparent', () => {
  const name = `trace-bad-${randomUUID().slice(0, 8)}`
  let dir: string
  let project: Project
  let runtime: Runtime
  let tap: ResponseTap
  let client: Transport

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-tracing-'))
    writeFileSync(join(dir, 'handlers.mjs'), HANDLERS)
    writeFileSync(join(dir, 'serverless.yml'), projectYml(name))
    project = loadProject(join(dir, 'serverless.yml'))
    runtime = await startRuntime(project, resolveSettings({ port: 'off', invoker: 'in-process' }, {}), {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: JAEGER_OTLP, OTEL_SERVICE_NAME: `toolbridge-test-${name}` },
    })
    client = await runtime.connectClient()
    tap = await ResponseTap.open(client, project.services[0]!.responseQueue)
  })

  afterAll(async () => {
    await tap?.close()
    await runtime?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it.each([
    ['a wrong version', `ff-${newTraceId()}-${newSpanId()}-01`],
    ['a wrong length', `00-${newTraceId()}-${newSpanId()}-011`],
    ['all-zero ids', `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`],
    ['10 KB of junk', 'x'.repeat(10_240)],
  ])('with %s is ignored: an answer as usual, in a new root trace', async (_, traceparent) => {
    const id = randomUUID()
    const spec = project.services[0]!
    await client.publish(spec.requestQueue, encodeRequest({ arguments: {} }), { id, traceparent })
    const [message] = await tap.ended(id)
    expect(message?.response.error).toBeNull()
    // The function got a context of the new trace, not the junk.
    const seen = JSON.parse(message!.response.response) as { clientContext: { Custom: Record<string, string> } }
    const newTrace = traceIdOf(seen.clientContext.Custom.traceparent)
    expect(newTrace).toMatch(/^[0-9a-f]{32}$/)
    expect(traceIdOf(message!.delivery.properties.traceparent)).toBe(newTrace)
    expect(traceparent).not.toContain(newTrace)

    const spans: JaegerSpan[] = await jaegerTrace(newTrace!, 3)
    expect(spanNamed(spans, `process ${spec.requestQueue}`).parentId).toBeUndefined()
  })
})

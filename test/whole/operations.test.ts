/**
 * What an operator relies on, on a running bridge (embedded broker, HTTP
 * gateway on a free port): /healthz, /readyz flipping when the bridge stops
 * taking requests, /metrics counting what happened, and the limits with
 * their flags and errors.
 */
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RequestClient, ToolCallError } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings, type SettingFlags } from '../../bridge/project/settings.ts'
import type { Runtime } from '../../bridge/runtime.ts'
import { encodeRequest, ID_PROPERTY } from '../../shared/protocol.ts'
import { startInProcess } from '../support/in-process-runtime.ts'

const PROJECT = loadProject(fileURLToPath(new URL('../../serverless.yml', import.meta.url)))
const service = (id: string) => PROJECT.services.find((s) => s.id === id)!

async function start(flags: SettingFlags = {}): Promise<Runtime> {
  return startInProcess(PROJECT, { drainTimeout: '1', ...flags })
}

async function clientFor(runtime: Runtime, serviceId: string): Promise<RequestClient> {
  const client = new RequestClient(await runtime.connectClient(), service(serviceId))
  await client.start()
  return client
}

/** A sample's value from Prometheus text, by its name and labels as written. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('health, readiness and metrics', () => {
  let runtime: Runtime
  let url: string

  beforeAll(async () => {
    runtime = await start()
    url = runtime.gateway!.url
    const joke = await clientFor(runtime, 'joke-service')
    const story = await clientFor(runtime, 'story-service')
    const tellJoke = { config: { style: 'pun' }, arguments: { topic: 'cats' } }
    await joke.call(tellJoke)
    await joke.call(tellJoke)
    await expect(joke.call({ config: { style: 'pun' }, arguments: {} })).rejects.toThrow(ToolCallError)
    await story.call({ config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 } }, { onChunk: () => {} })
    // Not even JSON: no tool can be told, still counted.
    const transport = await runtime.connectClient()
    await transport.publish(service('joke-service').requestQueue, new TextEncoder().encode('{'), {
      [ID_PROPERTY]: 'garbage',
    })
  })
  afterAll(() => runtime?.stop())

  it('GET /healthz and /readyz answer 200 while serving', async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    const ready = await fetch(`${url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toStrictEqual({ status: 'ready' })
  })

  it('GET /metrics counts requests, answers, errors by kind, latency and chunks per service and tool', async () => {
    const response = await fetch(`${url}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await response.text()
    expect(sample(text, 'toolbridge_requests_total{service="joke-service",tool="tell-joke"}')).toBe(3)
    expect(sample(text, 'toolbridge_requests_total{service="joke-service",tool=""}')).toBe(1)
    expect(sample(text, 'toolbridge_answers_total{service="joke-service",tool="tell-joke",outcome="ok"}')).toBe(2)
    expect(sample(text, 'toolbridge_answers_total{service="joke-service",tool="tell-joke",outcome="error"}')).toBe(1)
    expect(
      sample(text, 'toolbridge_errors_total{service="joke-service",tool="tell-joke",kind="invalid-arguments"}'),
    ).toBe(1)
    expect(sample(text, 'toolbridge_errors_total{service="joke-service",tool="",kind="bad-request"}')).toBe(1)
    expect(sample(text, 'toolbridge_request_duration_seconds_count{service="joke-service",tool="tell-joke"}')).toBe(3)
    expect(sample(text, 'toolbridge_chunks_published_total{service="story-service"}')).toBe(3)
    expect(sample(text, 'toolbridge_requests_in_flight{service="joke-service"}')).toBe(0)
    // As TrustGraph's own DynamicToolService counts: answers sent, per service.
    expect(sample(text, 'tg_dynamic_tool_service_invocation_total{processor="joke-service"}')).toBe(2)
    expect(sample(text, 'tg_dynamic_tool_service_invocation_total{processor="story-service"}')).toBe(1)
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0)
  })

  it('GET /readyz is 503 once the bridge stops taking requests, while HTTP still answers', async () => {
    await runtime.bridge.stop()
    const ready = await fetch(`${url}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toStrictEqual({ status: 'not ready' })
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })
})

describe('metrics of error answers', () => {
  const FAULTS = loadProject(fileURLToPath(new URL('../fixtures/faults/serverless.yml', import.meta.url)))
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await startInProcess(FAULTS, { drainTimeout: '1' })
    url = runtime.gateway!.url
  })
  afterAll(() => runtime?.stop())

  const call = async (serviceId: string, args: Record<string, unknown>) => {
    const client = new RequestClient(await runtime.connectClient(), FAULTS.services.find((s) => s.id === serviceId)!)
    await client.start()
    return client.call({ arguments: args }).then(
      () => 'ok',
      (err: unknown) => (err instanceof ToolCallError ? err.type : String(err)),
    )
  }

  it('count a single answer replaced by too-large as an error, and label errors with their wire type', async () => {
    // Over the embedded broker's 5 MB: the function answers, the bridge sends too-large instead.
    expect(await call('big-service', { bytes: 6 * 1024 * 1024 })).toBe('too-large')
    expect(await call('throws-service', {})).toBe('tool-service-error')
    const text = await (await fetch(`${url}/metrics`)).text()
    expect(sample(text, 'toolbridge_answers_total{service="big-service",tool="big",outcome="ok"}')).toBeUndefined()
    expect(sample(text, 'toolbridge_answers_total{service="big-service",tool="big",outcome="error"}')).toBe(1)
    expect(sample(text, 'toolbridge_errors_total{service="big-service",tool="big",kind="too-large"}')).toBe(1)
    expect(sample(text, 'tg_dynamic_tool_service_invocation_total{processor="big-service"}') ?? 0).toBe(0)
    expect(
      sample(text, 'toolbridge_errors_total{service="throws-service",tool="throw",kind="tool-service-error"}'),
    ).toBe(1)
    expect(text).not.toContain('kind="function-error"')
  })
})

describe('limits', () => {
  it('--max-request-bytes: a larger request gets too-large on the wire, without invoking', async () => {
    const runtime = await start({ maxRequestBytes: '200' })
    try {
      const client = await clientFor(runtime, 'calculator-service')
      expect(await client.call({ arguments: { expression: '1+1' } })).toBe('2')
      const big = { arguments: { expression: '1+'.repeat(100) + '1' } }
      const size = encodeRequest(big).byteLength
      await expect(client.call(big)).rejects.toStrictEqual(
        new ToolCallError('too-large', `request of ${size} bytes is over the limit of 200`),
      )
    } finally {
      await runtime.stop()
    }
  })

  it('--max-in-flight: services whose concurrency adds up to more are refused at start, named', async () => {
    await expect(start({ maxInFlight: '20' })).rejects.toThrow(
      "--max-in-flight: the services' concurrency adds up to 24 (joke-service 8, calculator-service 8, story-service 8), over the cap of 20 requests in flight",
    )
  })

  it('rejects a limit that is not a positive integer', () => {
    expect(() => resolveSettings({ maxInFlight: '0' }, {})).toThrow(
      '--max-in-flight: "0" must be an integer from 1 to 1000000',
    )
    expect(() => resolveSettings({ maxRequestBytes: '1kb' }, {})).toThrow(
      '--max-request-bytes: "1kb" must be an integer',
    )
  })
})

describe('--http-token', () => {
  let runtime: Runtime
  let url: string
  beforeAll(async () => {
    runtime = await start({ httpToken: 's3cret' })
    url = runtime.gateway!.url
  })
  afterAll(() => runtime?.stop())

  const call = (headers: Record<string, string>) =>
    fetch(`${url}/tools/calculate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ arguments: { expression: '2+3' } }),
    })

  it('refuses /tools without the bearer token, or with another', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret' }] as Record<
      string,
      string
    >[]) {
      const response = await call(headers)
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe('Bearer')
    }
    expect((await fetch(`${url}/tools`)).status).toBe(401)
  })

  it('answers with it', async () => {
    const response = await call({ authorization: 'Bearer s3cret' })
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('{"response":"5"}\n')
  })

  it('leaves /healthz, /readyz and /metrics open', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await fetch(url + path)).status).toBe(200)
  })
})

/**
 * Fuzz: 10,000 generated messages (test/support/hostile-messages.ts) —
 * malformed and hostile ones interleaved with valid requests — published as
 * raw bytes on the example services' request queues of a real RabbitMQ,
 * served by the bridge with its default invoker (worker threads). Then:
 * every valid request got its exact answer, every bad one that carries an id
 * a clear error (a known wire type, a message without a stack trace or a host
 * path), every id-less one an answer under `unknown`, nothing was answered
 * twice that was sent once, and the bridge still serves afterwards.
 *
 * FUZZ_COUNT and FUZZ_SEED override the size and the seed (printed, so that a
 * failure can be replayed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import { RequestClient } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { RabbitTransport } from '../../bridge/transports/rabbitmq/rabbitmq-transport.ts'
import type { Consumer } from '../../bridge/transports/transport.ts'
import { handler as joke } from '../../functions/joke/handler.ts'
import { handler as story } from '../../functions/story/handler.ts'
import { ID_PROPERTY, UNKNOWN_ID, type ToolResponse } from '../../shared/protocol.ts'
import { generateMessages, type HostileMessage } from '../support/hostile-messages.ts'
import { rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import { readResponse } from '../support/response-tap.ts'

const COUNT = Number(process.env.FUZZ_COUNT ?? 10_000)
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000)
const EXAMPLES = loadProject(fileURLToPath(new URL('../../serverless.yml', import.meta.url)))
/** Wire error types the bridge may send (docs/wire-contract.md#error-types). */
const WIRE_ERROR_TYPES = [
  'bad-request',
  'missing-config',
  'invalid-arguments',
  'too-large',
  'tool-service-error',
  'timeout',
  'unavailable',
]
/** A fail-safe for the whole run, not a limit on its speed. */
const RUN_LIMIT_MS = 240_000

async function oracle() {
  const text = async (result: unknown) => {
    if (typeof result === 'string') return result
    let joined = ''
    for await (const chunk of result as AsyncIterable<string>) joined += chunk
    return joined
  }
  return {
    joke: async (user: string, topic: string) =>
      text(await joke({ user, config: { style: 'pun' }, arguments: { topic } }, {})),
    story: async (hero: string, sentences: number) =>
      text(await story({ user: 'x', config: {}, arguments: { hero, sentences } }, {})),
  }
}

describe.skipIf(!rabbitmqInstalled())('fuzz: hostile messages at the bridge on RabbitMQ', () => {
  let broker: RabbitBroker
  let runtime: Runtime
  let client: RabbitTransport
  const taps: Consumer[] = []
  let messages: HostileMessage[]
  let services: typeof EXAMPLES.services
  /** Final messages by id, and every message's text by id. */
  const finals = new Map<string, ToolResponse[]>()
  const chunks = new Map<string, string[]>()
  let expectedFinals = 0
  let receivedFinals = 0
  let allIn: (() => void) | undefined

  beforeAll(async () => {
    console.log(`fuzz: ${COUNT} messages, seed ${SEED} (FUZZ_SEED=${SEED} replays it)`)
    messages = await generateMessages(COUNT, SEED, await oracle())
    broker = await startRabbitmq()
    // Unique topics: nothing left from another run can answer here.
    const run = `fuzz${SEED}${process.pid}`
    services = EXAMPLES.services.map((s) => ({
      ...s,
      requestQueue: `request:tg:${run}-${s.topic}`,
      responseQueue: `response:tg:${run}-${s.topic}`,
    }))
    runtime = await startRuntime(
      { ...EXAMPLES, services },
      resolveSettings({ broker: broker.url, port: 'off', drainTimeout: '1' }, {}),
    )
    client = new RabbitTransport(broker.url)
    await client.connect()
    for (const spec of services) {
      taps.push(
        await client.subscribe(spec.responseQueue, (delivery) => {
          delivery.ack()
          const { id, response } = readResponse(delivery)
          if (!response.end_of_stream) {
            chunks.set(id, [...(chunks.get(id) ?? []), response.response])
            return
          }
          finals.set(id, [...(finals.get(id) ?? []), response])
          if (++receivedFinals >= expectedFinals) allIn?.()
        }),
      )
    }
    const queueOf = new Map(services.map((s) => [s.id, s.requestQueue]))
    expectedFinals = messages.length
    const done = new Promise<void>((resolve) => (allIn = resolve))
    const started = performance.now()
    // Publish in windows: the broker confirms each message before the window moves on.
    for (let i = 0; i < messages.length; i += 200) {
      await Promise.all(
        messages
          .slice(i, i + 200)
          .map((m) =>
            client.publish(queueOf.get(m.serviceId)!, m.body, m.id === undefined ? {} : { [ID_PROPERTY]: m.id }),
          ),
      )
    }
    let timer: NodeJS.Timeout | undefined
    await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, RUN_LIMIT_MS)))])
    clearTimeout(timer)
    const seconds = (performance.now() - started) / 1000
    console.log(`fuzz: ${receivedFinals} final answers to ${messages.length} messages in ${seconds.toFixed(1)} s`)
  }, RUN_LIMIT_MS + 60_000)

  afterAll(async () => {
    for (const tap of taps) await tap.close()
    await client?.close()
    await runtime?.stop()
    await broker?.stop()
  })

  it('answers every message that carries an id: valid ones exactly, bad ones with a clear error', () => {
    const failures: string[] = []
    const byCategory = new Map<string, number>()
    const sentPerId = new Map<string, number>()
    for (const m of messages) if (m.id) sentPerId.set(m.id, (sentPerId.get(m.id) ?? 0) + 1)
    for (const m of messages) {
      byCategory.set(m.category, (byCategory.get(m.category) ?? 0) + 1)
      if (m.expect.type === 'unknown-id') continue
      const got = finals.get(m.id!) ?? []
      const label = `${m.category} ${m.id!.slice(0, 60)}`
      if (got.length !== sentPerId.get(m.id!)) {
        failures.push(`${label}: ${got.length} final answers for ${sentPerId.get(m.id!)} sent`)
        continue
      }
      for (const final of got) {
        if (m.expect.type === 'answer') {
          // A stream's text is its chunks and the final message; two copies' chunks interleave, so those are counted only.
          const text = (chunks.get(m.id!) ?? []).join('') + final.response
          if (final.error) failures.push(`${label}: error ${JSON.stringify(final.error)}`)
          else if (got.length === 1 && text !== m.expect.text)
            failures.push(`${label}: answered ${JSON.stringify(text.slice(0, 120))}`)
          else if (
            got.length > 1 &&
            text.length !== m.expect.text.length * got.length &&
            final.response !== m.expect.text
          ) {
            failures.push(`${label}: duplicate answered ${JSON.stringify(final.response.slice(0, 120))}`)
          }
        } else if (m.expect.type === 'error') {
          if (!final.error)
            failures.push(`${label}: answered ${JSON.stringify(final.response.slice(0, 120))}, expected an error`)
          else if (!m.expect.errorTypes.includes(final.error.type))
            failures.push(`${label}: error type ${final.error.type}: ${final.error.message.slice(0, 200)}`)
        }
        if (final.error) {
          const { type, message } = final.error
          if (!WIRE_ERROR_TYPES.includes(type)) failures.push(`${label}: unknown error type ${type}`)
          if (message.trim() === '') failures.push(`${label}: empty error message`)
          if (/\n\s+at |\/work\/|\/home\/|node_modules|file:\/\//.test(message))
            failures.push(`${label}: stack or path in ${JSON.stringify(message.slice(0, 300))}`)
        }
      }
    }
    console.log(`fuzz categories: ${[...byCategory].map(([c, n]) => `${c} ${n}`).join(', ')}`)
    expect(failures.slice(0, 20), `${failures.length} failures (seed ${SEED})`).toStrictEqual([])
  })

  it('answers id-less messages under "unknown", one each', () => {
    const idless = messages.filter((m) => m.expect.type === 'unknown-id').length
    expect(idless).toBeGreaterThan(0)
    expect(finals.get(UNKNOWN_ID)?.length ?? 0).toBe(idless)
  })

  it('leaves no prototype polluted and keeps serving', async () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    const after = new RequestClient(client, services.find((s) => s.id === 'calculator-service')!)
    await after.start()
    expect(
      await after.call({ user: 'after', config: {}, arguments: { expression: '6*7' } }, { timeoutMs: 20_000 }),
    ).toBe('42')
    await after.close()
  })
})

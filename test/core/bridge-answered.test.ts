/**
 * What the bridge tells its watcher (`onAnswered`, the web console's feed)
 * of each request answered: its id, tool, outcome, how long it waited on
 * the broker, how long the function ran, how long the bridge took, and the
 * bytes it published. Lower bounds only, each from a wait the test itself
 * makes: never an assertion on how fast anything is.
 */
import { describe, expect, it } from 'vitest'
import { createBridge, type AnsweredRequest, type Bridge } from '../../bridge/core/bridge.ts'
import type { Invocation, Invoker, Outcome } from '../../bridge/invokers/invoker.ts'
import { readToolServices } from '../../bridge/project/tool-services.ts'
import type { Logger } from '../../bridge/support/logger.ts'
import { MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { encodeRequest, UNKNOWN_ID } from '../../shared/protocol.ts'
import { ResponseTap, waitFor } from '../support/response-tap.ts'
import { stoppedAfterEach } from '../support/stopped-after-each.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const [SPEC] = readToolServices({
  functions: {
    story: {
      handler: 'story.handler',
      toolService: {
        id: 'story',
        topic: 'story',
        response: 'stream',
        concurrency: 1,
        configParams: ['mode'],
        tools: [
          {
            name: 'tell',
            description: 'tells',
            config: { mode: 'tell' },
            arguments: [{ name: 'words', type: 'integer', description: 'how many', required: true }],
          },
        ],
      },
    },
  },
})
const spec = SPEC!

/** Streams `words` words, 10 ms apart; the next invocation first waits for `hold` when the test sets one. */
class StoryInvoker implements Invoker {
  hold: Promise<void> | undefined
  invoke = async (invocation: Invocation): Promise<Outcome> => {
    const words = (invocation.event as { arguments: { words: number } }).arguments.words
    const held = this.hold
    this.hold = undefined
    await held
    for (let i = 1; i <= words; i++) {
      await sleep(10)
      invocation.onChunk(`word${i} `)
    }
    return { ok: true, text: '' }
  }
  prepare = async () => undefined
  async close() {}
}

describe("the bridge's report of each request answered", () => {
  const stopped = stoppedAfterEach<Bridge>()

  async function start(onAnswered: (request: AnsweredRequest) => void, logger?: Logger) {
    const transport = new MemoryTransport()
    const invoker = new StoryInvoker()
    const bridge = stopped(createBridge({ transport, invoker, services: [spec], onAnswered, logger }))
    await bridge.start()
    const tap = await ResponseTap.open(transport, spec.responseQueue)
    const send = (id: string | undefined, args: Record<string, unknown>) =>
      transport.publish(
        spec.requestQueue,
        encodeRequest({ config: { mode: 'tell' }, arguments: args }),
        id === undefined ? {} : { id },
      )
    return { bridge, transport, invoker, tap, send }
  }

  it('gives the id, tool, outcome, the time invoking within the time in the bridge, and the bytes published', async () => {
    const reports: AnsweredRequest[] = []
    const { tap, send } = await start((r) => reports.push(r))
    await send('r1', { words: 5 })
    const messages = await tap.ended('r1')
    await waitFor('the report', () => reports.length === 1)
    const [report] = reports
    expect(report).toMatchObject({ service: 'story', tool: 'tell', id: 'r1', errorKind: undefined })
    // Five words, each after 10 ms.
    expect(report!.invokeMs).toBeGreaterThanOrEqual(45)
    expect(report!.totalMs).toBeGreaterThanOrEqual(report!.invokeMs!)
    // The embedded broker stamps each message: the wait is known, if short.
    expect(report!.queueMs).toBeGreaterThanOrEqual(0)
    expect(report!.answerBytes).toBe(messages.reduce((sum, m) => sum + m.delivery.body.byteLength, 0))
    expect(messages.length).toBe(6) // five chunks and the end
  })

  it('counts the time a request waited behind another on the broker', async () => {
    const reports: AnsweredRequest[] = []
    const { tap, send, invoker } = await start((r) => reports.push(r))
    let release!: () => void
    invoker.hold = new Promise((resolve) => (release = resolve))
    await send('first', { words: 1 })
    await send('second', { words: 1 })
    // One at a time (concurrency 1): the second waits on the broker while the first is held.
    await sleep(100)
    release()
    await tap.ended('second')
    await waitFor('both reports', () => reports.length === 2)
    const second = reports.find((r) => r.id === 'second')!
    expect(second.queueMs).toBeGreaterThanOrEqual(90)
    // The first was held in its invocation, not on the broker.
    const first = reports.find((r) => r.id === 'first')!
    expect(first.invokeMs).toBeGreaterThanOrEqual(90)
    expect(first.queueMs).toBeLessThan(second.queueMs!)
  })

  it('says a refused request was not invoked, with the error kind answered; a request without an id is reported as unknown', async () => {
    const reports: AnsweredRequest[] = []
    const { tap, send } = await start((r) => reports.push(r))
    await send('bad', { words: 'many' })
    const [answer] = await tap.ended('bad')
    await send(undefined, { words: 1 })
    await waitFor('both reports', () => reports.length === 2)
    expect(reports[0]).toMatchObject({ id: 'bad', tool: 'tell', errorKind: 'invalid-arguments', invokeMs: undefined })
    expect(reports[0]!.answerBytes).toBe(answer!.delivery.body.byteLength)
    expect(reports[1]).toMatchObject({ id: UNKNOWN_ID, errorKind: undefined })
  })

  it('answers and acks a request whose watcher throws, once, and logs the failure', async () => {
    const warnings: string[] = []
    const errors: string[] = []
    const logger: Logger = {
      debug() {},
      info() {},
      warn: (_fields, message) => void warnings.push(message),
      error: (_fields, message) => void errors.push(message),
    }
    let reports = 0
    const { bridge, tap, send } = await start(() => {
      reports++
      throw new Error('watcher down')
    }, logger)
    await send('w1', { words: 1 })
    await tap.ended('w1')
    await send('w2', { words: 1 })
    await tap.ended('w2')
    await waitFor('both reports', () => reports === 2)
    await waitFor('nothing in flight', () => bridge.inFlight === 0)
    expect(warnings).toEqual(['the watcher of answered requests failed', 'the watcher of answered requests failed'])
    expect(errors).toEqual([])
    // Not handed back: never answered a second time (from memory).
    expect(tap.messages('w1').length).toBe(2)
  })
})

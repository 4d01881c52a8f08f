/**
 * Delivery beyond at-least-once, as one suite run on every broker: a backlog
 * that waited past `maxAge` is answered `expired` without invoking; a request
 * redelivered after its answer was published is answered again from memory
 * (every message, in order) without a second call; a request whose answer
 * cannot be published lands in the dead-letter queue with its reason, and
 * `dead-letters replay` gets it answered; a dead letter replayed after its
 * function was fixed runs again; a forged dead letter is refused by replay
 * and stays; a copy of a request sent while it runs waits for its answer; a
 * dead-letter queue that cannot be written makes the bridge hand the request
 * back, never drop it.
 *
 * The function is a counting invoker in this process (the count is what the
 * tests are about); the broker is real. Where a broker refusing an answer is
 * needed, the bridge's transport refuses publishes to the response queue the
 * way a transport reports a refusal (a non-retriable ToolbridgeError); the
 * dead letters themselves go through the real broker.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { listDeadLetters, replayDeadLetters } from '../../bridge/cli/dead-letter-reader.ts'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import { deadLetterMessage, replayTargets } from '../../bridge/core/dead-letters.ts'
import type { Invoker } from '../../bridge/invokers/invoker.ts'
import type { DeliveryDefaults } from '../../bridge/project/settings.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { createMetrics, type Metrics } from '../../bridge/support/metrics.ts'
import type { Properties, Transport } from '../../bridge/transports/transport.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { encodeRequest, ID_PROPERTY } from '../../shared/protocol.ts'
import { ResponseTap, waitFor } from './response-tap.ts'

export interface DeliveryProfile {
  /** A new transport on the broker, not connected yet. */
  transport(): Promise<Transport>
  /** Fail-safe for waits that should end. */
  limitMs: number
  /** Removes what the suite left on the broker: every queue or topic whose name contains `run`. */
  drop?(run: string): Promise<void>
  /**
   * Kafka: a consumer group that never committed starts at the end of the topic (TrustGraph's `latest`), so what
   * was published before a service's first bridge ran is not read by it.
   */
  newGroupsStartAtEnd?: boolean
}

const DEFAULTS: DeliveryDefaults = {
  maxAgeMs: 600_000,
  answeredMemorySize: 100,
  answeredMemoryTtlMs: 600_000,
  deadLetterQueue: undefined,
}

/** A streamed tool service on persistent queues of its own (they keep a backlog while no bridge runs). */
function service(id: string, extra: Record<string, unknown> = {}): ToolServiceSpec {
  const [spec] = readToolServices({
    functions: {
      [id]: {
        handler: 'counted.handler',
        toolService: {
          id,
          requestQueue: `flow:tg:${id}-request`,
          responseQueue: `flow:tg:${id}-response`,
          response: 'stream',
          tools: [{ name: id, description: 'Streams a<n>, b<n>, then answers c<n>' }],
          ...extra,
        },
      },
    },
  })
  return spec!
}

/**
 * A function that counts its calls: two chunks and an answer, each naming the request's `n`. While
 * `broken` it throws instead; while `held` is set, each call waits for it.
 */
function counted() {
  const calls: number[] = []
  const state: { broken: boolean; held: Promise<void> | undefined } = { broken: false, held: undefined }
  const invoker: Invoker = {
    async invoke({ event, onChunk }) {
      const n = (event as { arguments: { n: number } }).arguments.n
      calls.push(n)
      if (state.broken) return { ok: false, kind: 'function-error', message: `broken at ${n}` }
      await state.held
      onChunk(`a${n}`)
      onChunk(`b${n}`)
      return { ok: true, text: `c${n}` }
    },
    prepare: async () => undefined,
    close: async () => {},
  }
  return { invoker, calls, state }
}

/** The transport, but publishes to queues `refused()` names fail as a broker's refusal does (not retriable). */
function refusing(transport: Transport, refused: (queue: string) => boolean): Transport & { refusals: number } {
  let refusals = 0
  return new Proxy(transport, {
    get(target, property) {
      if (property === 'refusals') return refusals
      if (property === 'publish') {
        return (queue: string, body: Uint8Array, properties: Record<string, string>) => {
          if (!refused(queue)) return target.publish(queue, body, properties)
          refusals++
          return Promise.reject(new ToolbridgeError('too-large', `the broker refused the message to ${queue}`))
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as Transport & { refusals: number }
}

async function replayedCount(metrics: Metrics, service: string): Promise<number> {
  const metric = await metrics.registry.getSingleMetric('toolbridge_answers_replayed_total')!.get()
  return metric.values.find((v) => v.labels.service === service)?.value ?? 0
}

const texts = (tap: ResponseTap, id: string) =>
  tap
    .messages(id)
    .map(
      (m) =>
        `${m.response.error ? `error:${m.response.error.type}` : m.response.response}${m.response.end_of_stream ? '.' : ''}`,
    )

export function describeDelivery(name: string, profile: DeliveryProfile): void {
  const run = randomUUID().slice(0, 8)
  const cleanups: (() => Promise<unknown>)[] = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
    await profile.drop?.(run)
  })

  async function client(): Promise<Transport> {
    const transport = await profile.transport()
    await transport.connect()
    cleanups.push(() => transport.close())
    return transport
  }

  async function bridgeOf(
    transport: Transport,
    spec: ToolServiceSpec,
    invoker: Invoker,
    options: { delivery?: Partial<DeliveryDefaults>; loseAckAfterAnswer?: (id: string) => boolean } = {},
  ): Promise<{ bridge: Bridge; metrics: Metrics }> {
    const metrics = createMetrics({ processMetrics: false })
    const bridge = createBridge({
      transport,
      invoker,
      services: [spec],
      metrics,
      delivery: { ...DEFAULTS, ...options.delivery },
      loseAckAfterAnswer: options.loseAckAfterAnswer,
    })
    await bridge.start()
    cleanups.push(() => bridge.stop())
    return { bridge, metrics }
  }

  const send = (transport: Transport, spec: ToolServiceSpec, id: string, n: number) =>
    transport.publish(spec.requestQueue, encodeRequest({ arguments: { n } }), { [ID_PROPERTY]: id })

  describe(`${name}: delivery`, () => {
    it('a backlog built while the bridge was down: what waited past maxAge is answered expired without invoking, what is new is answered', async () => {
      const spec = service(`dlv-age-${run}`, { maxAge: 2 })
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      // A first run makes the subscription (and on Kafka the group's committed offset) the backlog waits on.
      const first = counted()
      const earlier = await bridgeOf(await profile.transport(), spec, first.invoker)
      await send(caller, spec, 'warm', 0)
      await tap.ended('warm')
      await earlier.bridge.stop()

      for (let n = 1; n <= 3; n++) await send(caller, spec, `old-${n}`, n)
      await new Promise((resolve) => setTimeout(resolve, 3500)) // past maxAge: 2 s
      const later = counted()
      await bridgeOf(await profile.transport(), spec, later.invoker)
      await send(caller, spec, 'new', 9)

      await tap.ended('new')
      for (let n = 1; n <= 3; n++) {
        const [answer, ...more] = await tap.ended(`old-${n}`)
        expect(more).toStrictEqual([])
        expect(answer!.response.error?.type).toBe('expired')
        expect(answer!.response.error?.message).toMatch(
          /^the request waited \d+(\.\d)? s since the broker took it, over its maxAge of 2 s/,
        )
      }
      expect(texts(tap, 'new')).toStrictEqual(['a9', 'b9', 'c9.'])
      expect(later.calls).toStrictEqual([9])
    })

    it('a request redelivered after its answer was published is answered again from memory, every message in order, without a second call', async () => {
      const spec = service(`dlv-once-${run}`)
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls } = counted()
      let lost = 0
      const { metrics } = await bridgeOf(await profile.transport(), spec, invoker, {
        // The ack of the first answer is lost, as with a connection dropped between the publish confirm and the ack.
        loseAckAfterAnswer: (id) => id === 'twice' && lost++ === 0,
      })
      await send(caller, spec, 'twice', 1)
      await waitFor('the answer, twice', () => texts(tap, 'twice').length >= 6, profile.limitMs)
      expect(texts(tap, 'twice')).toStrictEqual(['a1', 'b1', 'c1.', 'a1', 'b1', 'c1.'])
      expect(calls).toStrictEqual([1])
      expect(await replayedCount(metrics, spec.id)).toBe(1)

      // The same id with another body is another request: it runs.
      await send(caller, spec, 'twice', 2)
      await waitFor('the second body answered', () => texts(tap, 'twice').length >= 9, profile.limitMs)
      expect(texts(tap, 'twice').slice(6)).toStrictEqual(['a2', 'b2', 'c2.'])
      expect(calls).toStrictEqual([1, 2])
    })

    it('an idempotent service keeps no memory: a redelivery runs the function again', async () => {
      const spec = service(`dlv-idem-${run}`, { idempotent: true })
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls } = counted()
      let lost = 0
      await bridgeOf(await profile.transport(), spec, invoker, {
        loseAckAfterAnswer: (id) => id === 'again' && lost++ === 0,
      })
      await send(caller, spec, 'again', 4)
      await waitFor('the answer, twice', () => texts(tap, 'again').length >= 6, profile.limitMs)
      expect(calls).toStrictEqual([4, 4])
    })

    it('a request whose answer cannot be published lands in the dead-letter queue with its reason; replayed, it is answered', async () => {
      const spec = service(`dlv-dead-${run}`)
      const deadLetterQueue = `flow:tg:dlv-dead-${run}-dlq`
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls } = counted()
      let refuseAnswers = true
      const transport = refusing(await profile.transport(), (q) => refuseAnswers && q === spec.responseQueue)
      await bridgeOf(transport, spec, invoker, { delivery: { deadLetterQueue } })
      const request = encodeRequest({ arguments: { n: 7 } })
      await caller.publish(spec.requestQueue, request, { [ID_PROPERTY]: 'lost', extra: 'kept' })
      await waitFor('the refusal', () => transport.refusals > 0, profile.limitMs)

      const listed = await deadLettersOn(deadLetterQueue)
      const mine = listed.filter((item) => item.ok && item.deadLetter.properties.id === 'lost')
      expect(mine).toHaveLength(1)
      const [item] = mine
      if (!item?.ok) throw new Error('not a dead letter')
      expect(item.deadLetter).toMatchObject({
        kind: 'too-large',
        service: spec.id,
        queue: spec.requestQueue,
        attempts: 1,
        properties: { id: 'lost', extra: 'kept' },
      })
      expect(item.deadLetter.message).toMatch(/^its answer could not be published: the broker refused/)
      expect(Buffer.from(item.deadLetter.body).equals(Buffer.from(request))).toBe(true)
      expect(calls).toStrictEqual([7])

      refuseAnswers = false
      const replayed = await replay(deadLetterQueue, [item.deadLetter.id, 'no-such-id'], [spec])
      expect(replayed.replayed.map((d) => d.id)).toStrictEqual([item.deadLetter.id])
      expect(replayed.notFound).toStrictEqual(['no-such-id'])
      await tap.ended('lost')
      expect(texts(tap, 'lost')).toStrictEqual(['a7', 'b7', 'c7.'])
      expect(calls).toStrictEqual([7, 7])
      const after = await deadLettersOn(deadLetterQueue)
      expect(after.filter((i) => i.ok && i.deadLetter.id === item.deadLetter.id)).toStrictEqual([])
    })

    it('an undecodable request without an id, and an answer of a kind the service keeps, are dead letters too', async () => {
      const spec = service(`dlv-kinds-${run}`, { deadLetters: { kinds: ['bad-request'] } })
      const deadLetterQueue = `flow:tg:dlv-kinds-${run}-dlq`
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls } = counted()
      await bridgeOf(await profile.transport(), spec, invoker, { delivery: { deadLetterQueue } })
      await caller.publish(spec.requestQueue, Buffer.from('{not json'), {})
      const badArguments = JSON.stringify({ user: 'u', config: '{}', arguments: '{"n": 1' })
      await caller.publish(spec.requestQueue, Buffer.from(badArguments), { [ID_PROPERTY]: 'bad' })
      await send(caller, spec, 'fine', 2)
      await tap.ended('bad')
      await tap.ended('fine')
      await tap.ended('unknown') // the answer to the request without an id, which nobody can match
      await waitFor(
        'both dead letters',
        async () => {
          const listed = await deadLettersOn(deadLetterQueue, 1000)
          const kinds = listed.flatMap((i) =>
            i.ok ? [`${i.deadLetter.properties.id ?? '-'}:${i.deadLetter.kind}`] : [],
          )
          return kinds.sort().join(' ') === '-:bad-request bad:bad-request'
        },
        profile.limitMs,
      )
      expect(calls).toStrictEqual([2])
    })

    it('a dead letter that is no longer a request is refused by replay and stays in the queue', async () => {
      const deadLetterQueue = `flow:tg:dlv-bad-${run}-dlq`
      const caller = await client()
      const spec = service(`dlv-bad-${run}`)
      // A bridge makes the subscription that keeps the queue's messages.
      await bridgeOf(await profile.transport(), spec, counted().invoker, { delivery: { deadLetterQueue } })
      const brokenId = randomUUID()
      const request = { body: Buffer.from('{not json'), properties: { id: 'b' } }
      await publishDeadLetter(
        caller,
        deadLetterQueue,
        request,
        { service: spec.id, queue: spec.requestQueue },
        brokenId,
      )
      const result = await replay(deadLetterQueue, [brokenId], [spec])
      expect(result.replayed).toStrictEqual([])
      expect(result.refused).toHaveLength(1)
      expect(result.refused[0]!.reason).toMatch(/^its body is not a request/)
      const listed = await deadLettersOn(deadLetterQueue)
      expect(listed.filter((i) => i.ok && i.deadLetter.id === brokenId)).toHaveLength(1)
    })

    it('a dead letter replayed after its function was fixed runs again; a redelivery of the replay does not', async () => {
      const spec = service(`dlv-fix-${run}`, { deadLetters: { kinds: ['function-error'] } })
      const deadLetterQueue = `flow:tg:dlv-fix-${run}-dlq`
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls, state } = counted()
      state.broken = true
      let lost = 0
      await bridgeOf(await profile.transport(), spec, invoker, {
        delivery: { deadLetterQueue },
        // The replay's first ack is lost: its redelivery must be answered from memory, not run a third time.
        loseAckAfterAnswer: (id) => id === 'fixed' && !state.broken && lost++ === 0,
      })
      await send(caller, spec, 'fixed', 5)
      await tap.ended('fixed')
      expect(texts(tap, 'fixed')).toStrictEqual(['error:tool-service-error.'])
      // Sent again as is, it is answered from memory with the old error.
      await send(caller, spec, 'fixed', 5)
      await waitFor('the error, again', () => texts(tap, 'fixed').length >= 2, profile.limitMs)
      expect(calls).toStrictEqual([5])

      let deadLetterId = ''
      await waitFor(
        'the dead letter',
        async () => {
          const listed = await deadLettersOn(deadLetterQueue, 1000)
          const found = listed.find((i) => i.ok && i.deadLetter.properties.id === 'fixed')
          deadLetterId = found?.ok ? found.deadLetter.id : ''
          return deadLetterId !== ''
        },
        profile.limitMs,
      )
      state.broken = false // the function is fixed
      const replayed = await replay(deadLetterQueue, [deadLetterId], [spec])
      expect(replayed.replayed.map((d) => d.id)).toStrictEqual([deadLetterId])
      await waitFor('the fixed answer, twice', () => texts(tap, 'fixed').length >= 8, profile.limitMs)
      expect(texts(tap, 'fixed').slice(2)).toStrictEqual(['a5', 'b5', 'c5.', 'a5', 'b5', 'c5.'])
      expect(calls).toStrictEqual([5, 5])
      // The fixed answer replaced the old error: the request sent again as is gets it.
      await send(caller, spec, 'fixed', 5)
      await waitFor('the fixed answer, again', () => texts(tap, 'fixed').length >= 11, profile.limitMs)
      expect(texts(tap, 'fixed').slice(8)).toStrictEqual(['a5', 'b5', 'c5.'])
      expect(calls).toStrictEqual([5, 5])
    })

    it('a forged dead letter (aimed at a configuration service, a response queue, another service) is refused by replay and stays', async () => {
      const spec = service(`dlv-forged-${run}`)
      const other = service(`dlv-forged-other-${run}`)
      const deadLetterQueue = `flow:tg:dlv-forged-${run}-dlq`
      const caller = await client()
      await bridgeOf(await profile.transport(), spec, counted().invoker, { delivery: { deadLetterQueue } })
      const configTap = await ResponseTap.open(caller, 'request:tg:config', profile.limitMs)
      const answerTap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const forged = [
        {
          queue: 'request:tg:config',
          service: spec.id,
          body: '{"operation":"delete","keys":[{"type":"tool","key":"x"}]}',
        },
        { queue: spec.responseQueue, service: spec.id, body: '{"response":"forged","end_of_stream":true}' },
        { queue: other.requestQueue, service: spec.id, body: JSON.stringify({ arguments: '{"n":1}' }) },
      ].map((f) => ({ ...f, id: randomUUID() }))
      for (const f of forged) {
        const request = { body: Buffer.from(f.body), properties: { id: 'waiting' } }
        await publishDeadLetter(caller, deadLetterQueue, request, { service: f.service, queue: f.queue }, f.id)
      }
      const result = await replay(deadLetterQueue, undefined, [spec, other])
      expect(result.replayed).toStrictEqual([])
      expect(result.refused).toStrictEqual([
        {
          id: forged[0]!.id,
          reason: expect.stringMatching(/^"request:tg:config" is not the request queue of a tool service/),
        },
        { id: forged[1]!.id, reason: `"${spec.responseQueue}" is a response queue: replay sends requests only` },
        {
          id: forged[2]!.id,
          reason: expect.stringMatching(
            /^it names service "dlv-forged-.*", but ".*" is the request queue of "dlv-forged-other-/,
          ),
        },
      ])
      const listed = await deadLettersOn(deadLetterQueue)
      expect(listed.flatMap((i) => (i.ok ? [i.deadLetter.id] : []))).toStrictEqual(forged.map((f) => f.id))
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(configTap.messages('waiting')).toStrictEqual([])
      expect(answerTap.messages('waiting')).toStrictEqual([])
    })

    it.skipIf(profile.newGroupsStartAtEnd)(
      'a dead letter replayed to a service whose bridge has not run yet is kept for it, and answered once it runs',
      async () => {
        const spec = service(`dlv-first-${run}`)
        const deadLetterQueue = `flow:tg:dlv-first-${run}-dlq`
        const caller = await client()
        const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
        // Another service's bridge makes the subscription that keeps the dead-letter queue's messages.
        const keeper = await bridgeOf(await profile.transport(), service(`dlv-keeper-${run}`), counted().invoker, {
          delivery: { deadLetterQueue },
        })
        await keeper.bridge.stop()
        const id = randomUUID()
        const request = { body: encodeRequest({ arguments: { n: 8 } }), properties: { [ID_PROPERTY]: 'first' } }
        await publishDeadLetter(caller, deadLetterQueue, request, { service: spec.id, queue: spec.requestQueue }, id)
        const replayed = await replay(deadLetterQueue, [id], [spec])
        expect(replayed.replayed.map((d) => d.id)).toStrictEqual([id])
        const { invoker, calls } = counted()
        await bridgeOf(await profile.transport(), spec, invoker)
        await tap.ended('first')
        expect(texts(tap, 'first')).toStrictEqual(['a8', 'b8', 'c8.'])
        expect(calls).toStrictEqual([8])
      },
    )

    it('a copy of a request sent while it runs waits for its answer: both are answered, the function runs once', async () => {
      const spec = service(`dlv-copy-${run}`)
      const caller = await client()
      const tap = await ResponseTap.open(caller, spec.responseQueue, profile.limitMs)
      const { invoker, calls, state } = counted()
      let release: () => void = () => {}
      state.held = new Promise((resolve) => {
        release = resolve
      })
      await bridgeOf(await profile.transport(), spec, invoker)
      await send(caller, spec, 'copy', 6)
      await waitFor('the first run', () => calls.length === 1, profile.limitMs)
      await send(caller, spec, 'copy', 6) // a client's retry while it runs
      await new Promise((resolve) => setTimeout(resolve, 500))
      release()
      await waitFor('both answers', () => texts(tap, 'copy').length >= 6, profile.limitMs)
      expect(texts(tap, 'copy')).toStrictEqual(['a6', 'b6', 'c6.', 'a6', 'b6', 'c6.'])
      // Right after the answer: from memory too.
      await send(caller, spec, 'copy', 6)
      await waitFor('the third answer', () => texts(tap, 'copy').length >= 9, profile.limitMs)
      expect(calls).toStrictEqual([6])
    })

    it('a dead-letter queue that cannot be written: the request is handed back and retried, then kept once it can be', async () => {
      const spec = service(`dlv-unwritable-${run}`)
      const deadLetterQueue = `flow:tg:dlv-unwritable-${run}-dlq`
      const caller = await client()
      const { invoker } = counted()
      let refuseDeadLetters = true
      const transport = refusing(
        await profile.transport(),
        (q) => q === spec.responseQueue || (refuseDeadLetters && q === deadLetterQueue),
      )
      await bridgeOf(transport, spec, invoker, { delivery: { deadLetterQueue } })
      await send(caller, spec, 'kept', 3)
      // Each attempt is refused twice: its answer, then its dead letter.
      await waitFor('two attempts', () => transport.refusals >= 4, profile.limitMs)
      refuseDeadLetters = false
      await waitFor(
        'the dead letter',
        async () => {
          const listed = await deadLettersOn(deadLetterQueue, 1000)
          return listed.some((i) => i.ok && i.deadLetter.properties.id === 'kept' && i.deadLetter.attempts >= 2)
        },
        profile.limitMs * 2,
      )
    })
  })

  async function withTransport<T>(use: (transport: Transport) => Promise<T>): Promise<T> {
    const transport = await profile.transport()
    await transport.connect()
    try {
      return await use(transport)
    } finally {
      await transport.close()
    }
  }

  /** The dead letters on `queue`, read and left there. */
  function deadLettersOn(queue: string, idleMs = 1500) {
    return withTransport((t) => listDeadLetters(t, queue, { limit: 100, idleMs }))
  }

  /** Replays the dead letters `ids` on `queue` (every one, when undefined) to the services of `specs`. */
  function replay(queue: string, ids: string[] | undefined, specs: ToolServiceSpec[]) {
    return withTransport((t) => replayDeadLetters(t, queue, ids, replayTargets(specs), { limit: 100, idleMs: 1500 }))
  }

  /** Publishes on `deadLetterQueue`, as dead letter `id`, `request` as one crash on `from.queue` leaves it. */
  async function publishDeadLetter(
    caller: Transport,
    deadLetterQueue: string,
    request: { body: Uint8Array; properties: Properties },
    from: { service: string; queue: string },
    id: string,
  ): Promise<void> {
    const letter = deadLetterMessage(request, { kind: 'crash', message: 'x', ...from, attempts: 1 }, id, new Date())
    await caller.publish(deadLetterQueue, letter.body, letter.properties)
  }
}

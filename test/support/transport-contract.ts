/**
 * What every transport must do, as one suite: the example tools answered and
 * streamed, bad requests refused, answers under their own ids, load,
 * competing replicas, a broker outage, and the Transport contract itself
 * (flow control, acks after close, properties, message size, an unreachable
 * broker). Each broker's test file calls `describeTransport` inside its own
 * describe, once its broker is up, and keeps only what is specific to that
 * broker; a new broker is a folder under bridge/transports/ plus one call.
 *
 * What a broker cannot do is said in its profile and shows as a skipped test,
 * never as a silently missing one. Waits are fail-safes, never assertions on
 * time; measured times are printed.
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings, type Settings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { RequestClient } from '../../bridge/trustgraph/request-client.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import type { MemoryBroker } from '../../bridge/transports/memory/memory-transport.ts'
import type { Delivery, Transport } from '../../bridge/transports/transport.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { encodeRequest, ID_PROPERTY, UNKNOWN_ID } from '../../shared/protocol.ts'
import { metricValue } from './metrics.ts'
import { ResponseTap, waitFor } from './response-tap.ts'
import { trustgraphClientCalls, trustgraphInstalled, type TgBackend, type TgCall } from './trustgraph.ts'

const EXAMPLES_YML = fileURLToPath(new URL('../../serverless.yml', import.meta.url))
const CALCULATOR = fileURLToPath(new URL('../../functions/calculator/handler.ts', import.meta.url))
const utf8 = new TextEncoder()
const text = (body: Uint8Array) => Buffer.from(body).toString('utf8')

/** What a broker's suite and the contract close after each test, last opened first. */
export class ClosedAfterEach {
  private readonly pending: (() => Promise<unknown> | unknown)[] = []

  /** Registers the afterEach that closes them; call it inside the describe they serve. */
  register(): this {
    afterEach(async () => {
      for (const cleanup of this.pending.splice(0).reverse()) await cleanup()
    })
    return this
  }

  add(cleanup: () => Promise<unknown> | unknown): void {
    this.pending.push(cleanup)
  }

  async runtime(start: Promise<Runtime>): Promise<Runtime> {
    const started = await start
    this.add(() => started.stop())
    return started
  }

  /** A transport or broker client, connected, closed after the test. */
  async connected<T extends { connect(): Promise<unknown>; close(): Promise<unknown> }>(created: T): Promise<T> {
    await created.connect()
    this.add(() => created.close())
    return created
  }

  async client(on: Transport, spec: { requestQueue: string; responseQueue: string }): Promise<RequestClient> {
    const created = new RequestClient(on, spec)
    await created.start()
    this.add(() => created.close())
    return created
  }
}

/** A broker as test/support/{rabbitmq,kafka,pulsar}.ts start or find it. */
export interface StartedBroker {
  url: string
  stop(): Promise<void>
}

/** A broker's suite: its broker, settings on it, and what its tests open, closed after each. */
export interface BrokerSuite<B extends StartedBroker> {
  /** Once beforeAll has run. */
  readonly broker: B
  /** The broker's settings, HTTP gateway off. */
  readonly settings: Settings
  readonly closing: ClosedAfterEach
  /** A bridge runtime on the broker (or another URL of it, such as one with other partitions), stopped after the test. */
  runtime(project: Project, brokerUrl?: string): Promise<Runtime>
  client(on: Transport, spec: { requestQueue: string; responseQueue: string }): Promise<RequestClient>
}

/**
 * The set-up every broker's test file shares: the broker started (or the
 * running one found) before its tests, `prepare` run on it (leftovers of an
 * earlier run removed), and stopped after them if it was started here. Call it
 * inside the file's describe; its tests skip without the broker, each file
 * saying why in one line (describe.skipIf).
 */
export function brokerSuite<B extends StartedBroker>(
  start: () => Promise<B>,
  options: { prepare?: (broker: B) => Promise<void>; startTimeoutMs?: number } = {},
): BrokerSuite<B> {
  let broker: B | undefined
  let settings: Settings | undefined
  const closing = new ClosedAfterEach().register()
  beforeAll(async () => {
    broker = await start()
    settings = resolveSettings({ broker: broker.url, port: 'off' }, {})
    await options.prepare?.(broker)
  }, options.startTimeoutMs)
  afterAll(async () => {
    await broker?.stop()
  })
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the broker is not up yet (used before beforeAll)')
    return value
  }
  return {
    get broker() {
      return started(broker)
    },
    get settings() {
      return started(settings)
    },
    closing,
    runtime(project, brokerUrl = started(broker).url) {
      const on =
        brokerUrl === started(broker).url ? started(settings) : resolveSettings({ broker: brokerUrl, port: 'off' }, {})
      return closing.runtime(startRuntime(project, on))
    },
    client: (on, spec) => closing.client(on, spec),
  }
}

/** A tool service of a project by id; a missing one fails the test saying which. */
export function serviceById(project: Project, id: string): ToolServiceSpec {
  const spec = project.services.find((s) => s.id === id)
  if (!spec) throw new Error(`no tool service "${id}"`)
  return spec
}

/** Takes the broker away and brings it back, as its own tools allow. */
export type Outage =
  /** Down, then up: while it is down the bridge must say it is not ready, and a publish must wait instead of failing. */
  | { stop(): Promise<void>; start(): Promise<void> }
  /** One restart command, with nothing to check while it is down. */
  | { restart(): Promise<void> }

export interface TransportProfile {
  /** Bridge settings for this broker (its URL, the client to use, HTTP off). */
  settings: Settings
  /** The embedded broker the bridges and clients of the suite share. */
  memoryBroker?: MemoryBroker
  /** The fixture project: test/fixtures/brokers/<broker>.yml, with a `*-replica-service` and a `*-strict-service`. */
  fixturesYml: string
  /** Fail-safe for calls that should be answered. */
  callTimeoutMs: number
  /** What maxMessageBytes must say, and a message size the broker carries. */
  maxMessageBytes: number
  bigMessageBytes: number
  /**
   * Two bridges on one request queue, each taking a share of the requests;
   * `kill`: a replica whose transport closes mid-work hands its requests to
   * the other. A string says why not (the broker's own file may test it its way).
   */
  replicas: { kill: true | string } | string
  /** How to take the broker away (a string: why it is not done here). */
  outage: (Outage & { recoveryLimitMs?: number }) | string
  /** Flow control: the queue to use (fresh, or emptied by `drop`), and where the broker can say what it holds back. */
  flowControl: {
    queue(): string
    /** Messages the broker still holds for the queue's subscription `sub`, not yet handed out. */
    heldByBroker?(queue: string): Promise<number>
    /** Pulsar hands a nacked message back behind what the consumer already holds: the rest must be settled to reach it. */
    nackedComesBackLast?: boolean
    /** Removes what the test left on the broker. */
    drop?(queue: string): Promise<void>
  }
  /**
   * Where the burst of 500 runs when not on the example's own queues, and why: Pulsar's non-persistent
   * topics drop by design what a consumer's connection cannot take at once, so a burst there measures
   * the broker's back-up under load, not the bridge; a persistent topic holds it instead.
   */
  burstQueues?: { requestQueue: string; responseQueue: string; why: string }
  /** A transport on a port where nothing listens (its retries cut short); `secret`: a password in its URL (a string: why not). */
  unreachable: { transport(): Transport; secret?: string } | string
}

/**
 * 200 requests (arguments `n` and `ms: 5`) published at once on a replica
 * service's request queue, each under its own id, answered through `tap`,
 * while sampling which of the two replicas has work in hand. Resolves with
 * the answers in order (`A:<n>` or `B:<n>`), their ids, and whether both
 * replicas were seen busy.
 */
export async function loadTwoReplicas(
  closing: ClosedAfterEach,
  replicas: [Runtime, Runtime],
  t: Transport,
  tap: ResponseTap,
  requestQueue: string,
): Promise<{ answers: string[]; ids: string[]; bothBusy: boolean }> {
  const busy = [false, false]
  const sampler = setInterval(() => {
    replicas.forEach((r, i) => (busy[i] ||= r.bridge.inFlight > 0))
  }, 1)
  closing.add(() => clearInterval(sampler))
  const ids: string[] = []
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, n) => {
      const id = randomUUID()
      ids.push(id)
      return new Promise<string>((resolve, reject) => {
        t.publish(requestQueue, encodeRequest({ arguments: { n, ms: 5 } }), { [ID_PROPERTY]: id }).catch(reject)
        tap.ended(id).then((messages) => resolve(messages[0]!.response.response), reject)
      })
    }),
  )
  return { answers, ids, bothBusy: busy[0]! && busy[1]! }
}

/** Calls a fixture replica in a loop from 8 callers; lost calls (non-persistent queues drop what has no consumer) are counted, not failed. */
export function keepCalling(c: RequestClient) {
  let loading = true
  let lostOrLate = 0
  let answered = 0
  const done = Promise.all(
    Array.from({ length: 8 }, async (_, worker) => {
      for (let n = 0; loading; n++) {
        await c.call({ arguments: { n: worker * 1_000_000 + n } }, { timeoutMs: 2000 }).then(
          () => answered++,
          () => lostOrLate++,
        )
      }
    }),
  )
  return {
    get answered() {
      return answered
    },
    /** Stops calling; resolves with how many calls were lost or late. */
    async stop() {
      loading = false
      await done
      return lostOrLate
    },
  }
}

/** The answer a replica in the fixtures gives: `A:<n>` or `B:<n>`. */
function asReplica(project: Project, exportName: string): Project {
  return {
    ...project,
    services: project.services.map((s) =>
      s.id.endsWith('-replica-service') && s.location.kind === 'handler'
        ? { ...s, location: { ...s.location, handler: `handlers.${exportName}` } }
        : s,
    ),
  }
}

function service(project: Project, test: (id: string) => boolean): ToolServiceSpec {
  const spec = project.services.find((s) => test(s.id))
  if (!spec) throw new Error('no such tool service in the fixtures')
  return spec
}

/** Registers the contract suite for one transport; call it inside a describe whose beforeAll has the broker up. */
export function describeTransport(name: string, profile: TransportProfile): void {
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(profile.fixturesYml)
  const replica = service(fixtures, (id) => id.endsWith('-replica-service'))
  const strict = service(fixtures, (id) => id.endsWith('-strict-service'))
  const byId = (id: string) => service(examples, (candidate) => candidate === id)
  const timeoutMs = profile.callTimeoutMs
  const closing = new ClosedAfterEach()

  const start = (project: Project) => startRuntime(project, profile.settings, { memoryBroker: profile.memoryBroker })
  const runtime = (project: Project) => closing.runtime(start(project))
  const transport = async (): Promise<Transport> =>
    closing.connected(
      await createTransport(profile.settings.broker, profile.memoryBroker, { pulsar: profile.settings.pulsar }),
    )
  const client = (on: Transport, spec: { requestQueue: string; responseQueue: string }) => closing.client(on, spec)

  describe(`the transport contract on ${name}`, () => {
    closing.register()

    describe('the example tools', () => {
      let bridge: Runtime
      let clientTransport: Transport
      beforeAll(async () => {
        bridge = await start(examples)
        clientTransport = await bridge.connectClient()
      })
      afterAll(async () => {
        await bridge?.stop()
      })

      const call = async (serviceId: string, args: Record<string, unknown>, user?: string) => {
        const spec = byId(serviceId)
        const c = await client(clientTransport, spec)
        return c.call({ user, config: spec.tools[0]!.config, arguments: args }, { timeoutMs })
      }

      it('answers tell-joke in one message with the greeting and the joke', async () => {
        expect(await call('joke-service', { topic: 'cats' }, 'alice')).toBe(
          "Hey alice! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.",
        )
      })

      it('streams tell-story chunk by chunk, and only the last message ends the stream', async () => {
        const spec = byId('story-service')
        const tap = await ResponseTap.open(clientTransport, spec.responseQueue, timeoutMs)
        closing.add(() => tap.close())
        const id = randomUUID()
        await clientTransport.publish(
          spec.requestQueue,
          encodeRequest({ config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 } }),
          {
            [ID_PROPERTY]: id,
          },
        )
        const messages = (await tap.ended(id)).map((m) => m.response)
        const chunks = messages.map((m) => m.response).filter((chunk) => chunk !== '')
        expect(chunks).toEqual([
          'Once upon a time, Ada lived in a small town by the sea.',
          ' Every morning, Ada looked at the horizon and wondered what lay beyond it.',
          ' One day a stranger arrived with a map that nobody in a small town by the sea could read.',
        ])
        expect(messages.map((m) => m.end_of_stream)).toEqual([...messages.slice(1).map(() => false), true])
        expect(messages.every((m) => m.error === null)).toBe(true)
      })

      it('gives a streaming client of tell-story the chunks and their concatenation', async () => {
        const c = await client(clientTransport, byId('story-service'))
        const chunks: string[] = []
        const answer = await c.call(
          { config: { pace: 5 }, arguments: { hero: 'Bo' } },
          { timeoutMs, onChunk: (chunk) => chunks.push(chunk) },
        )
        expect(chunks).toHaveLength(5)
        expect(answer).toBe(chunks.join(''))
      })

      it.runIf(existsSync(CALCULATOR))('answers calculate exactly', async () => {
        expect(await call('calculator-service', { expression: '0.1+0.2' })).toBe('0.3')
      })

      it('serves clients that spell the queues as Pulsar URIs', async () => {
        const c = await client(clientTransport, {
          requestQueue: 'non-persistent://tg/request/joke',
          responseQueue: 'non-persistent://tg/response/joke',
        })
        const answer = await c.call({ config: { style: 'one-liner' }, arguments: { topic: 'music' } }, { timeoutMs })
        expect(answer).toBe(
          "Hey there! Here's a one-liner for you:\n\nMusic is the only thing I am not afraid to face the music about.",
        )
      })

      it('answers a burst of 500 requests, each under its own id', async () => {
        let on = { bridge, clientTransport, spec: byId('joke-service') }
        if (profile.burstQueues) {
          const { requestQueue, responseQueue } = profile.burstQueues
          const spec = { ...on.spec, requestQueue, responseQueue }
          const burstBridge = await runtime({ ...examples, services: [spec] })
          on = { bridge: burstBridge, clientTransport: await burstBridge.connectClient(), spec }
        }
        const c = await client(on.clientTransport, on.spec)
        const started = performance.now()
        const answers = await Promise.all(
          Array.from({ length: 500 }, (_, i) => c.call({ arguments: { topic: `topic ${i}` } }, { timeoutMs })),
        )
        const seconds = (performance.now() - started) / 1000
        answers.forEach((answer, i) => expect(answer).toContain(`a joke about topic ${i},`))
        const where = profile.burstQueues ? ` on ${on.spec.requestQueue} (${profile.burstQueues.why})` : ''
        console.info(
          `${name}: a burst of 500 tell-joke calls answered in ${seconds.toFixed(2)} s${where} (worker threads starting included)`,
        )
      })
    })

    describe('bad requests, as on the embedded broker', () => {
      let bridge: Runtime
      let clientTransport: Transport
      let replicaTap: ResponseTap
      let strictTap: ResponseTap
      beforeAll(async () => {
        bridge = await start(fixtures)
        clientTransport = await bridge.connectClient()
        replicaTap = await ResponseTap.open(clientTransport, replica.responseQueue, timeoutMs)
        strictTap = await ResponseTap.open(clientTransport, strict.responseQueue, timeoutMs)
      })
      afterAll(async () => {
        await bridge?.stop()
      })

      it.each([
        {
          name: 'malformed JSON',
          spec: replica,
          body: () => utf8.encode('{"arguments": '),
          type: 'bad-request',
          message: /JSON/,
        },
        { name: 'an empty body', spec: replica, body: () => new Uint8Array(0), type: 'bad-request', message: /./ },
        {
          name: 'a body that is not an object',
          spec: replica,
          body: () => utf8.encode('[1, 2]'),
          type: 'bad-request',
          message: /object/,
        },
        {
          name: 'a missing required config param',
          spec: strict,
          body: () => encodeRequest({ arguments: { n: 1 } }),
          type: 'missing-config',
          message: /region/,
        },
        {
          name: 'an argument of the wrong type',
          spec: replica,
          body: () => encodeRequest({ arguments: { n: 'one' } }),
          type: 'invalid-arguments',
          message: /"n"/,
        },
        {
          name: 'a missing required argument',
          spec: replica,
          body: () => encodeRequest({ arguments: {} }),
          type: 'invalid-arguments',
          message: /"n"/,
        },
      ])(
        'answers $name with one $type error that ends the stream, and keeps serving',
        async ({ spec, body, type, message }) => {
          const tap = spec === strict ? strictTap : replicaTap
          const id = randomUUID()
          await clientTransport.publish(spec.requestQueue, body(), { [ID_PROPERTY]: id })
          const [only, ...more] = await tap.ended(id)
          expect(more).toEqual([])
          expect(only!.response).toMatchObject({ error: { type }, response: '', end_of_stream: true })
          expect(only!.response.error!.message).toMatch(message)

          const c = await client(clientTransport, spec)
          const config = spec === strict ? { region: 'eu-west-1' } : {}
          expect(await c.call({ config, arguments: { n: 7 } }, { timeoutMs })).toBe(
            spec === strict ? 'eu-west-1:7' : 'A:7',
          )
        },
      )

      it('answers a request without an id under the id "unknown"', async () => {
        await clientTransport.publish(replica.requestQueue, encodeRequest({ arguments: { n: 42 } }), {})
        const [only, ...more] = await replicaTap.ended(UNKNOWN_ID)
        expect(more).toEqual([])
        expect(only!.response).toEqual({ error: null, response: 'A:42', end_of_stream: true })
        expect(only!.delivery.properties).toEqual({ [ID_PROPERTY]: UNKNOWN_ID })
      })
    })

    describe('replicas', () => {
      const replicas = typeof profile.replicas === 'string' ? undefined : profile.replicas
      const whyNot = typeof profile.replicas === 'string' ? ` (${profile.replicas})` : ''

      it.runIf(replicas)(
        `shares one request queue between two replicas and answers every request exactly once${whyNot}`,
        async () => {
          const a = await runtime(asReplica(fixtures, 'replicaA'))
          const b = await runtime(asReplica(fixtures, 'replicaB'))
          const t = await transport()
          const tap = await ResponseTap.open(t, replica.responseQueue, timeoutMs)
          closing.add(() => tap.close())
          const c = await client(t, replica)
          const { answers, ids, bothBusy } = await loadTwoReplicas(closing, [a, b], t, tap, replica.requestQueue)
          answers.forEach((answer, n) => expect(answer).toMatch(new RegExp(`^[AB]:${n}$`)))
          const byA = answers.filter((answer) => answer.startsWith('A:')).length
          console.info(`${name}: two replicas answered 200 requests, ${byA} by A and ${200 - byA} by B`)
          expect(bothBusy).toBe(true)
          // One more round trip through each replica flushes anything still on its way; then count.
          await Promise.all([0, 1, 2, 3].map((n) => c.call({ arguments: { n } }, { timeoutMs })))
          for (const id of ids) expect(tap.messages(id)).toHaveLength(1)
        },
      )

      const whyNotKill = typeof replicas?.kill === 'string' ? ` (${replicas.kill})` : whyNot
      it.runIf(replicas?.kill === true)(
        `hands the requests a killed replica had in flight to the other replica${whyNotKill}`,
        async () => {
          const a = await runtime(asReplica(fixtures, 'replicaA'))
          const b = await runtime(asReplica(fixtures, 'replicaB'))
          const t = await transport()
          const c = await client(t, replica)
          const answeredAfterKill: string[] = []
          let killed = false
          const calls = Array.from({ length: 16 }, (_, n) =>
            c.call({ arguments: { n, ms: 1500 } }, { timeoutMs }).then((answer) => {
              if (killed) answeredAfterKill.push(answer)
              return answer
            }),
          )
          // Each replica takes as many as its concurrency (4 in the fixture); the rest wait in the queue.
          await waitFor('both replicas to be busy', () => a.bridge.inFlight === 4 && b.bridge.inFlight === 4)
          const inFlightOnA = a.bridge.inFlight
          // Killed: its connection goes without acking anything; its functions keep running and finish into nothing.
          await a.transport.close()
          killed = true

          const answers = await Promise.all(calls)
          answers.forEach((answer, n) => expect(answer).toMatch(new RegExp(`^[AB]:${n}$`)))
          expect(inFlightOnA).toBeGreaterThan(0)
          expect(answeredAfterKill.filter((answer) => answer.startsWith('A:'))).toEqual([])
          console.info(
            `${name}: replica A killed with ${inFlightOnA} requests in flight; B answered ${answeredAfterKill.length} after the kill`,
          )
          // The dead replica settles its requests (ack/nack on a closed transport) without throwing.
          await waitFor('the killed replica to finish its work', () => a.bridge.inFlight === 0)
        },
      )
    })

    describe('losing the broker', () => {
      const outage = typeof profile.outage === 'string' ? undefined : profile.outage
      const whyNot = typeof profile.outage === 'string' ? ` (${profile.outage})` : ''

      it.runIf(outage)(
        `comes back by itself after a broker restart mid-load, and answers everything sent after${whyNot}`,
        async () => {
          if (!outage) return
          const bridge = await runtime(fixtures)
          const t = await transport()
          const c = await client(t, replica)
          expect(await c.call({ arguments: { n: 0 } }, { timeoutMs })).toBe('A:0')
          const running = keepCalling(c)
          await waitFor('some load', () => running.answered > 20)

          const stopping = Date.now()
          if ('restart' in outage) {
            await outage.restart()
          } else {
            let parked: Promise<void> | undefined
            try {
              await outage.stop()
              await waitFor('the bridge to report itself not ready', () => !bridge.bridge.ready)
              // A publish made while the broker is down waits for the connection instead of failing.
              parked = t.publish('response:tg:contract-parked', utf8.encode('{}'), { [ID_PROPERTY]: 'parked' })
              parked.catch(() => {}) // awaited below; not unhandled if start() throws first
            } finally {
              await outage.start()
            }
            await expect(parked).resolves.toBeUndefined()
          }
          const started = Date.now()
          await waitFor(
            'the bridge to answer after the restart',
            () =>
              c.call({ arguments: { n: -1 } }, { timeoutMs: 1000 }).then(
                () => true,
                () => false,
              ),
            outage.recoveryLimitMs,
          )
          const recovered = Date.now()
          const lost = await running.stop()
          console.info(
            `${name} restart: first answer ${recovered - started} ms after the broker was back ` +
              `(${recovered - stopping} ms after the outage began); ${lost} calls of the load lost or late`,
          )
          const answers = await Promise.all(
            Array.from({ length: 100 }, (_, n) => c.call({ arguments: { n } }, { timeoutMs })),
          )
          answers.forEach((answer, n) => expect(answer).toBe(`A:${n}`))
          expect(
            await metricValue(bridge, `toolbridge_transport_reconnects_total{transport="${bridge.transport.kind}"}`),
          ).toBeGreaterThan(0)
          expect(bridge.bridge.ready).toBe(true)
        },
        180_000,
      )
    })

    describe('the transport', () => {
      it('hands a consumer at most `concurrency` unacked deliveries, the rest as it acks, and a nacked one again', async () => {
        const { flowControl } = profile
        const queue = flowControl.queue()
        if (flowControl.drop) {
          const drop = flowControl.drop
          await drop(queue) // what an interrupted run left
          closing.add(() => drop(queue))
        }
        const t = await transport() // closed (last opened, first closed) before its queue is dropped
        const deliveries: Delivery[] = []
        await t.consume(queue, { subscription: 'sub', concurrency: 3 }, (delivery) => deliveries.push(delivery))
        for (let i = 0; i < 10; i++) await t.publish(queue, utf8.encode(String(i)), {})
        await waitFor('3 deliveries', () => deliveries.length === 3)
        const held = flowControl.heldByBroker
        // Where the broker can say so, it holds back what is over the limit: 3 handed out, 7 still in the queue.
        if (held) await waitFor('7 held back by the broker', async () => (await held(queue)) === 7)
        await new Promise((resolve) => setTimeout(resolve, 500))
        expect(deliveries).toHaveLength(3) // held back until one is settled
        deliveries[0]!.ack()
        // Settled once: a second ack, or a nack after the ack, does nothing (no fifth delivery, no '0' again).
        deliveries[0]!.ack()
        deliveries[0]!.nack()
        await waitFor('a fourth delivery', () => deliveries.length === 4)
        expect(deliveries.map((d) => text(d.body))).toEqual(['0', '1', '2', '3'])
        expect(deliveries.every((d) => !d.redelivered)).toBe(true)
        deliveries[1]!.nack()
        if (flowControl.nackedComesBackLast) {
          const settleRest = setInterval(() => {
            for (const d of deliveries.slice(2)) if (!d.redelivered) d.ack()
          }, 5)
          closing.add(() => clearInterval(settleRest))
        }
        await waitFor('the nacked message back, marked redelivered', () => deliveries.some((d) => d.redelivered))
        expect(deliveries.filter((d) => d.redelivered).map((d) => text(d.body))).toEqual(['1'])
      })

      it('delivers what is published right after subscribe() resolves, properties as given, and an ack or nack after close is a no-op', async () => {
        const t = await createTransport(profile.settings.broker, profile.memoryBroker, {
          pulsar: profile.settings.pulsar,
        })
        await t.connect()
        closing.add(() => t.close())
        const queue = 'response:tg:contract-acks'
        const deliveries: Delivery[] = []
        await t.subscribe(queue, (delivery) => deliveries.push(delivery))
        await t.publish(queue, utf8.encode('"one"'), { [ID_PROPERTY]: '1', other: 'x y', accented: 'värde', empty: '' })
        await t.publish(queue, utf8.encode('"two"'), { [ID_PROPERTY]: '2' })
        await waitFor('both deliveries', () => deliveries.length === 2)
        const [one, two] = [1, 2].map((n) => deliveries.find((d) => d.properties[ID_PROPERTY] === String(n)))
        expect(one?.properties).toEqual({ [ID_PROPERTY]: '1', other: 'x y', accented: 'värde', empty: '' })
        expect(one?.redelivered).toBe(false)
        expect(text(two!.body)).toBe('"two"')
        await t.close()
        expect(() => one!.ack()).not.toThrow()
        expect(() => two!.nack()).not.toThrow()
        expect(() => one!.ack()).not.toThrow()
        expect(() => one!.nack()).not.toThrow()
      })

      it(`carries a message of ${profile.bigMessageBytes} bytes, and refuses one over ${profile.maxMessageBytes} without sending it`, async () => {
        const t = await transport()
        expect(t.maxMessageBytes).toBe(profile.maxMessageBytes)
        const queue = 'response:tg:contract-big'
        const body = new Uint8Array(profile.bigMessageBytes).map((_, i) => i % 251)
        const received: Delivery[] = []
        await t.subscribe(queue, (delivery) => (delivery.ack(), received.push(delivery)))
        await t.publish(queue, body, { [ID_PROPERTY]: 'big' })
        await waitFor('the delivery', () => received.length === 1)
        expect(Buffer.compare(Buffer.from(received[0]!.body), Buffer.from(body))).toBe(0)
        const error = await t.publish(queue, new Uint8Array(t.maxMessageBytes + 1), {}).catch((err: unknown) => err)
        expect(error).toBeInstanceOf(ToolbridgeError)
        expect((error as ToolbridgeError).kind).toBe('too-large')
      })

      const unreachable = typeof profile.unreachable === 'string' ? undefined : profile.unreachable
      const whyNot = typeof profile.unreachable === 'string' ? ` (${profile.unreachable})` : ''
      it.runIf(unreachable)(
        `gives up connecting to a broker that is not there, with a retriable unavailable error and no password${whyNot}`,
        async () => {
          if (!unreachable) return
          const t = unreachable.transport()
          closing.add(() => t.close())
          const error = (await t.connect().catch((err: unknown) => err)) as ToolbridgeError
          expect(error).toBeInstanceOf(ToolbridgeError)
          expect(error.kind).toBe('unavailable')
          expect(error.retriable).toBe(true)
          expect(error.message).toContain('127.0.0.1:1')
          if (unreachable.secret !== undefined) {
            expect(t.address).not.toContain(unreachable.secret)
            expect(error.message).not.toContain(unreachable.secret)
          }
        },
      )
    })
  })
}

/**
 * TrustGraph's own RequestResponseClient (trustgraph-base, through its own
 * backend for the broker) calling the example tools on a bridge started on
 * `settings()`: one answer, a stream, error answers and, unless the broker
 * says why not, many calls at once; skipped without TrustGraph's packages.
 * Call it inside a describe whose beforeAll has the broker up.
 */
export function describeTrustgraphClient(
  title: string,
  broker: { settings: () => Settings; backend: () => TgBackend; concurrentCalls?: number },
): void {
  const examples = loadProject(EXAMPLES_YML)
  const queues = (id: string) => service(examples, (candidate) => candidate === id)
  const calls = (id: string, list: TgCall[]) => trustgraphClientCalls(queues(id), list, broker.backend())

  describe.skipIf(!trustgraphInstalled())(title, () => {
    let bridge: Runtime
    beforeAll(async () => {
      bridge = await startRuntime(examples, broker.settings())
    })
    afterAll(async () => {
      await bridge?.stop()
    })

    it('gets a single answer from request()', async () => {
      const [result] = await calls('joke-service', [
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
      const [result] = await calls('story-service', [
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

    it.runIf(existsSync(CALCULATOR))("decodes error answers into TrustGraph's Error", async () => {
      const results = await calls('calculator-service', [{ arguments: {} }, { arguments: { expression: '1/0' } }])
      expect(results[0]!.error).toEqual({
        type: 'invalid-arguments',
        message: 'invalid arguments: "expression" is required',
      })
      expect(results[1]!.error?.type).toBe('tool-service-error')
      expect(results[1]!.error?.message).toContain('division by zero')
    })

    const concurrent = broker.concurrentCalls ?? 0
    it.runIf(concurrent > 0 && existsSync(CALCULATOR))(
      `answers ${concurrent} concurrent calls, each with its own result`,
      async () => {
        const list = Array.from({ length: concurrent }, (_, i) => ({ arguments: { expression: `${i} * ${i} + 1` } }))
        const results = await calls('calculator-service', list)
        expect(results.map((r) => r.response)).toEqual(list.map((_, i) => String(i * i + 1)))
        expect(results.every((r) => r.error === null)).toBe(true)
      },
    )
  })
}

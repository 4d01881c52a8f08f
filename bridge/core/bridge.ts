/**
 * The bridge: for every tool service, consume its request queue, decode,
 * check, invoke, publish the answer, ack. One bad request never stops the
 * loop: it ends as an error response like any other outcome.
 */
import { cancellationOf } from '../support/cancellations.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { isToolbridgeError, messageOf, type ErrorKind, type Refusal } from '../../shared/errors.ts'
import { decodeRequest, ID_PROPERTY, UNKNOWN_ID } from '../../shared/protocol.ts'
import { compileEventShape, type EventMapping } from './event-shapes.ts'
import type { Invoker, Outcome } from '../invokers/invoker.ts'
import { LinkedList } from '../support/linked-list.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import { compileRequestCheck, compileToolIdentifier, type RequestCheck } from './request-checks.ts'
import { noMetrics, type BridgeMetrics, type ServiceMetrics } from '../support/metrics.ts'
import { createResponder, type Publish } from './responders.ts'
import type { RequestTrace, Tracing } from '../tracing/tracing.ts'
import type { Consumer, Delivery, Transport } from '../transports/transport.ts'
import {
  DEFAULT_ANSWERED_MEMORY_SIZE,
  DEFAULT_ANSWERED_MEMORY_TTL_SECONDS,
  DEFAULT_MAX_AGE_SECONDS,
  type DeliveryDefaults,
} from '../project/settings.ts'
import { createDeliveryGuard, DEAD_LETTER_SUBSCRIPTION, type DeliveryGuard, type Ticket } from './delivery-guard.ts'

export interface BridgeOptions {
  transport: Transport
  invoker: Invoker
  services: ToolServiceSpec[]
  logger?: Logger
  /** How long stop() waits for requests in flight before handing them back to the broker. */
  drainTimeoutMs?: number
  /** Requests larger than this are refused without invoking. Default: the transport's message limit. */
  maxRequestBytes?: number
  metrics?: BridgeMetrics
  /** Applied to every error message before it goes on the wire (host paths out: bridge/support/host-paths.ts). */
  scrubErrorMessage?: (message: string) => string
  /** Spans for each request, its invocation and its answers (bridge/tracing); absent when tracing is off. */
  tracing?: Tracing | undefined
  /** maxAge, the answered-once memory and the dead-letter queue for services that do not set their own. */
  delivery?: DeliveryDefaults
  /**
   * For tests of redelivery: true hands a request back after its answer was
   * published, as a connection lost between the publish confirm and the ack does.
   */
  loseAckAfterAnswer?: (id: string) => boolean
  /** Told of each request answered (the web console's log and the timing of its own calls). */
  onAnswered?: ((request: AnsweredRequest) => void) | undefined
}

/** One request answered, as the bridge saw it. */
export interface AnsweredRequest {
  service: string
  /** '' when the request's tool could not be told. */
  tool: string
  /** The request's correlation id (its `id` property). */
  id: string
  /** The kind of the error answered; undefined for an answer. */
  errorKind: ErrorKind | undefined
  /** Waiting since the broker took it (its timestamp), until the bridge did; undefined without a believable timestamp. */
  queueMs: number | undefined
  /** The function's run; undefined when the request was refused without invoking. */
  invokeMs: number | undefined
  /** From taking the request to its answer published: the request duration of /metrics. */
  totalMs: number
  /** Bytes of the answer's messages as published (with their JSON envelopes). */
  answerBytes: number
}

/** maxAge of TrustGraph's client timeout, the answered-once memory on, no dead-letter queue (bridge/project/settings.ts). */
export const DEFAULT_DELIVERY: DeliveryDefaults = {
  maxAgeMs: DEFAULT_MAX_AGE_SECONDS * 1000,
  answeredMemorySize: DEFAULT_ANSWERED_MEMORY_SIZE,
  answeredMemoryTtlMs: DEFAULT_ANSWERED_MEMORY_TTL_SECONDS * 1000,
  deadLetterQueue: undefined,
}

export interface Bridge {
  /** Resolves once every request queue is subscribed. */
  start(): Promise<void>
  /** Stops taking requests, drains those in flight, closes transport and invoker. */
  stop(): Promise<void>
  readonly inFlight: number
  /** Requests taken from the request queues since start (a count that only grows). */
  readonly requestsTaken: number
  /**
   * Every request queue subscribed, the broker connected and every function
   * loaded (one that could not load at start counts once it has answered);
   * false before start, while reconnecting and from stop on.
   */
  readonly ready: boolean
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000

/** The competing-consumer subscription TrustGraph uses for a tool service. */
export const requestSubscription = (serviceId: string) => `${serviceId}-request`

interface Served {
  spec: ToolServiceSpec
  check: RequestCheck
  shape: EventMapping
  /** The tool a request's config values point to, '' if none or several. */
  toolOf: (config: Record<string, unknown>) => string
  metrics: ServiceMetrics
  guard: DeliveryGuard
}

export function createBridge(options: BridgeOptions): Bridge {
  const { transport, invoker, services } = options
  const logger = options.logger ?? silentLogger
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS
  const maxRequestBytes = options.maxRequestBytes ?? transport.maxMessageBytes
  const metrics = options.metrics ?? noMetrics
  const scrub = options.scrubErrorMessage
  const tracing = options.tracing
  const onAnswered = options.onAnswered
  let serving = false
  /** Services whose function could not load at start and has not answered since. */
  const unloadable = new Set<string>()
  const consumers: Consumer[] = []
  /** Deliveries being worked on, and a way to give each back if the drain runs out. */
  const inFlight = new LinkedList<() => void>()
  let requestsTaken = 0
  let drained: (() => void) | undefined

  /** What is known of a request before invoking: its tool (a label in logs and metrics), and either the event or why it is refused. */
  type Taken =
    | { tool: string; refused: Outcome; event?: undefined }
    | { tool: string; refused?: undefined; event: unknown }

  /**
   * An exception while handling a request (a bug, or input that defeats a
   * check) becomes an error answer. Were it left to escape, the request would
   * be handed back and redelivered forever.
   */
  function unexpected(served: Served, err: unknown): Outcome {
    logger.error({ service: served.spec.id, err: messageOf(err) }, 'unexpected error while handling a request')
    return { ok: false, kind: 'crash', message: `the bridge could not handle this request: ${messageOf(err)}` }
  }

  /** Everything about a request that needs no waiting: age, size, decoding, checks, the event. */
  function take(served: Served, delivery: Delivery, ticket: Ticket): Taken {
    try {
      if (ticket.expired) return { tool: '', refused: ticket.expired }
      if (delivery.body.byteLength > maxRequestBytes) {
        const message = `request of ${delivery.body.byteLength} bytes is over the limit of ${maxRequestBytes}`
        return { tool: '', refused: { ok: false, kind: 'too-large', message } }
      }
      const decoded = decodeRequest(delivery.body)
      if (!decoded.ok) return { tool: '', refused: { ok: false, kind: 'bad-request', message: decoded.message } }
      const tool = served.toolOf(decoded.value.config)
      const checked = served.check(decoded.value)
      if (!checked.ok) return { tool, refused: checked }
      const event = served.shape.event(checked.request)
      return event.ok ? { tool, event: event.event } : { tool, refused: event }
    } catch (err) {
      return { tool: '', refused: unexpected(served, err) }
    }
  }

  async function invoke(
    served: Served,
    event: unknown,
    onChunk: (text: string) => void,
    signal: AbortSignal | undefined,
    trace: RequestTrace | undefined,
  ): Promise<Outcome> {
    const invocation = { target: served.spec, event, onChunk, signal }
    try {
      const outcome = await (trace === undefined
        ? invoker.invoke(invocation)
        : trace.invoke(served.spec, (context) =>
            invoker.invoke({
              ...invocation,
              event: served.shape.withTraceHeaders?.(event, context.headers) ?? event,
              trace: context,
            }),
          ))
      return served.shape.answer(outcome)
    } catch (err) {
      return unexpected(served, err)
    }
  }

  async function handle(served: Served, delivery: Delivery): Promise<void> {
    const { spec, metrics } = served
    const started = performance.now()
    const id = delivery.properties[ID_PROPERTY] || UNKNOWN_ID
    let settled = false
    const settle = (how: 'ack' | 'nack') => {
      if (settled) return
      settled = true
      inFlight.remove(entry)
      metrics.inFlight(-1)
      if (how === 'ack') delivery.ack()
      else delivery.nack()
      if (inFlight.size === 0) drained?.()
    }
    const entry = inFlight.push(() => settle('nack'))
    requestsTaken++
    // The caller may cancel (a client in this process: support/cancellations.ts); the function is told.
    const cancellation = cancellationOf(id === UNKNOWN_ID ? undefined : id)
    metrics.inFlight(1)
    const ticket = served.guard.ticket(delivery)
    if (ticket.distrusted) logger.warn({ service: spec.id, id }, `${ticket.distrusted}: its age counts from now`)
    if (ticket.remembered) return answerAgain(served, delivery, ticket.remembered, settle)
    const trace = tracing?.request({
      system: transport.kind,
      queue: spec.requestQueue,
      subscription: requestSubscription(spec.id),
      id,
      properties: delivery.properties,
      bodyBytes: delivery.body.byteLength,
    })
    const taken = take(served, delivery, ticket)
    metrics.received(taken.tool, delivery.redelivered)
    const properties = { [ID_PROPERTY]: id }
    let answerBytes = 0
    const publish: Publish = (body, last) => {
      ticket.record(body)
      answerBytes += body.byteLength
      if (trace === undefined) return transport.publish(spec.responseQueue, body, properties)
      return trace.send(spec.responseQueue, properties, last, (traced) =>
        transport.publish(spec.responseQueue, body, traced),
      )
    }
    const responder = createResponder(spec.response, publish, transport.maxMessageBytes)
    try {
      // Once given back (drain timeout), another consumer answers it: publish nothing more.
      const onChunk = (text: string) => {
        if (settled) return
        responder.chunk(text)
        metrics.chunkPublished()
      }
      // The clock is read for a watcher only: without one, a request costs what it did.
      const invoking = onAnswered ? performance.now() : 0
      const outcome = taken.refused ?? (await invoke(served, taken.event, onChunk, cancellation.signal, trace))
      const invoked = onAnswered ? performance.now() : 0
      cancellation.release()
      if (outcome.ok) unloadable.delete(spec.id)
      if (settled) {
        trace?.unanswered(taken.tool, 'given back to the broker when the drain timed out')
        return
      }
      if (!outcome.ok) logger.warn({ service: spec.id, tool: taken.tool, id, kind: outcome.kind }, outcome.message)
      const sent = await responder.finish(
        outcome.ok || !scrub ? outcome : { ...outcome, message: scrub(outcome.message) },
      )
      // A `single` answer too large for one message went out as an error.
      if (outcome.ok && !sent.ok) logger.warn({ service: spec.id, tool: taken.tool, id, kind: sent.kind }, sent.message)
      const totalMs = performance.now() - started
      const errorKind = sent.ok ? undefined : sent.kind
      metrics.answered(taken.tool, errorKind, totalMs / 1000)
      if (onAnswered) {
        const invokeMs = taken.refused ? undefined : invoked - invoking
        // Whoever watches must not turn an answered request into one handed back.
        try {
          onAnswered({
            service: spec.id,
            tool: taken.tool,
            id,
            errorKind,
            queueMs: ticket.queuedMs,
            invokeMs,
            totalMs,
            answerBytes,
          })
        } catch (err) {
          logger.warn({ service: spec.id, id, err: messageOf(err) }, 'the watcher of answered requests failed')
        }
      }
      trace?.answered(taken.tool, sent)
      ticket.remember()
      if (!sent.ok) {
        // Without an id nobody can read the answer: such a request is kept for a person like one never answered.
        const unanswerable = !delivery.properties[ID_PROPERTY]
        if (unanswerable || ticket.keeps(sent.kind)) {
          if (!(await keepDeadLetter(served, ticket, sent, unanswerable))) return settle('nack')
        }
      }
      settle(options.loseAckAfterAnswer?.(id) ? 'nack' : 'ack')
    } catch (err) {
      trace?.unanswered(taken.tool, messageOf(err))
      if (isToolbridgeError(err) && !err.retriable) {
        // It would fail the same way on every redelivery: keep it as a dead letter (or drop it) rather than loop.
        const reason = { kind: err.kind, message: `its answer could not be published: ${err.message}` }
        settle((await keepDeadLetter(served, ticket, reason, true)) ? 'ack' : 'nack')
      } else {
        // Give the request back so it can be answered; never ack and lose it.
        logger.error(
          { service: spec.id, tool: taken.tool, id, err: messageOf(err) },
          'could not publish the response; request returned to the queue',
        )
        settle('nack')
      }
    }
  }

  /** A request answered before: the same messages again, in order, without invoking. */
  async function answerAgain(
    served: Served,
    delivery: Delivery,
    messages: readonly Uint8Array[],
    settle: (how: 'ack' | 'nack') => void,
  ): Promise<void> {
    const { spec, metrics } = served
    const properties = { [ID_PROPERTY]: delivery.properties[ID_PROPERTY]! }
    metrics.received('', delivery.redelivered)
    try {
      for (const body of messages) await transport.publish(spec.responseQueue, body, properties)
      metrics.replayed()
      logger.info({ service: spec.id, id: properties[ID_PROPERTY] }, 'answered again from memory, not invoked')
      settle('ack')
    } catch (err) {
      logger.error({ service: spec.id, err: messageOf(err) }, 'could not publish a remembered answer; request returned')
      settle('nack')
    }
  }

  /**
   * Writes a request to its service's dead-letter queue. Resolves false only
   * when a request that cannot be answered (`mustKeep`) could not be kept: it
   * must then go back to the broker, never be dropped silently.
   */
  async function keepDeadLetter(
    served: Served,
    ticket: Ticket,
    reason: { kind: Refusal['kind']; message: string },
    mustKeep: boolean,
  ): Promise<boolean> {
    const { spec, metrics } = served
    const fields = { service: spec.id, kind: reason.kind, queue: served.guard.deadLetterQueue }
    try {
      if (await ticket.deadLetter(reason)) {
        metrics.deadLettered(reason.kind)
        logger.warn(fields, `request kept in the dead-letter queue: ${reason.message}`)
      } else if (mustKeep) {
        logger.error(fields, `request dropped (no dead-letter queue): ${reason.message}`)
      }
      return true
    } catch (err) {
      if (!mustKeep) {
        logger.warn({ ...fields, err: messageOf(err) }, 'could not copy an error answer to the dead-letter queue')
        return true
      }
      logger.error({ ...fields, err: messageOf(err) }, 'could not write the dead letter; request returned to the queue')
      return false
    }
  }

  /**
   * A dead-letter queue keeps messages only for a subscription that exists
   * (a RabbitMQ queue bound to its exchange, a Pulsar subscription): make it
   * before the first dead letter, by attaching and leaving.
   */
  async function keepDeadLetterQueues(queues: (string | undefined)[]): Promise<void> {
    for (const queue of new Set(queues)) {
      if (queue === undefined) continue
      const consumer = await transport.consume(
        queue,
        { subscription: DEAD_LETTER_SUBSCRIPTION, concurrency: 1, startAt: 'earliest' },
        (delivery) => delivery.nack(),
      )
      await consumer.close()
    }
  }

  return {
    get inFlight() {
      return inFlight.size
    },
    get requestsTaken() {
      return requestsTaken
    },

    get ready() {
      return serving && unloadable.size === 0 && (transport.ready ?? true)
    },

    async start() {
      await transport.connect()
      await Promise.all(
        services.map(async (spec) => {
          const loadError = await invoker.prepare(spec)
          if (!loadError) return
          unloadable.add(spec.id)
          logger.error({ service: spec.id, fn: spec.functionName }, `function cannot load: ${loadError}`)
        }),
      )
      await keepDeadLetterQueues(
        services.map((spec) => spec.delivery?.deadLetterQueue ?? options.delivery?.deadLetterQueue),
      )
      for (const spec of services) {
        const served: Served = {
          spec,
          check: compileRequestCheck(spec),
          shape: compileEventShape(spec.shape),
          toolOf: compileToolIdentifier(spec),
          metrics: metrics.forService(spec.id),
          guard: createDeliveryGuard(spec, options.delivery ?? DEFAULT_DELIVERY, (queue, body, properties) =>
            transport.publish(queue, body, properties),
          ),
        }
        const consumer = await transport.consume(
          spec.requestQueue,
          { subscription: requestSubscription(spec.id), concurrency: spec.concurrency },
          (delivery) => void handle(served, delivery),
        )
        consumers.push(consumer)
      }
      serving = true
    },

    async stop() {
      serving = false // not ready from here: a load balancer or orchestrator stops sending work
      await Promise.all(consumers.splice(0).map((c) => c.close()))
      if (inFlight.size > 0) {
        logger.info({ inFlight: inFlight.size, drainTimeoutMs }, 'draining requests in flight')
        let timer: NodeJS.Timeout | undefined
        await new Promise<void>((resolve) => {
          drained = resolve
          timer = setTimeout(resolve, drainTimeoutMs)
        })
        clearTimeout(timer)
        for (const giveBack of inFlight.values()) giveBack() // each removes itself
      }
      await invoker.close()
      await transport.close()
    },
  }
}

/**
 * One request's way through the bridge, as named steps over explicit state:
 *
 *   receive -> (answerAgain | take -> invoke -> answer -> settleAnswered) | publishFailed
 *
 * Each step reads and writes the request's `InFlightRequest` and the
 * bridge's `Pipeline` (its transport, invoker, limits and watchers), nothing
 * hidden in a closure, so a step can be read, tested and changed alone.
 * bridge.ts owns what outlives a request: subscriptions, the requests in
 * flight and the drain.
 */
import { cancellationOf } from '../support/cancellations.ts'
import { type CallLogSink, callLogSinkOf } from '../support/call-logs.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { isToolbridgeError, messageOf, type ErrorKind, type Refusal } from '../../shared/errors.ts'
import { decodeRequest, ID_PROPERTY, UNKNOWN_ID } from '../../shared/protocol.ts'
import type { EventMapping } from './event-shapes.ts'
import type { Invoker, Outcome } from '../invokers/invoker.ts'
import type { Logger } from '../support/logger.ts'
import type { RequestCheck } from './request-checks.ts'
import type { ServiceMetrics } from '../support/metrics.ts'
import { createResponder, type Publish, type Responder } from './responders.ts'
import type { RequestTrace, Tracing } from '../tracing/tracing.ts'
import type { Delivery, Transport } from '../transports/transport.ts'
import type { DeliveryGuard, Ticket } from './delivery-guard.ts'
import type { AnswerMessages } from '../stores/answered-once.ts'

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

/** What the steps share across requests: the bridge's parts, limits and watchers. */
export interface Pipeline {
  transport: Transport
  invoker: Invoker
  logger: Logger
  maxRequestBytes: number
  scrub: ((message: string) => string) | undefined
  tracing: Tracing | undefined
  onAnswered: ((request: AnsweredRequest) => void) | undefined
  loseAckAfterAnswer: ((id: string) => boolean) | undefined
  /** Services whose function could not load at start and has not answered since. */
  unloadable: Set<string>
}

/** A service as the bridge serves it: its spec and what was compiled from it once. */
export interface Served {
  spec: ToolServiceSpec
  check: RequestCheck
  shape: EventMapping
  /** The tool a request's config values point to, '' if none or several. */
  toolOf: (config: Record<string, unknown>) => string
  metrics: ServiceMetrics
  guard: DeliveryGuard
}

export type Settle = (how: 'ack' | 'nack') => void

/** One request from its delivery to its ack or nack. */
export interface InFlightRequest {
  readonly served: Served
  readonly delivery: Delivery
  /** Its correlation id, or UNKNOWN_ID. */
  readonly id: string
  /** performance.now() when it was taken. */
  readonly started: number
  readonly ticket: Ticket
  readonly trace: RequestTrace | undefined
  /** The caller's cancellation (support/cancellations.ts): the function is told. */
  readonly signal: AbortSignal | undefined
  /** Where the function's console lines go: a caller in this process that listens (support/call-logs.ts). */
  readonly onLog: CallLogSink | undefined
  readonly releaseCancellation: () => void
  /** Acks or nacks once; true from then on. */
  readonly settle: Settle
  readonly settled: () => boolean
  /** Bytes of the answer published so far. */
  answerBytes: number
}

/** What is known of a request before invoking: its tool (a label in logs and metrics), and either the event or why it is refused. */
export type Taken =
  | { tool: string; refused: Outcome; event?: undefined }
  | { tool: string; refused?: undefined; event: unknown }

/** The competing-consumer subscription TrustGraph uses for a tool service. */
export const requestSubscription = (serviceId: string) => `${serviceId}-request`

/** A request, start to end. Never throws: every failure ends as an answer, a dead letter or a nack. */
export async function handleRequest(
  pipeline: Pipeline,
  served: Served,
  delivery: Delivery,
  settle: Settle,
  settled: () => boolean,
): Promise<void> {
  const ticket = served.guard.ticket(delivery)
  // Waits while a copy of this request runs here or, with a shared store, on another replica.
  const claimed = await ticket.claim()
  if (settled()) {
    ticket.release() // given back while it waited (the drain ran out): a copy may run
    return
  }
  // The claim ends with the request, whichever way it ends (a no-op once the answer is kept).
  const settleAndRelease: Settle = (how) => {
    ticket.release()
    settle(how)
  }
  const request = receive(pipeline, served, delivery, ticket, claimed.remembered, settleAndRelease, settled)
  if (claimed.trouble) {
    served.metrics.answeredStoreTrouble(claimed.refused ? 'refused' : 'ran')
    pipeline.logger.error(
      { service: served.spec.id, id: request.id },
      `${claimed.trouble}; ${claimed.refused ? 'refused' : 'run anyway'}`,
    )
  }
  if (claimed.remembered) return answerAgain(pipeline, request, claimed.remembered)
  const taken: Taken = claimed.refused ? { tool: '', refused: claimed.refused } : take(pipeline, request)
  served.metrics.received(taken.tool, delivery.redelivered)
  const responder = responderFor(pipeline, request)
  try {
    // The clock is read for a watcher only: without one, a request costs what it did.
    const invoking = pipeline.onAnswered ? performance.now() : 0
    const outcome = taken.refused ?? (await invoke(pipeline, request, taken.event, responder))
    const invokeMs = taken.refused || !pipeline.onAnswered ? undefined : performance.now() - invoking
    request.releaseCancellation()
    if (outcome.ok) pipeline.unloadable.delete(served.spec.id)
    if (request.settled()) {
      ticket.release()
      request.trace?.unanswered(taken.tool, 'given back to the broker when the drain timed out')
      return
    }
    const sent = await answer(pipeline, request, taken.tool, outcome, responder, invokeMs)
    await settleAnswered(pipeline, request, sent)
  } catch (err) {
    await publishFailed(pipeline, request, taken.tool, err)
  }
}

/** The request taken: its id, its ticket from the delivery guard, its trace and cancellation. */
function receive(
  pipeline: Pipeline,
  served: Served,
  delivery: Delivery,
  ticket: Ticket,
  remembered: AnswerMessages | undefined,
  settle: Settle,
  settled: () => boolean,
): InFlightRequest {
  const { spec } = served
  const id = delivery.properties[ID_PROPERTY] || UNKNOWN_ID
  const started = performance.now()
  // Only a request that will be invoked listens for its cancellation (a remembered one would never release it).
  const cancellation = cancellationOf(id === UNKNOWN_ID || remembered ? undefined : id)
  if (ticket.distrusted) pipeline.logger.warn({ service: spec.id, id }, `${ticket.distrusted}: its age counts from now`)
  const trace = remembered
    ? undefined
    : pipeline.tracing?.request({
        system: pipeline.transport.kind,
        queue: spec.requestQueue,
        subscription: requestSubscription(spec.id),
        id,
        properties: delivery.properties,
        bodyBytes: delivery.body.byteLength,
      })
  return {
    served,
    delivery,
    id,
    started,
    ticket,
    trace,
    signal: cancellation.signal,
    onLog: id === UNKNOWN_ID || remembered ? undefined : callLogSinkOf(id),
    releaseCancellation: () => cancellation.release(),
    settle,
    settled,
    answerBytes: 0,
  }
}

/**
 * An exception while handling a request (a bug, or input that defeats a
 * check) becomes an error answer. Were it left to escape, the request would
 * be handed back and redelivered forever.
 */
function unexpected(pipeline: Pipeline, served: Served, err: unknown): Outcome {
  pipeline.logger.error({ service: served.spec.id, err: messageOf(err) }, 'unexpected error while handling a request')
  return { ok: false, kind: 'crash', message: `the bridge could not handle this request: ${messageOf(err)}` }
}

/** Everything about a request that needs no waiting: age, size, decoding, checks, the event. */
function take(pipeline: Pipeline, request: InFlightRequest): Taken {
  const { served, delivery, ticket } = request
  try {
    if (ticket.expired) return { tool: '', refused: ticket.expired }
    if (delivery.body.byteLength > pipeline.maxRequestBytes) {
      const message = `request of ${delivery.body.byteLength} bytes is over the limit of ${pipeline.maxRequestBytes}`
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
    return { tool: '', refused: unexpected(pipeline, served, err) }
  }
}

/** The responder of the request's answer: each message it publishes is recorded by the ticket and traced. */
function responderFor(pipeline: Pipeline, request: InFlightRequest): Responder {
  const { spec } = request.served
  const { transport } = pipeline
  const properties = { [ID_PROPERTY]: request.id }
  const publish: Publish = (body, last) => {
    request.ticket.record(body)
    request.answerBytes += body.byteLength
    if (request.trace === undefined) return transport.publish(spec.responseQueue, body, properties)
    return request.trace.send(spec.responseQueue, properties, last, (traced) =>
      transport.publish(spec.responseQueue, body, traced),
    )
  }
  return createResponder(spec.response, publish, transport.maxMessageBytes)
}

/** The function run on the event; its chunks go out as they come, until the request is given back. */
async function invoke(
  pipeline: Pipeline,
  request: InFlightRequest,
  event: unknown,
  responder: Responder,
): Promise<Outcome> {
  const { served, trace } = request
  const { invoker } = pipeline
  // Once given back (drain timeout), another consumer answers it: publish nothing more.
  const onChunk = (text: string) => {
    if (request.settled()) return
    responder.chunk(text)
    served.metrics.chunkPublished()
  }
  const invocation = { target: served.spec, event, onChunk, signal: request.signal, onLog: request.onLog }
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
    return unexpected(pipeline, served, err)
  }
}

/** The outcome published as the answer, counted, reported to the watcher and traced; what was sent. */
async function answer(
  pipeline: Pipeline,
  request: InFlightRequest,
  tool: string,
  outcome: Outcome,
  responder: Responder,
  invokeMs: number | undefined,
): Promise<Outcome> {
  const { served, id, ticket } = request
  const { spec, metrics } = served
  const { logger, scrub, onAnswered } = pipeline
  if (!outcome.ok) logger.warn({ service: spec.id, tool, id, kind: outcome.kind }, outcome.message)
  const sent = await responder.finish(outcome.ok || !scrub ? outcome : { ...outcome, message: scrub(outcome.message) })
  // A `single` answer too large for one message went out as an error.
  if (outcome.ok && !sent.ok) logger.warn({ service: spec.id, tool, id, kind: sent.kind }, sent.message)
  const totalMs = performance.now() - request.started
  const errorKind = sent.ok ? undefined : sent.kind
  metrics.answered(tool, errorKind, totalMs / 1000)
  if (onAnswered) {
    // Whoever watches must not turn an answered request into one handed back.
    try {
      onAnswered({
        service: spec.id,
        tool,
        id,
        errorKind,
        queueMs: ticket.queuedMs,
        invokeMs,
        totalMs,
        answerBytes: request.answerBytes,
      })
    } catch (err) {
      logger.warn({ service: spec.id, id, err: messageOf(err) }, 'the watcher of answered requests failed')
    }
  }
  request.trace?.answered(tool, sent)
  // Kept before the ack: a copy delivered after the ack finds the answer.
  const notKept = await ticket.remember()
  if (notKept) {
    metrics.answeredStoreTrouble('not-kept')
    logger.error({ service: spec.id, id }, notKept)
  }
  return sent
}

/** After the answer: an error the service keeps goes to the dead-letter queue, then the request is acked. */
async function settleAnswered(pipeline: Pipeline, request: InFlightRequest, sent: Outcome): Promise<void> {
  const { delivery, ticket, id } = request
  if (!sent.ok) {
    // Without an id nobody can read the answer: such a request is kept for a person like one never answered.
    const unanswerable = !delivery.properties[ID_PROPERTY]
    if (unanswerable || ticket.keeps(sent.kind)) {
      if (!(await keepDeadLetter(pipeline, request, sent, unanswerable))) return request.settle('nack')
    }
  }
  request.settle(pipeline.loseAckAfterAnswer?.(id) ? 'nack' : 'ack')
}

/** The answer could not be published: a dead letter if it never could be, else back to the broker. */
async function publishFailed(pipeline: Pipeline, request: InFlightRequest, tool: string, err: unknown): Promise<void> {
  request.trace?.unanswered(tool, messageOf(err))
  if (isToolbridgeError(err) && !err.retriable) {
    // It would fail the same way on every redelivery: keep it as a dead letter (or drop it) rather than loop.
    const reason = { kind: err.kind, message: `its answer could not be published: ${err.message}` }
    request.settle((await keepDeadLetter(pipeline, request, reason, true)) ? 'ack' : 'nack')
    return
  }
  // Give the request back so it can be answered; never ack and lose it.
  pipeline.logger.error(
    { service: request.served.spec.id, tool, id: request.id, err: messageOf(err) },
    'could not publish the response; request returned to the queue',
  )
  request.settle('nack')
}

/** A request answered before: the same messages again, in order, without invoking. */
async function answerAgain(
  pipeline: Pipeline,
  request: InFlightRequest,
  messages: readonly Uint8Array[],
): Promise<void> {
  const { served, delivery } = request
  const { spec, metrics } = served
  const properties = { [ID_PROPERTY]: delivery.properties[ID_PROPERTY]! }
  metrics.received('', delivery.redelivered)
  try {
    for (const body of messages) await pipeline.transport.publish(spec.responseQueue, body, properties)
    metrics.replayed()
    pipeline.logger.info({ service: spec.id, id: properties[ID_PROPERTY] }, 'answered again from memory, not invoked')
    request.settle('ack')
  } catch (err) {
    pipeline.logger.error(
      { service: spec.id, err: messageOf(err) },
      'could not publish a remembered answer; request returned',
    )
    request.settle('nack')
  }
}

/**
 * Writes a request to its service's dead-letter queue. Resolves false only
 * when a request that cannot be answered (`mustKeep`) could not be kept: it
 * must then go back to the broker, never be dropped silently.
 */
async function keepDeadLetter(
  pipeline: Pipeline,
  request: InFlightRequest,
  reason: { kind: Refusal['kind']; message: string },
  mustKeep: boolean,
): Promise<boolean> {
  const { served, ticket } = request
  const { logger } = pipeline
  const fields = { service: served.spec.id, kind: reason.kind, queue: served.guard.deadLetterQueue }
  try {
    if (await ticket.deadLetter(reason)) {
      served.metrics.deadLettered(reason.kind)
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

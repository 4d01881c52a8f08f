/**
 * The bridge: for every tool service, consume its request queue, decode,
 * check, invoke, publish the answer, ack. One bad request never stops the
 * loop: it ends as an error response like any other outcome.
 */
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { isToolbridgeError, messageOf } from '../../shared/errors.ts'
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
}

export interface Bridge {
  /** Resolves once every request queue is subscribed. */
  start(): Promise<void>
  /** Stops taking requests, drains those in flight, closes transport and invoker. */
  stop(): Promise<void>
  readonly inFlight: number
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
}

export function createBridge(options: BridgeOptions): Bridge {
  const { transport, invoker, services } = options
  const logger = options.logger ?? silentLogger
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS
  const maxRequestBytes = options.maxRequestBytes ?? transport.maxMessageBytes
  const metrics = options.metrics ?? noMetrics
  const scrub = options.scrubErrorMessage
  const tracing = options.tracing
  let serving = false
  /** Services whose function could not load at start and has not answered since. */
  const unloadable = new Set<string>()
  const consumers: Consumer[] = []
  /** Deliveries being worked on, and a way to give each back if the drain runs out. */
  const inFlight = new LinkedList<() => void>()
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

  /** Everything about a request that needs no waiting: size, decoding, checks, the event. */
  function take(served: Served, delivery: Delivery): Taken {
    try {
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
    trace: RequestTrace | undefined,
  ): Promise<Outcome> {
    const invocation = { target: served.spec, event, onChunk }
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
    metrics.inFlight(1)
    const trace = tracing?.request({
      system: transport.kind,
      queue: spec.requestQueue,
      subscription: requestSubscription(spec.id),
      id,
      properties: delivery.properties,
      bodyBytes: delivery.body.byteLength,
    })
    const taken = take(served, delivery)
    metrics.received(taken.tool, delivery.redelivered)
    const properties = { [ID_PROPERTY]: id }
    const publish: Publish =
      trace === undefined
        ? (body) => transport.publish(spec.responseQueue, body, properties)
        : (body, last) =>
            trace.send(spec.responseQueue, properties, last, (traced) =>
              transport.publish(spec.responseQueue, body, traced),
            )
    const responder = createResponder(spec.response, publish, transport.maxMessageBytes)
    try {
      // Once given back (drain timeout), another consumer answers it: publish nothing more.
      const onChunk = (text: string) => {
        if (settled) return
        responder.chunk(text)
        metrics.chunkPublished()
      }
      const outcome = taken.refused ?? (await invoke(served, taken.event, onChunk, trace))
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
      metrics.answered(taken.tool, sent.ok ? undefined : sent.kind, (performance.now() - started) / 1000)
      trace?.answered(taken.tool, sent)
      settle('ack')
    } catch (err) {
      trace?.unanswered(taken.tool, messageOf(err))
      if (isToolbridgeError(err) && !err.retriable) {
        // It would fail the same way on every redelivery: drop it rather than loop.
        logger.error(
          { service: spec.id, tool: taken.tool, id, err: err.message },
          'could not publish the response; request dropped',
        )
        settle('ack')
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

  return {
    get inFlight() {
      return inFlight.size
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
      for (const spec of services) {
        const served: Served = {
          spec,
          check: compileRequestCheck(spec),
          shape: compileEventShape(spec.shape),
          toolOf: compileToolIdentifier(spec),
          metrics: metrics.forService(spec.id),
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

/**
 * The bridge: for every tool service, consume its request queue and hand
 * each delivery to the request steps (request-steps.ts: decode, check,
 * invoke, publish the answer, ack). One bad request never stops the loop:
 * it ends as an error response like any other outcome. Here: what outlives
 * a request (subscriptions, the requests in flight, readiness, the drain).
 */
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { compileEventShape } from './event-shapes.ts'
import type { Invoker } from '../invokers/invoker.ts'
import { LinkedList } from '../support/linked-list.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import { compileRequestCheck, compileToolIdentifier } from './request-checks.ts'
import { noMetrics, type BridgeMetrics } from '../support/metrics.ts'
import type { Tracing } from '../tracing/tracing.ts'
import type { Consumer, Delivery, Transport } from '../transports/transport.ts'
import {
  DEFAULT_ANSWERED_MEMORY_SIZE,
  DEFAULT_ANSWERED_MEMORY_TTL_SECONDS,
  DEFAULT_MAX_AGE_SECONDS,
  type DeliveryDefaults,
} from '../project/settings.ts'
import { createDeliveryGuard, DEAD_LETTER_SUBSCRIPTION } from './delivery-guard.ts'
import type { AnsweredStores } from '../stores/answered-store.ts'
import {
  type AnsweredRequest,
  handleRequest,
  type Pipeline,
  requestSubscription,
  type Served,
  type Settle,
} from './request-steps.ts'

export { type AnsweredRequest, requestSubscription }

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
  /** Where the services' answered-once records live; default this process's memory. The caller closes it. */
  answeredStores?: AnsweredStores
  /**
   * For tests of redelivery: true hands a request back after its answer was
   * published, as a connection lost between the publish confirm and the ack does.
   */
  loseAckAfterAnswer?: (id: string) => boolean
  /** Told of each request answered (the web console's log and the timing of its own calls). */
  onAnswered?: ((request: AnsweredRequest) => void) | undefined
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

export function createBridge(options: BridgeOptions): Bridge {
  const { transport, invoker, services } = options
  const logger = options.logger ?? silentLogger
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS
  const metrics = options.metrics ?? noMetrics
  const pipeline: Pipeline = {
    transport,
    invoker,
    logger,
    maxRequestBytes: options.maxRequestBytes ?? transport.maxMessageBytes,
    scrub: options.scrubErrorMessage,
    tracing: options.tracing,
    onAnswered: options.onAnswered,
    loseAckAfterAnswer: options.loseAckAfterAnswer,
    unloadable: new Set(),
  }
  let serving = false
  const consumers: Consumer[] = []
  /** Deliveries being worked on, and a way to give each back if the drain runs out. */
  const inFlight = new LinkedList<() => void>()
  let requestsTaken = 0
  let drained: (() => void) | undefined

  /** A delivery counted in flight until it is acked or nacked (once), then handled by the request steps. */
  function take(served: Served, delivery: Delivery): void {
    let settled = false
    const settle: Settle = (how) => {
      if (settled) return
      settled = true
      inFlight.remove(entry)
      served.metrics.inFlight(-1)
      if (how === 'ack') delivery.ack()
      else delivery.nack()
      if (inFlight.size === 0) drained?.()
    }
    const entry = inFlight.push(() => settle('nack'))
    requestsTaken++
    served.metrics.inFlight(1)
    void handleRequest(pipeline, served, delivery, settle, () => settled)
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
      return serving && pipeline.unloadable.size === 0 && (transport.ready ?? true)
    },

    async start() {
      await transport.connect()
      await Promise.all(
        services.map(async (spec) => {
          const loadError = await invoker.prepare(spec)
          if (!loadError) return
          pipeline.unloadable.add(spec.id)
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
          guard: createDeliveryGuard(
            spec,
            options.delivery ?? DEFAULT_DELIVERY,
            (queue, body, properties) => transport.publish(queue, body, properties),
            options.answeredStores,
          ),
        }
        const consumer = await transport.consume(
          spec.requestQueue,
          { subscription: requestSubscription(spec.id), concurrency: spec.concurrency },
          (delivery) => take(served, delivery),
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

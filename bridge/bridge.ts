/**
 * The bridge: for every tool service, consume its request queue, decode,
 * check, invoke, publish the answer, ack. One bad request never stops the
 * loop: it ends as an error response like any other outcome.
 */
import type { ToolServiceSpec } from '../shared/descriptors.ts'
import { isToolbridgeError } from '../shared/errors.ts'
import { decodeRequest, ID_PROPERTY, UNKNOWN_ID } from '../shared/protocol.ts'
import type { Invoker, Outcome } from './invokers/invoker.ts'
import { LinkedList } from './linked-list.ts'
import { silentLogger, type Logger } from './logger.ts'
import { compileRequestCheck, type RequestCheck } from './request-checks.ts'
import { createResponder } from './responders.ts'
import type { Consumer, Delivery, Transport } from './transports/transport.ts'

export interface BridgeOptions {
  transport: Transport
  invoker: Invoker
  services: ToolServiceSpec[]
  logger?: Logger
  /** How long stop() waits for requests in flight before handing them back to the broker. */
  drainTimeoutMs?: number
  /** Requests larger than this are refused without invoking. Default: the transport's message limit. */
  maxRequestBytes?: number
}

export interface Bridge {
  /** Resolves once every request queue is subscribed. */
  start(): Promise<void>
  /** Stops taking requests, drains those in flight, closes transport and invoker. */
  stop(): Promise<void>
  readonly inFlight: number
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000

/** The competing-consumer subscription TrustGraph uses for a tool service. */
export const requestSubscription = (serviceId: string) => `${serviceId}-request`

interface Served {
  spec: ToolServiceSpec
  check: RequestCheck
}

export function createBridge(options: BridgeOptions): Bridge {
  const { transport, invoker, services } = options
  const logger = options.logger ?? silentLogger
  const drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS
  const maxRequestBytes = options.maxRequestBytes ?? transport.maxMessageBytes
  const consumers: Consumer[] = []
  /** Deliveries being worked on, and a way to give each back if the drain runs out. */
  const inFlight = new LinkedList<() => void>()
  let drained: (() => void) | undefined

  async function evaluate(served: Served, delivery: Delivery, chunk: (text: string) => void): Promise<Outcome> {
    const { spec } = served
    if (delivery.body.byteLength > maxRequestBytes) {
      return { ok: false, kind: 'too-large', message: `request of ${delivery.body.byteLength} bytes is over the limit of ${maxRequestBytes}` }
    }
    const decoded = decodeRequest(delivery.body)
    if (!decoded.ok) return { ok: false, kind: 'bad-request', message: decoded.message }
    const checked = served.check(decoded.value)
    if (!checked.ok) return checked
    return invoker.invoke({ target: spec, event: checked.request, onChunk: chunk })
  }

  async function handle(served: Served, delivery: Delivery): Promise<void> {
    const { spec } = served
    const id = delivery.properties[ID_PROPERTY] || UNKNOWN_ID
    let settled = false
    const settle = (how: 'ack' | 'nack') => {
      if (settled) return
      settled = true
      inFlight.remove(entry)
      if (how === 'ack') delivery.ack()
      else delivery.nack()
      if (inFlight.size === 0) drained?.()
    }
    const entry = inFlight.push(() => settle('nack'))
    const properties = { [ID_PROPERTY]: id }
    const responder = createResponder(
      spec.response,
      (body) => transport.publish(spec.responseQueue, body, properties),
      transport.maxMessageBytes,
    )
    try {
      // Once given back (drain timeout), another consumer answers it: publish nothing more.
      const outcome = await evaluate(served, delivery, (text) => {
        if (!settled) responder.chunk(text)
      })
      if (settled) return
      if (!outcome.ok) logger.warn({ service: spec.id, id, kind: outcome.kind }, outcome.message)
      await responder.finish(outcome)
      settle('ack')
    } catch (err) {
      if (isToolbridgeError(err) && !err.retriable) {
        // It would fail the same way on every redelivery: drop it rather than loop.
        logger.error({ service: spec.id, id, err: err.message }, 'could not publish the response; request dropped')
        settle('ack')
      } else {
        // Give the request back so it can be answered; never ack and lose it.
        logger.error({ service: spec.id, id, err: (err as Error).message }, 'could not publish the response; request returned to the queue')
        settle('nack')
      }
    }
  }

  return {
    get inFlight() {
      return inFlight.size
    },

    async start() {
      await transport.connect()
      await Promise.all(
        services.map(async (spec) => {
          const loadError = await invoker.prepare(spec)
          if (loadError) logger.error({ service: spec.id, fn: spec.functionName }, `function cannot load: ${loadError}`)
        }),
      )
      for (const spec of services) {
        const served: Served = { spec, check: compileRequestCheck(spec) }
        const consumer = await transport.consume(
          spec.requestQueue,
          { subscription: requestSubscription(spec.id), concurrency: spec.concurrency },
          (delivery) => void handle(served, delivery),
        )
        consumers.push(consumer)
      }
    },

    async stop() {
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

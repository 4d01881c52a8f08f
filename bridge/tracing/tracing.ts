/**
 * What the bridge asks of tracing, without OpenTelemetry in its imports: the
 * SDK (otel-tracing.ts) is imported only when the environment turns tracing
 * on (start-tracing.ts). Off, the bridge's only cost is one `if` per request.
 */
import type { FunctionTarget, InvocationTrace, Outcome } from '../invokers/invoker.ts'
import type { Logger } from '../support/logger.ts'
import type { Properties } from '../transports/transport.ts'

/** A request as taken from its queue. */
export interface TracedRequest {
  /** The transport's kind: `rabbitmq`, `kafka`, `pulsar`, `memory`. */
  system: string
  queue: string
  subscription: string
  /** TrustGraph's request id (the conversation id of request and answers). */
  id: string
  properties: Properties
  bodyBytes: number
}

/** One request's trace: its `process` span, and the spans under it. */
export interface RequestTrace {
  /** Runs the invocation inside its span; `call` gets the context to hand the function. */
  invoke(target: FunctionTarget, call: (trace: InvocationTrace) => Promise<Outcome>): Promise<Outcome>
  /** Publishes one response message inside a `send` span, with that span's `traceparent` added to its properties. */
  send(
    queue: string,
    properties: Properties,
    last: boolean,
    publish: (properties: Properties) => Promise<void>,
  ): Promise<void>
  /** The request was answered: `outcome` is what its final message said; `tool` is '' when unknown. */
  answered(tool: string, outcome: Outcome): void
  /** No answer went out (publishing failed): the request was dropped or given back. */
  unanswered(tool: string, reason: string): void
}

export interface Tracing {
  request(request: TracedRequest): RequestTrace
  /** Exports what is queued (within a few seconds), then stops. */
  shutdown(): Promise<void>
}

export interface TracingOptions {
  /** How functions at a `handler:` location run: `in-process`, `worker-threads` or `lambda`. */
  handlerInvoker: string
  /** Spans that could not be exported: the queue was full, or the exporter failed. */
  onDropped?: (spans: number) => void
  logger?: Logger
}

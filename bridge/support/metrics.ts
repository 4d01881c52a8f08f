/**
 * Prometheus metrics (prom-client), served as text on GET /metrics.
 *
 * The bridge reports through the `BridgeMetrics` interface, so that it does
 * not depend on prom-client and tests can leave metrics out. It takes one
 * `ServiceMetrics` per service at start, whose label children are made once
 * (per tool on first use): looking them up by label values on every request
 * would hash the labels each time.
 *
 * `tg_dynamic_tool_service_invocation_total{processor}` counts what
 * TrustGraph's own DynamicToolService counts (an answer sent, per service
 * id), so dashboards built on TrustGraph's services keep working.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { ErrorKind } from '../../shared/errors.ts'
import { wireErrorType } from '../../shared/protocol.ts'

/** What the bridge reports about one service. `tool` is '' when a request's tool cannot be told. */
export interface ServiceMetrics {
  received(tool: string, redelivered: boolean): void
  /** The final answer was published: an answer, or an error of `kind`. */
  answered(tool: string, errorKind: ErrorKind | undefined, seconds: number): void
  chunkPublished(): void
  inFlight(delta: 1 | -1): void
  /** A redelivered request was answered again from the answered-once memory, without invoking. */
  replayed(): void
  /** A request was written to the dead-letter queue, for this reason. */
  deadLettered(kind: ErrorKind): void
  /** The answered-once store failed: the request was run anyway, refused, or its answer not kept. */
  answeredStoreTrouble(outcome: 'ran' | 'refused' | 'not-kept'): void
}

export interface BridgeMetrics {
  forService(service: string): ServiceMetrics
  transportReconnected(transport: string): void
}

const noServiceMetrics: ServiceMetrics = {
  received() {},
  answered() {},
  chunkPublished() {},
  inFlight() {},
  replayed() {},
  deadLettered() {},
  answeredStoreTrouble() {},
}
export const noMetrics: BridgeMetrics = { forService: () => noServiceMetrics, transportReconnected() {} }

/** Seconds; from a fast in-process call to a long Lambda. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

export interface Metrics extends BridgeMetrics {
  readonly registry: Registry
  /** Spans that tracing could not export (queue full, collector unreachable). */
  spansDropped(count: number): void
  /** A call over HTTP refused before it reached the broker (422, 413, 429), by `tool`, one the gateway serves. */
  httpRefused(tool: string, status: number): void
  /** A connection the gateway closed to stay within its connection cap: the longest idle, or (all busy) the new one. */
  httpConnectionClosed(reason: 'evicted-idle' | 'all-busy'): void
  /** An MCP tools/call over HTTP, by what answered it: the direct lane or the SDK. */
  mcpToolCall(path: 'direct' | 'sdk'): void
  /** The text exposition format, and its content type. */
  render(): Promise<{ contentType: string; body: string }>
}

export function createMetrics(options: { processMetrics?: boolean } = {}): Metrics {
  const registry = new Registry()
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry })
  const registers = [registry]

  const requests = new Counter({
    name: 'toolbridge_requests_total',
    help: 'Requests taken from the request queues',
    labelNames: ['service', 'tool'] as const,
    registers,
  })
  const answers = new Counter({
    name: 'toolbridge_answers_total',
    help: 'Requests answered (final message published), by outcome',
    labelNames: ['service', 'tool', 'outcome'] as const,
    registers,
  })
  const errors = new Counter({
    name: 'toolbridge_errors_total',
    help: 'Error answers, by the error.type they carry on the wire',
    labelNames: ['service', 'tool', 'kind'] as const,
    registers,
  })
  const inFlight = new Gauge({
    name: 'toolbridge_requests_in_flight',
    help: 'Requests taken and not yet answered',
    labelNames: ['service'] as const,
    registers,
  })
  const latency = new Histogram({
    name: 'toolbridge_request_duration_seconds',
    help: 'From taking a request to publishing its final answer',
    labelNames: ['service', 'tool'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const chunks = new Counter({
    name: 'toolbridge_chunks_published_total',
    help: 'Streamed chunks published (final messages not included)',
    labelNames: ['service'] as const,
    registers,
  })
  const redeliveries = new Counter({
    name: 'toolbridge_redeliveries_total',
    help: 'Requests the broker had delivered before',
    labelNames: ['service'] as const,
    registers,
  })
  const replays = new Counter({
    name: 'toolbridge_answers_replayed_total',
    help: 'Redelivered requests answered again from memory, without invoking',
    labelNames: ['service'] as const,
    registers,
  })
  const deadLetters = new Counter({
    name: 'toolbridge_dead_letters_total',
    help: 'Requests written to the dead-letter queue, by the error.type of the reason',
    labelNames: ['service', 'kind'] as const,
    registers,
  })
  const storeFailures = new Counter({
    name: 'toolbridge_answered_store_failures_total',
    help: 'Answered-once store calls that failed (unreachable, slow, full, unreadable), by what became of the request',
    labelNames: ['service', 'outcome'] as const,
    registers,
  })
  const reconnects = new Counter({
    name: 'toolbridge_transport_reconnects_total',
    help: 'Connections to the broker re-established after a loss',
    labelNames: ['transport'] as const,
    registers,
  })
  const droppedSpans = new Counter({
    name: 'toolbridge_trace_spans_dropped_total',
    help: 'Spans dropped instead of exported: the export queue was full or the collector failed',
    registers,
  })
  const httpRefusals = new Counter({
    name: 'toolbridge_http_refused_total',
    help: 'Calls over HTTP refused before they reached the broker (arguments, size, calls in flight), by status',
    labelNames: ['tool', 'status'] as const,
    registers,
  })
  const httpConnectionsClosed = new Counter({
    name: 'toolbridge_http_connections_closed_total',
    help: 'Connections the gateway closed to stay within its connection cap: the longest idle one, or the new one when all were busy',
    labelNames: ['reason'] as const,
    registers,
  })
  const mcpToolCalls = new Counter({
    name: 'toolbridge_mcp_tool_calls_total',
    help: 'MCP tools/call requests over HTTP, by what answered them: direct (a stateless 2026-07-28 call that wants only its result) or sdk',
    labelNames: ['path'] as const,
    registers,
  })
  const trustgraphInvocations = new Counter({
    name: 'tg_dynamic_tool_service_invocation_total',
    help: 'Dynamic tool service invocation count',
    labelNames: ['processor'] as const,
    registers,
  })

  type CounterChild = ReturnType<typeof requests.labels>

  function forService(service: string): ServiceMetrics {
    type ToolChildren = {
      requests: CounterChild
      ok: CounterChild
      error: CounterChild
      latency: ReturnType<typeof latency.labels>
    }
    const perTool = new Map<string, ToolChildren>()
    const toolMetrics = (tool: string): ToolChildren => {
      let children = perTool.get(tool)
      if (children === undefined) {
        children = {
          requests: requests.labels(service, tool),
          ok: answers.labels(service, tool, 'ok'),
          error: answers.labels(service, tool, 'error'),
          latency: latency.labels(service, tool),
        }
        perTool.set(tool, children)
      }
      return children
    }
    const serviceChunks = chunks.labels(service)
    const serviceRedeliveries = redeliveries.labels(service)
    const serviceInFlight = inFlight.labels(service)
    const trustgraph = trustgraphInvocations.labels(service)
    const serviceReplays = replays.labels(service)
    return {
      received(tool, redelivered) {
        toolMetrics(tool).requests.inc()
        if (redelivered) serviceRedeliveries.inc()
      },
      answered(tool, errorKind, seconds) {
        const t = toolMetrics(tool)
        t.latency.observe(seconds)
        if (errorKind === undefined) {
          t.ok.inc()
          trustgraph.inc()
        } else {
          t.error.inc()
          // Labelled as callers see it: a crash and a thrown error are both `tool-service-error`.
          errors.labels(service, tool, wireErrorType(errorKind)).inc()
        }
      },
      chunkPublished: () => serviceChunks.inc(),
      inFlight: (delta) => serviceInFlight.inc(delta),
      replayed: () => serviceReplays.inc(),
      deadLettered: (kind) => deadLetters.labels(service, wireErrorType(kind)).inc(),
      answeredStoreTrouble: (outcome) => storeFailures.labels(service, outcome).inc(),
    }
  }

  return {
    registry,
    forService,
    transportReconnected(transport) {
      reconnects.labels(transport).inc()
    },
    spansDropped: (count) => droppedSpans.inc(count),
    httpRefused: (tool, status) => httpRefusals.labels(tool, String(status)).inc(),
    httpConnectionClosed: (reason) => httpConnectionsClosed.labels(reason).inc(),
    mcpToolCall: (path) => mcpToolCalls.labels(path).inc(),
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}

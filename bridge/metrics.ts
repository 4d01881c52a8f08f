/**
 * Prometheus metrics (prom-client), served as text on GET /metrics.
 *
 * The bridge reports through the `BridgeMetrics` interface, so that it does
 * not depend on prom-client and tests can leave metrics out. Label children
 * are cached per service and tool: looking them up by label values on every
 * request would hash the labels each time.
 *
 * `tg_dynamic_tool_service_invocation_total{processor}` counts what
 * TrustGraph's own DynamicToolService counts (an answer sent, per service
 * id), so dashboards built on TrustGraph's services keep working.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { ErrorKind } from '../shared/errors.ts'

/** What the bridge reports. `tool` is '' when a request's tool cannot be told. */
export interface BridgeMetrics {
  received(service: string, tool: string, redelivered: boolean): void
  /** The final answer was published: an answer, or an error of `kind`. */
  answered(service: string, tool: string, errorKind: ErrorKind | undefined, seconds: number): void
  chunkPublished(service: string): void
  inFlight(service: string, delta: 1 | -1): void
  transportReconnected(transport: string): void
}

export const noMetrics: BridgeMetrics = {
  received() {},
  answered() {},
  chunkPublished() {},
  inFlight() {},
  transportReconnected() {},
}

/** Seconds; from a fast in-process call to a long Lambda. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

export interface Metrics extends BridgeMetrics {
  readonly registry: Registry
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
    help: 'Error answers, by wire error kind',
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
  const reconnects = new Counter({
    name: 'toolbridge_transport_reconnects_total',
    help: 'Connections to the broker re-established after a loss',
    labelNames: ['transport'] as const,
    registers,
  })
  const trustgraphInvocations = new Counter({
    name: 'tg_dynamic_tool_service_invocation_total',
    help: 'Dynamic tool service invocation count',
    labelNames: ['processor'] as const,
    registers,
  })

  /** Label children by key, made once. */
  const cached = <T>(make: (key: string) => T) => {
    const children = new Map<string, T>()
    return (key: string) => {
      let child = children.get(key)
      if (child === undefined) children.set(key, (child = make(key)))
      return child
    }
  }
  const SEP = '\u0000'
  const perTool = cached((key) => {
    const [service, tool] = key.split(SEP) as [string, string]
    return {
      requests: requests.labels(service, tool),
      ok: answers.labels(service, tool, 'ok'),
      error: answers.labels(service, tool, 'error'),
      latency: latency.labels(service, tool),
    }
  })
  const perService = cached((service) => ({
    chunks: chunks.labels(service),
    redeliveries: redeliveries.labels(service),
    inFlight: inFlight.labels(service),
    trustgraph: trustgraphInvocations.labels(service),
  }))

  return {
    registry,
    received(service, tool, redelivered) {
      perTool(service + SEP + tool).requests.inc()
      if (redelivered) perService(service).redeliveries.inc()
    },
    answered(service, tool, errorKind, seconds) {
      const t = perTool(service + SEP + tool)
      t.latency.observe(seconds)
      if (errorKind === undefined) {
        t.ok.inc()
        perService(service).trustgraph.inc()
      } else {
        t.error.inc()
        errors.labels(service, tool, errorKind).inc()
      }
    },
    chunkPublished(service) {
      perService(service).chunks.inc()
    },
    inFlight(service, delta) {
      perService(service).inFlight.inc(delta)
    },
    transportReconnected(transport) {
      reconnects.labels(transport).inc()
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}

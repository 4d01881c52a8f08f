/**
 * Jaeger for the tracing tests (scripts/jaeger.sh starts it): whether it
 * runs, and a trace read back from its query API as spans with their tags
 * and parent, the way its UI shows them.
 */
import { setTimeout as pause } from 'node:timers/promises'
import { waitFor } from './response-tap.ts'

export const JAEGER_QUERY = 'http://127.0.0.1:16686'
export const JAEGER_OTLP = 'http://127.0.0.1:4318'

/** Whether Jaeger's query API answers; if not, says once how to start it. */
export async function jaegerRunning(): Promise<boolean> {
  const running = await fetch(`${JAEGER_QUERY}/api/services`, { signal: AbortSignal.timeout(2000) }).then(
    (response) => response.ok,
    () => false,
  )
  if (!running) console.warn('skipping the tracing tests: Jaeger is not running (scripts/jaeger.sh start)')
  return running
}

export interface JaegerSpan {
  spanId: string
  operationName: string
  /** The CHILD_OF reference: a span of this trace, or the caller's (not in Jaeger). */
  parentId: string | undefined
  serviceName: string
  tags: Record<string, unknown>
}

interface RawSpan {
  spanID: string
  operationName: string
  processID: string
  references: { refType: string; spanID: string }[]
  tags: { key: string; value: unknown }[]
}

interface RawTrace {
  spans: RawSpan[]
  processes: Record<string, { serviceName: string }>
}

/** The trace's spans once at least `count` of them have arrived (export is batched: they come within seconds). */
export async function jaegerTrace(traceId: string, count: number): Promise<JaegerSpan[]> {
  let spans: JaegerSpan[] = []
  await waitFor(
    `${count} spans of trace ${traceId} in Jaeger`,
    async () => {
      const response = await fetch(`${JAEGER_QUERY}/api/traces/${traceId}`)
      const trace = response.ok ? ((await response.json()) as { data: RawTrace[] }).data[0] : undefined
      if (trace === undefined) {
        await pause(200)
        return false
      }
      spans = trace.spans.map((span) => ({
        spanId: span.spanID,
        operationName: span.operationName,
        parentId: span.references.find((reference) => reference.refType === 'CHILD_OF')?.spanID,
        serviceName: trace.processes[span.processID]?.serviceName ?? '',
        tags: Object.fromEntries(span.tags.map((tag) => [tag.key, tag.value])),
      }))
      if (spans.length >= count) return true
      await pause(200) // spans come in batches: no need to ask more often
      return false
    },
    30_000,
  )
  return spans
}

/** The one span named `name`; fails when there is none or several. */
export function spanNamed(spans: JaegerSpan[], name: string): JaegerSpan {
  const found = spans.filter((span) => span.operationName === name)
  if (found.length !== 1) {
    throw new Error(
      `expected one span "${name}", found ${found.length} in: ${spans.map((s) => s.operationName).join(', ')}`,
    )
  }
  return found[0] as JaegerSpan
}

/**
 * Tracing with the OpenTelemetry SDK, imported only when tracing is on
 * (tracing.ts). Spans follow the semantic conventions for messaging and FaaS:
 *
 *   process <request queue>   CONSUMER, a child of the caller's traceparent (or a new root)
 *   ├─ <function name>        CLIENT, the invocation: faas.invoked_name, faas.invocation_id, faas.coldstart
 *   └─ send <response queue>  PRODUCER, one per published message; its traceparent rides on the message
 *
 * Parents are passed explicitly: no global provider, propagator or context
 * manager is installed, so nothing else in the process is traced by accident
 * and no async-context bookkeeping runs per await.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ConsoleSpanExporter,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace'
import { messageOf } from '../../shared/errors.ts'
import type { FunctionTarget, InvocationTrace, Outcome } from '../invokers/invoker.ts'
import { bounded } from '../support/bounded-text.ts'
import { formatTraceparent, incomingContext } from './trace-context.ts'
import { BoundedSpanProcessor } from './bounded-span-processor.ts'
import type { RequestTrace, TracedRequest, Tracing, TracingOptions } from './tracing.ts'
import type { TracingSettings } from './tracing-settings.ts'

/** How long a stop waits for the last spans to be exported. */
const SHUTDOWN_LIMIT_MS = 5000

/** Longest error description on a span: enough to read, bounded like the answer's. */
const MAX_STATUS_TEXT = 1024

function samplerFor({ kind, parentBased, ratio }: TracingSettings['sampler']): Sampler {
  const root =
    kind === 'always_on'
      ? new AlwaysOnSampler()
      : kind === 'always_off'
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(ratio)
  return parentBased ? new ParentBasedSampler({ root }) : root
}

/** The span's own context as W3C headers, with the caller's tracestate and baggage passed on. */
function headersOf(span: Span, tracestate: string | undefined, baggage: string | undefined): Record<string, string> {
  const { traceId, spanId, traceFlags } = span.spanContext()
  const headers: Record<string, string> = { traceparent: formatTraceparent({ traceId, spanId, flags: traceFlags }) }
  if (tracestate !== undefined) headers.tracestate = tracestate
  if (baggage !== undefined) headers.baggage = baggage
  return headers
}

/**
 * Ends a span with how its request or invocation ended. The error's message
 * only with `describe`: the one that went on the wire, its host paths
 * already scrubbed (the invocation's own may still hold them).
 */
function endWith(span: Span, outcome: Outcome, describe: boolean): void {
  if (outcome.ok) span.setAttribute('toolbridge.outcome', 'ok')
  else {
    span.setAttributes({ 'toolbridge.outcome': outcome.kind, 'error.type': outcome.kind })
    span.setStatus({
      code: SpanStatusCode.ERROR,
      ...(describe ? { message: bounded(outcome.message, MAX_STATUS_TEXT) } : {}),
    })
  }
  span.end()
}

function endWithFailure(span: Span, errorType: string, reason: string): void {
  span.setAttribute('error.type', errorType)
  span.setStatus({ code: SpanStatusCode.ERROR, message: bounded(reason, MAX_STATUS_TEXT) })
  span.end()
}

export function createOtelTracing(settings: TracingSettings, options: TracingOptions): Tracing {
  // The SDK reads the rest of OTEL_EXPORTER_OTLP_* (headers, timeout, compression) itself.
  const exporter =
    settings.exporter === 'otlp'
      ? new OTLPTraceExporter(settings.otlpUrl === undefined ? {} : { url: settings.otlpUrl })
      : new ConsoleSpanExporter()
  const processor = new BoundedSpanProcessor(exporter, {
    ...settings.batch,
    onDropped: options.onDropped ?? (() => {}),
  })
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] })) // OTEL_RESOURCE_ATTRIBUTES
    .merge(resourceFromAttributes({ 'service.name': settings.serviceName }))
  const provider = new TracerProvider({
    resource,
    sampler: samplerFor(settings.sampler),
    spanProcessors: [processor],
  })
  const tracer = provider.getTracer('toolbridge')
  options.logger?.info({ exporter: settings.exporter, sampler: settings.sampler, batch: settings.batch }, 'tracing on')

  function request(taken: TracedRequest): RequestTrace {
    const incoming = incomingContext(taken.properties)
    let parent: Context = ROOT_CONTEXT
    if (incoming !== undefined) {
      const { traceId, spanId, flags } = incoming.parent
      parent = trace.setSpanContext(ROOT_CONTEXT, {
        traceId,
        spanId,
        traceFlags: flags,
        isRemote: true,
        ...(incoming.tracestate === undefined ? {} : { traceState: createTraceState(incoming.tracestate) }),
      })
    }
    const messaging: Attributes = {
      'messaging.system': taken.system,
      'messaging.message.conversation_id': taken.id,
    }
    const processSpan = tracer.startSpan(
      `process ${taken.queue}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          ...messaging,
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': taken.queue,
          'messaging.consumer.group.name': taken.subscription,
          'messaging.message.body.size': taken.bodyBytes,
        },
      },
      parent,
    )
    const inProcess = trace.setSpan(ROOT_CONTEXT, processSpan)
    let sent = 0

    return {
      async invoke(target: FunctionTarget, call: (trace: InvocationTrace) => Promise<Outcome>) {
        const { location } = target
        const attributes: Attributes = {
          'faas.invoked_name': location.kind === 'lambda' ? location.lambdaName : target.functionName,
          'toolbridge.invoker': location.kind === 'handler' ? options.handlerInvoker : location.kind,
        }
        if (location.kind === 'lambda' || (location.kind === 'handler' && options.handlerInvoker === 'lambda')) {
          attributes['faas.invoked_provider'] = 'aws'
          if (location.kind === 'lambda' && location.region) attributes['faas.invoked_region'] = location.region
        }
        const span = tracer.startSpan(target.functionName, { kind: SpanKind.CLIENT, attributes }, inProcess)
        const invocation: InvocationTrace = {
          headers: headersOf(span, incoming?.tracestate, incoming?.baggage),
          observed({ invocationId, coldStart }) {
            if (invocationId !== undefined) span.setAttribute('faas.invocation_id', invocationId)
            if (coldStart !== undefined) span.setAttribute('faas.coldstart', coldStart)
          },
        }
        try {
          const outcome = await call(invocation)
          endWith(span, outcome, false)
          return outcome
        } catch (err) {
          span.setAttribute('error.type', 'crash')
          span.setStatus({ code: SpanStatusCode.ERROR })
          span.end()
          throw err
        }
      },

      async send(queue, properties, last, publish) {
        const span = tracer.startSpan(
          `send ${queue}`,
          {
            kind: SpanKind.PRODUCER,
            attributes: {
              ...messaging,
              'messaging.operation.type': 'send',
              'messaging.operation.name': 'send',
              'messaging.destination.name': queue,
              'toolbridge.response.index': sent++,
              'toolbridge.response.final': last,
            },
          },
          inProcess,
        )
        try {
          await publish({ ...properties, ...headersOf(span, incoming?.tracestate, undefined) })
          span.end()
        } catch (err) {
          endWithFailure(span, 'publish-failed', messageOf(err))
          throw err
        }
      },

      answered(tool, outcome) {
        processSpan.setAttributes({ 'toolbridge.tool': tool, 'toolbridge.responses': sent })
        endWith(processSpan, outcome, true)
      },

      unanswered(tool, reason) {
        processSpan.setAttributes({ 'toolbridge.tool': tool, 'toolbridge.responses': sent })
        endWithFailure(processSpan, 'publish-failed', reason)
      },
    }
  }

  return {
    request,
    async shutdown() {
      // An unreachable collector must not hold up a stop for the exporter's whole timeout.
      let timer: NodeJS.Timeout | undefined
      const gaveUp = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_LIMIT_MS)
      })
      await Promise.race([provider.shutdown(), gaveUp])
      clearTimeout(timer)
    },
  }
}

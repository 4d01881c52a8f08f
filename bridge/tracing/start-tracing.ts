/** Tracing started from the environment: the SDK is imported only when OTEL_* turn it on. */
import type { Tracing, TracingOptions } from './tracing.ts'
import { tracingSettings } from './tracing-settings.ts'

/** Tracing as the environment (OTEL_*) asks for it, or undefined when it is off; a ConfigError for a value it cannot honour. */
export async function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  options: TracingOptions,
): Promise<Tracing | undefined> {
  const settings = tracingSettings(env)
  if (settings === undefined) return undefined
  const { createOtelTracing } = await import('./otel-tracing.ts')
  return createOtelTracing(settings, options)
}

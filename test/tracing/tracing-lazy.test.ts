/**
 * Tracing off costs no module: a bridge started without OTEL_* variables
 * never resolves the OpenTelemetry SDK or exporter, one started with them
 * does. (The small @opentelemetry/api is loaded either way: prom-client
 * imports it for its exemplars.) Each case runs in a process of its own,
 * watched by a module resolution hook.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')

/** The @opentelemetry packages a fresh process resolves while it starts and stops a bridge with `env`. */
function packagesResolved(env: Record<string, string>): string[] {
  const script = `
    import { registerHooks } from 'node:module'
    const seen = new Set()
    registerHooks({
      resolve(specifier, context, next) {
        if (specifier.startsWith('@opentelemetry/')) seen.add(specifier)
        return next(specifier, context)
      },
    })
    const { loadProject } = await import(${JSON.stringify(join(ROOT, 'bridge/project/project.ts'))})
    const { resolveSettings } = await import(${JSON.stringify(join(ROOT, 'bridge/project/settings.ts'))})
    const { startRuntime } = await import(${JSON.stringify(join(ROOT, 'bridge/runtime.ts'))})
    const runtime = await startRuntime(
      loadProject(${JSON.stringify(join(ROOT, 'serverless.yml'))}),
      resolveSettings({ port: 'off', invoker: 'in-process' }, {}),
      { env: ${JSON.stringify(env)} },
    )
    await runtime.stop()
    console.log(JSON.stringify([...seen]))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  })
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[]
}

describe('tracing off', () => {
  it('loads neither the OpenTelemetry SDK nor its exporter', () => {
    expect(packagesResolved({}).filter((name) => name !== '@opentelemetry/api')).toEqual([])
  }, 70_000)

  it('while tracing on loads the SDK and the exporter', () => {
    // The console exporter: nothing to reach, and the SDK loads all the same.
    expect(packagesResolved({ OTEL_TRACES_EXPORTER: 'console' })).toEqual(
      expect.arrayContaining([
        '@opentelemetry/api',
        '@opentelemetry/sdk-trace',
        '@opentelemetry/exporter-trace-otlp-proto',
      ]),
    )
  }, 70_000)
})

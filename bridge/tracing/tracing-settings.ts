/**
 * Whether to trace, and how, from the standard OpenTelemetry variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * Pure: reading these decides whether the SDK is loaded at all.
 *
 * Tracing is on when OTEL_TRACES_EXPORTER names an exporter, or, with it
 * unset, when an OTLP endpoint is set; off otherwise, and always off with
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. A value toolbridge
 * cannot honour is a ConfigError at start rather than a silent default.
 */
import { ConfigError } from '../../shared/errors.ts'

export type SamplerKind = 'always_on' | 'always_off' | 'traceidratio'

export interface TracingSettings {
  exporter: 'otlp' | 'console'
  /** Where OTLP spans go: the traces endpoint as set, or `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`; undefined: the SDK's default. */
  otlpUrl: string | undefined
  /** OTEL_SERVICE_NAME, else `toolbridge`. */
  serviceName: string
  sampler: {
    kind: SamplerKind
    /** Follow the caller's sampled flag when there is a caller (parentbased_*). */
    parentBased: boolean
    /** For traceidratio: the share of new traces kept, 0 to 1. */
    ratio: number
  }
  /** The export queue (OTEL_BSP_*): spans past maxQueueSize are dropped and counted, never waited for. */
  batch: { maxQueueSize: number; maxBatchSize: number; delayMs: number }
}

type Env = Readonly<Record<string, string | undefined>>

const SAMPLERS: Record<string, Omit<TracingSettings['sampler'], 'ratio'>> = {
  always_on: { kind: 'always_on', parentBased: false },
  always_off: { kind: 'always_off', parentBased: false },
  traceidratio: { kind: 'traceidratio', parentBased: false },
  parentbased_always_on: { kind: 'always_on', parentBased: true },
  parentbased_always_off: { kind: 'always_off', parentBased: true },
  parentbased_traceidratio: { kind: 'traceidratio', parentBased: true },
}

const EXPORTERS = ['otlp', 'console'] as const

/** What the environment asks for, or undefined when tracing is off. */
export function tracingSettings(env: Env): TracingSettings | undefined {
  if (value(env.OTEL_SDK_DISABLED).toLowerCase() === 'true') return undefined
  const exporter = chosenExporter(env)
  if (exporter === undefined) return undefined
  if (exporter === 'otlp') checkProtocol(env)
  return {
    exporter,
    otlpUrl: otlpUrl(env),
    serviceName: value(env.OTEL_SERVICE_NAME) || 'toolbridge',
    sampler: chosenSampler(env),
    batch: chosenBatch(env),
  }
}

const value = (text: string | undefined) => (text ?? '').trim()

function chosenExporter(env: Env): TracingSettings['exporter'] | undefined {
  const listed = value(env.OTEL_TRACES_EXPORTER)
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '')
  if (listed.length === 0) {
    const endpoint = value(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || value(env.OTEL_EXPORTER_OTLP_ENDPOINT)
    return endpoint === '' ? undefined : 'otlp'
  }
  if (listed.includes('none')) return undefined
  const unknown = listed.find((name) => !(EXPORTERS as readonly string[]).includes(name))
  if (unknown !== undefined)
    throw new ConfigError(
      'OTEL_TRACES_EXPORTER',
      `"${unknown}" is not an exporter toolbridge has; use otlp, console or none`,
    )
  if (listed.length > 1) throw new ConfigError('OTEL_TRACES_EXPORTER', 'name one exporter: otlp, console or none')
  return listed[0] as TracingSettings['exporter']
}

/** The OTLP exporter toolbridge loads speaks HTTP with protobuf bodies (port 4318), the protocol the specification makes the default. */
function checkProtocol(env: Env): void {
  const variable = value(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const protocol = value(env[variable])
  if (protocol !== '' && protocol !== 'http/protobuf')
    throw new ConfigError(
      variable,
      `"${protocol}" is not supported; use http/protobuf (an OTLP/HTTP endpoint, port 4318)`,
    )
}

/** As the specification says: a signal's own endpoint is used as is, the general one gets the signal's path. */
function otlpUrl(env: Env): string | undefined {
  const traces = value(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  if (traces !== '') return traces
  const base = value(env.OTEL_EXPORTER_OTLP_ENDPOINT)
  return base === '' ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`
}

function chosenSampler(env: Env): TracingSettings['sampler'] {
  const name = value(env.OTEL_TRACES_SAMPLER).toLowerCase() || 'parentbased_always_on'
  const sampler = SAMPLERS[name]
  if (sampler === undefined)
    throw new ConfigError('OTEL_TRACES_SAMPLER', `"${name}" is not one of ${Object.keys(SAMPLERS).join(', ')}`)
  return { ...sampler, ratio: sampler.kind === 'traceidratio' ? ratioOf(value(env.OTEL_TRACES_SAMPLER_ARG)) : 1 }
}

function chosenBatch(env: Env): TracingSettings['batch'] {
  const maxQueueSize = positiveInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048)
  const maxBatchSize = positiveInteger(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512)
  if (maxBatchSize > maxQueueSize)
    throw new ConfigError(
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
      `${maxBatchSize} is over OTEL_BSP_MAX_QUEUE_SIZE (${maxQueueSize})`,
    )
  return { maxQueueSize, maxBatchSize, delayMs: positiveInteger(env, 'OTEL_BSP_SCHEDULE_DELAY', 1000) }
}

function positiveInteger(env: Env, variable: string, otherwise: number): number {
  const text = value(env[variable])
  if (text === '') return otherwise
  const number = Number(text)
  if (!Number.isSafeInteger(number) || number < 1)
    throw new ConfigError(variable, `"${text}" is not a positive integer`)
  return number
}

function ratioOf(arg: string): number {
  if (arg === '') return 1
  const ratio = Number(arg)
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw new ConfigError('OTEL_TRACES_SAMPLER_ARG', `"${arg}" is not a ratio from 0 to 1`)
  return ratio
}

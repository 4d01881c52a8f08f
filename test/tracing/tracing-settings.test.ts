/**
 * Which OTEL_* settings turn tracing on, and how: off unless asked for (so
 * the SDK is never loaded), the standard samplers, and a clear error for a
 * value toolbridge cannot honour.
 */
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../shared/errors.ts'
import { tracingSettings } from '../../bridge/tracing/tracing-settings.ts'

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }
const DEFAULT_BATCH = { maxQueueSize: 2048, maxBatchSize: 512, delayMs: 1000 }

function configError(env: Record<string, string>): ConfigError {
  try {
    tracingSettings(env)
  } catch (err) {
    if (err instanceof ConfigError) return err
    throw err
  }
  throw new Error('expected a ConfigError')
}

describe('whether tracing is on', () => {
  it('is off with no OTEL_* variables, or with blank ones', () => {
    expect(tracingSettings({})).toBeUndefined()
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: ' ', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBeUndefined()
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined()
  })

  it('is on with OTLP once an endpoint is set, for all signals or for traces', () => {
    expect(tracingSettings(ENDPOINT)).toEqual({
      exporter: 'otlp',
      otlpUrl: 'http://127.0.0.1:4318/v1/traces',
      serviceName: 'toolbridge',
      sampler: { kind: 'always_on', parentBased: true, ratio: 1 },
      batch: DEFAULT_BATCH,
    })
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })?.exporter).toBe('otlp')
  })

  it('is on with the exporter OTEL_TRACES_EXPORTER names, in any case', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })?.exporter).toBe('otlp')
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: ' Console ' })?.exporter).toBe('console')
  })

  it('is off with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true, even with an endpoint', () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined()
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp,none' })).toBeUndefined()
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp , none' })).toBeUndefined()
    expect(tracingSettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE ' })).toBeUndefined()
    expect(tracingSettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'false' })?.exporter).toBe('otlp')
  })

  it('refuses an exporter it does not have, and more than one', () => {
    const unknown = configError({ OTEL_TRACES_EXPORTER: 'zipkin' })
    expect(unknown.message).toBe(
      'OTEL_TRACES_EXPORTER: "zipkin" is not an exporter toolbridge has; use otlp, console or none',
    )
    expect(configError({ OTEL_TRACES_EXPORTER: 'otlp,console' }).message).toBe(
      'OTEL_TRACES_EXPORTER: name one exporter: otlp, console or none',
    )
  })

  it('speaks OTLP over HTTP with protobuf, and says so for another protocol', () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })?.exporter).toBe('otlp')
    expect(configError({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).message).toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http/protobuf (an OTLP/HTTP endpoint, port 4318)',
    )
    expect(
      configError({
        ...ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }).message,
    ).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http\/json"/)
    // The console exporter has no protocol.
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })?.exporter).toBe(
      'console',
    )
  })
})

describe('where spans go, and as what', () => {
  it('sends to the traces endpoint as set, or to the general one with /v1/traces', () => {
    const url = (env: Record<string, string>) => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', ...env })?.otlpUrl
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318/v1/traces')
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318//' })).toBe('http://collector:4318/v1/traces')
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c/otlp/' })).toBe('http://c/otlp/v1/traces')
    expect(
      url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/x' }),
    ).toBe('http://t:1/x')
    expect(url({})).toBeUndefined()
  })

  it('names the service by OTEL_SERVICE_NAME, else toolbridge', () => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_SERVICE_NAME: ' tools-eu ' })?.serviceName).toBe('tools-eu')
    expect(tracingSettings({ ...ENDPOINT, OTEL_SERVICE_NAME: '' })?.serviceName).toBe('toolbridge')
  })
})

describe('the sampler', () => {
  it.each([
    ['always_on', { kind: 'always_on', parentBased: false, ratio: 1 }],
    ['always_off', { kind: 'always_off', parentBased: false, ratio: 1 }],
    ['traceidratio', { kind: 'traceidratio', parentBased: false, ratio: 1 }],
    ['parentbased_always_on', { kind: 'always_on', parentBased: true, ratio: 1 }],
    ['PARENTBASED_ALWAYS_OFF', { kind: 'always_off', parentBased: true, ratio: 1 }],
    ['parentbased_traceidratio', { kind: 'traceidratio', parentBased: true, ratio: 1 }],
  ])('%s', (name, sampler) => {
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER: name })?.sampler).toEqual(sampler)
  })

  it('takes the ratio from OTEL_TRACES_SAMPLER_ARG, 0 to 1', () => {
    const ratio = (arg: string) =>
      tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })?.sampler.ratio
    expect(ratio('0.25')).toBe(0.25)
    expect(ratio('0')).toBe(0)
    expect(ratio('1')).toBe(1)
    expect(ratio(' ')).toBe(1)
    // Only a ratio sampler reads it.
    expect(tracingSettings({ ...ENDPOINT, OTEL_TRACES_SAMPLER_ARG: '0.5' })?.sampler.ratio).toBe(1)
  })

  it.each(['1.5', '-0.1', 'half', 'NaN', 'Infinity'])('refuses the ratio %s', (arg) => {
    expect(
      configError({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })
        .message,
    ).toBe(`OTEL_TRACES_SAMPLER_ARG: "${arg}" is not a ratio from 0 to 1`)
  })

  it('refuses a sampler it does not know, naming those it does', () => {
    expect(configError({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'jaeger_remote' }).message).toBe(
      'OTEL_TRACES_SAMPLER: "jaeger_remote" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio',
    )
  })
})

describe('the export queue', () => {
  it('takes the OTEL_BSP_* sizes', () => {
    expect(
      tracingSettings({
        ...ENDPOINT,
        OTEL_BSP_MAX_QUEUE_SIZE: '100',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '100',
        OTEL_BSP_SCHEDULE_DELAY: '1',
      })?.batch,
    ).toEqual({ maxQueueSize: 100, maxBatchSize: 100, delayMs: 1 })
  })

  it.each(['0', '-1', '1.5', 'many'])('refuses the size %s', (size) => {
    expect(configError({ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: size }).message).toBe(
      `OTEL_BSP_MAX_QUEUE_SIZE: "${size}" is not a positive integer`,
    )
  })

  it('refuses a batch larger than the queue', () => {
    expect(
      configError({ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '11' }).message,
    ).toBe('OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 11 is over OTEL_BSP_MAX_QUEUE_SIZE (10)')
  })
})

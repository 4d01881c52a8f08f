/**
 * The trace context as Lambda's ClientContext: base64 JSON under `Custom`,
 * within Lambda's 3583-byte limit, dropping baggage, then tracestate, to fit.
 */
import { describe, expect, it } from 'vitest'
import {
  LAMBDA_MAX_CLIENT_CONTEXT_BYTES,
  lambdaClientContext,
} from '../../bridge/invokers/lambda/lambda-client-context.ts'

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const decode = (encoded: string) => JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as unknown

describe('lambdaClientContext', () => {
  it('puts the headers under Custom, as OpenTelemetry reads them', () => {
    const headers = { traceparent: TRACEPARENT, tracestate: 'congo=1', baggage: 'k=v' }
    expect(decode(lambdaClientContext(headers))).toStrictEqual({ Custom: headers })
  })

  it('leaves out baggage when all would not fit', () => {
    const headers = { traceparent: TRACEPARENT, tracestate: 'congo=1', baggage: `k=${'v'.repeat(4000)}` }
    const encoded = lambdaClientContext(headers)
    expect(encoded.length).toBeLessThanOrEqual(LAMBDA_MAX_CLIENT_CONTEXT_BYTES)
    expect(decode(encoded)).toStrictEqual({ Custom: { traceparent: TRACEPARENT, tracestate: 'congo=1' } })
  })

  it('then tracestate, keeping traceparent always', () => {
    const headers = { traceparent: TRACEPARENT, tracestate: `k=${'v'.repeat(3000)}`, baggage: `k=${'v'.repeat(3000)}` }
    const encoded = lambdaClientContext(headers)
    expect(encoded.length).toBeLessThanOrEqual(LAMBDA_MAX_CLIENT_CONTEXT_BYTES)
    expect(decode(encoded)).toStrictEqual({ Custom: { traceparent: TRACEPARENT } })
  })
})

/**
 * The trace context as Lambda's `ClientContext`: base64 JSON with the W3C
 * headers under `Custom`, the shape OpenTelemetry's AWS SDK instrumentation
 * writes and its Lambda instrumentation reads. Lambda refuses a ClientContext
 * over 3583 bytes, so baggage, then tracestate, is left out when it would not
 * fit; traceparent alone always does.
 */
export const LAMBDA_MAX_CLIENT_CONTEXT_BYTES = 3583

export function lambdaClientContext(headers: Readonly<Record<string, string>>): string {
  const { baggage: _baggage, ...withoutBaggage } = headers
  const { tracestate: _tracestate, ...traceparentOnly } = withoutBaggage
  for (const custom of [headers, withoutBaggage]) {
    const encoded = encode(custom)
    if (encoded.length <= LAMBDA_MAX_CLIENT_CONTEXT_BYTES) return encoded
  }
  return encode(traceparentOnly) // always fits: a traceparent is 55 characters
}

const encode = (custom: Readonly<Record<string, string>>) =>
  Buffer.from(JSON.stringify({ Custom: custom })).toString('base64')

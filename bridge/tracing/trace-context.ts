/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) and W3C Baggage,
 * read from what a caller sent: message properties or HTTP headers. Strict:
 * anything malformed is ignored, never an error, and the bridge starts a new
 * root instead. Pure, with no OpenTelemetry import, so that it costs nothing
 * when tracing is off.
 */

export interface SpanContextFields {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string
  /** 16 lowercase hex digits, not all zero. */
  spanId: string
  /** The trace-flags byte; bit 0 is `sampled`. */
  flags: number
}

/** What a caller's trace context is made of, each value checked. */
export interface IncomingContext {
  parent: SpanContextFields
  /** Kept only when well formed (it may be absent). */
  tracestate?: string
  /** Passed on to the function unread, when well formed. */
  baggage?: string
}

/** version "-" trace-id "-" parent-id "-" trace-flags: 55 characters for version 00. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE_ID = '0'.repeat(32)
const ZERO_SPAN_ID = '0'.repeat(16)
const TRACEPARENT_LENGTH = 55

/**
 * A `traceparent` value, or undefined when it is not one. A version above 00
 * is read as 00 when its first 55 characters are, and what follows starts
 * with "-" (the specification's rule for versions it does not know yet);
 * version ff is invalid.
 */
export function parseTraceparent(value: unknown): SpanContextFields | undefined {
  if (typeof value !== 'string' || value.length < TRACEPARENT_LENGTH) return undefined
  const version = value.slice(0, 2)
  if (version === 'ff') return undefined
  if (value.length > TRACEPARENT_LENGTH && (version === '00' || value[TRACEPARENT_LENGTH] !== '-')) return undefined
  const match = TRACEPARENT.exec(value.slice(0, TRACEPARENT_LENGTH))
  if (!match) return undefined
  const [, , traceId, spanId, flags] = match as unknown as [string, string, string, string, string]
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined
  return { traceId, spanId, flags: Number.parseInt(flags, 16) }
}

export function formatTraceparent({ traceId, spanId, flags }: SpanContextFields): string {
  return `00-${traceId}-${spanId}-${flags.toString(16).padStart(2, '0')}`
}

/** tracestate: at most 32 list members, 512 characters kept (the specification lets a vendor drop the rest). */
const MAX_TRACESTATE_LENGTH = 512
const MAX_TRACESTATE_MEMBERS = 32
/** key = simple-key / tenant@system; value = printable ASCII without "," and "=", not ending in a space. */
const TRACESTATE_MEMBER =
  /^[ \t]*(?:[a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e][ \t]*$/

/** A well-formed `tracestate`, or undefined (absent, empty, too long, or any member malformed). */
export function checkTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TRACESTATE_LENGTH) return undefined
  const members = value.split(',').filter((member) => member.trim() !== '')
  if (members.length === 0 || members.length > MAX_TRACESTATE_MEMBERS) return undefined
  return members.every((member) => TRACESTATE_MEMBER.test(member)) ? value : undefined
}

/** W3C Baggage's limit on the whole header. */
const MAX_BAGGAGE_LENGTH = 8192
/** Printable ASCII and tabs only: what a header can carry unchanged. */
const BAGGAGE_CHARACTERS = /^[\t\x20-\x7e]+$/

/** A `baggage` value to pass on as it came, or undefined (absent, over 8192 characters, or not header-safe). */
export function checkBaggage(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_BAGGAGE_LENGTH || !BAGGAGE_CHARACTERS.test(value))
    return undefined
  return value
}

/**
 * A caller's context to pass on in a request's message properties, checked
 * and with traceparent rewritten as version 00; undefined without a valid
 * traceparent. For the front doors: HTTP headers, MCP's `_meta`.
 */
export function contextToPass(carrier: Readonly<Record<string, unknown>>): Record<string, string> | undefined {
  const context = incomingContext(carrier)
  if (context === undefined) return undefined
  const passed: Record<string, string> = { traceparent: formatTraceparent(context.parent) }
  if (context.tracestate !== undefined) passed.tracestate = context.tracestate
  if (context.baggage !== undefined) passed.baggage = context.baggage
  return passed
}

/**
 * The caller's context from message properties or HTTP headers (names in
 * lowercase, as W3C spells them and Node gives HTTP headers), or undefined
 * when there is no valid `traceparent`: tracestate and baggage mean nothing
 * without one.
 */
export function incomingContext(carrier: Readonly<Record<string, unknown>>): IncomingContext | undefined {
  const parent = parseTraceparent(carrier.traceparent)
  if (!parent) return undefined
  const context: IncomingContext = { parent }
  const tracestate = checkTracestate(carrier.tracestate)
  if (tracestate !== undefined) context.tracestate = tracestate
  const baggage = checkBaggage(carrier.baggage)
  if (baggage !== undefined) context.baggage = baggage
  return context
}

/**
 * W3C Trace Context as the bridge reads it from a caller: what is valid is
 * continued, anything malformed is ignored (a new root), never an error.
 */
import { describe, expect, it } from 'vitest'
import {
  checkBaggage,
  checkTracestate,
  contextToPass,
  formatTraceparent,
  incomingContext,
  parseTraceparent,
} from '../../bridge/tracing/trace-context.ts'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN_ID = '00f067aa0ba902b7'
const VALID = `00-${TRACE_ID}-${SPAN_ID}-01`

describe('parseTraceparent', () => {
  it('reads the W3C example', () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 })
  })

  it('reads the flags byte, sampled or not, and the bits it does not know', () => {
    expect(parseTraceparent(`00-${TRACE_ID}-${SPAN_ID}-00`)?.flags).toBe(0)
    expect(parseTraceparent(`00-${TRACE_ID}-${SPAN_ID}-ff`)?.flags).toBe(255)
    expect(parseTraceparent(`00-${TRACE_ID}-${SPAN_ID}-0a`)?.flags).toBe(10)
  })

  it('reads a later version by its version-00 fields, with or without more after a dash', () => {
    expect(parseTraceparent(`01-${TRACE_ID}-${SPAN_ID}-01`)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 })
    expect(parseTraceparent(`cc-${TRACE_ID}-${SPAN_ID}-01-what-the-future-brings`)?.spanId).toBe(SPAN_ID)
  })

  it.each([
    ['version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ['version 00 with more after it', `${VALID}-extra`],
    ['a later version followed by other than a dash', `01-${TRACE_ID}-${SPAN_ID}-01x`],
    ['a version that is not hex', `0g-${TRACE_ID}-${SPAN_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
    ['an all-zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['upper-case hex', VALID.toUpperCase()],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`],
    ['a long trace id', `00-${TRACE_ID}a-${SPAN_ID}-01`],
    ['a short parent id', `00-${TRACE_ID}-${SPAN_ID.slice(1)}-01`],
    ['one-digit flags', `00-${TRACE_ID}-${SPAN_ID}-1`],
    ['flags that are not hex', `00-${TRACE_ID}-${SPAN_ID}-0x`],
    ['underscores for dashes', VALID.replaceAll('-', '_')],
    ['surrounding spaces', ` ${VALID}`],
    ['nothing', ''],
    ['10 KB of junk', 'x'.repeat(10_240)],
    ['10 KB starting with a valid value', `${VALID}${'-'.repeat(10_240)}`],
  ])('ignores %s', (_, value) => {
    expect(parseTraceparent(value)).toBeUndefined()
  })

  it.each([undefined, null, 42, {}, ['00'], Buffer.from(VALID)])(
    'ignores a value that is not a string: %j',
    (value) => {
      expect(parseTraceparent(value)).toBeUndefined()
    },
  )
})

describe('formatTraceparent', () => {
  it('writes version 00 with two-digit flags, the inverse of parsing', () => {
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 })).toBe(VALID)
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 0 })).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`)
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 0xab })).toBe(`00-${TRACE_ID}-${SPAN_ID}-ab`)
  })
})

describe('checkTracestate', () => {
  it.each([
    'congo=t61rcWkgMzE',
    'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    'rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE',
    'tenant1@vendor=value',
    '0tenant@v=1',
    'a_b-c*d/e=x y',
    'k=1,,k2=2',
    'k=1, \t ,k2=2',
    `${'a'.repeat(256)}=v`,
    `k=${'v'.repeat(256)}`,
  ])('keeps %s', (value) => {
    expect(checkTracestate(value)).toBe(value)
  })

  it.each([
    ['nothing', ''],
    ['only commas and spaces', ' , '],
    ['a member without "="', 'congo'],
    ['an empty value', 'k='],
    ['an upper-case key', 'Congo=1'],
    ['a key starting with a digit (not a tenant)', '1abc=1'],
    ['a key over 256 characters', `${'a'.repeat(257)}=v`],
    ['a value over 256 characters', `k=${'v'.repeat(257)}`],
    ['a value ending in a space', 'k=v ='],
    ['a value with "="', 'k=a=b'],
    ['a non-ASCII value', 'k=é'],
    ['a system id over 14 characters', `t@${'s'.repeat(15)}=1`],
    ['a tenant id over 241 characters', `${'t'.repeat(242)}@s=1`],
    ['one malformed member among good ones', 'congo=1,Bad=2,rojo=3'],
    ['33 members', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')],
    ['over 512 characters', Array.from({ length: 20 }, (_, i) => `k${i}=${'v'.repeat(30)}`).join(',')],
  ])('drops %s', (_, value) => {
    expect(checkTracestate(value)).toBeUndefined()
  })

  it('keeps 32 members, and exactly 512 characters', () => {
    const members = Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(',')
    expect(checkTracestate(members)).toBe(members)
    const long = `k=${'v'.repeat(254)},j=${'v'.repeat(253)}`
    expect(long.length).toBe(512)
    expect(checkTracestate(long)).toBe(long)
  })

  it('drops what is not a string', () => {
    expect(checkTracestate(undefined)).toBeUndefined()
    expect(checkTracestate(7)).toBeUndefined()
  })
})

describe('checkBaggage', () => {
  it('passes on a header-safe value as it came, up to 8192 characters', () => {
    expect(checkBaggage('userId=alice,serverNode=DF%2028;p=1')).toBe('userId=alice,serverNode=DF%2028;p=1')
    expect(checkBaggage('a=\tb')).toBe('a=\tb')
    const longest = `k=${'v'.repeat(8190)}`
    expect(checkBaggage(longest)).toBe(longest)
  })

  it.each([
    ['nothing', ''],
    ['over 8192 characters', `k=${'v'.repeat(8191)}`],
    ['a line break (header injection)', 'a=1\r\nx-evil: 1'],
    ['non-ASCII', 'a=é'],
    ['a NUL', 'a=\u0000'],
    ['DEL', 'a=\u007f'],
    ['a number', 12],
  ])('drops %s', (_, value) => {
    expect(checkBaggage(value)).toBeUndefined()
  })
})

describe('incomingContext', () => {
  it('takes traceparent, tracestate and baggage from a carrier', () => {
    expect(incomingContext({ traceparent: VALID, tracestate: 'congo=1', baggage: 'k=v', id: 'x' })).toEqual({
      parent: { traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 },
      tracestate: 'congo=1',
      baggage: 'k=v',
    })
  })

  it('leaves out a malformed tracestate or baggage, and keeps the parent', () => {
    const context = incomingContext({ traceparent: VALID, tracestate: 'BAD', baggage: 'a\nb' })
    expect(context).toEqual({ parent: { traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 } })
    expect(context && 'tracestate' in context).toBe(false)
    expect(context && 'baggage' in context).toBe(false)
  })

  it('is undefined without a valid traceparent, whatever else came', () => {
    expect(incomingContext({})).toBeUndefined()
    expect(incomingContext({ tracestate: 'congo=1', baggage: 'k=v' })).toBeUndefined()
    expect(
      incomingContext({ traceparent: `00-${'0'.repeat(32)}-${SPAN_ID}-01`, tracestate: 'congo=1' }),
    ).toBeUndefined()
  })

  it('reads only the lowercase names, as W3C spells them', () => {
    expect(incomingContext({ Traceparent: VALID })).toBeUndefined()
  })
})

describe('contextToPass', () => {
  it('passes on what is valid, traceparent as version 00', () => {
    expect(contextToPass({ traceparent: VALID, tracestate: 'congo=1', baggage: 'k=v' })).toEqual({
      traceparent: VALID,
      tracestate: 'congo=1',
      baggage: 'k=v',
    })
    expect(contextToPass({ traceparent: `01-${TRACE_ID}-${SPAN_ID}-01-more` })).toStrictEqual({ traceparent: VALID })
  })

  it('leaves out a malformed tracestate or baggage', () => {
    expect(contextToPass({ traceparent: VALID, tracestate: 'X', baggage: 'a\nb' })).toStrictEqual({
      traceparent: VALID,
    })
  })

  it('passes nothing without a valid traceparent', () => {
    expect(contextToPass({ tracestate: 'congo=1', baggage: 'k=v' })).toBeUndefined()
    expect(contextToPass({ traceparent: 'junk', baggage: 'k=v' })).toBeUndefined()
  })
})

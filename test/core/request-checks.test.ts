/**
 * What the bridge refuses before invoking (bridge/core/request-checks.ts):
 * a missing required config param, and arguments of the wrong type for the
 * tool a request is for. A request does not name its tool: in a service of
 * several tools, the tool is the one whose config values the request
 * carries, and its own argument rules apply. The bridge end of it runs on
 * the embedded broker with an invoker that records every call, so a refusal
 * is seen to come before the function is invoked.
 */
import { describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import { compileRequestCheck, compileToolIdentifier } from '../../bridge/core/request-checks.ts'
import type { Invocation, Invoker, Outcome } from '../../bridge/invokers/invoker.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import type { ErrorKind } from '../../shared/errors.ts'
import type { BridgeMetrics } from '../../bridge/support/metrics.ts'
import { MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { encodeRequest, type ToolRequest } from '../../shared/protocol.ts'
import { ResponseTap } from '../support/response-tap.ts'
import { stoppedAfterEach } from '../support/stopped-after-each.ts'

type ToolBlock = {
  name: string
  config?: Record<string, string | number | boolean>
  arguments?: { name: string; type: string; required?: boolean }[]
}

/** One tool service as serverless.yml declares it; config params, unless given, are the tools' config keys. */
function serviceOf(
  tools: ToolBlock[],
  configParams: (string | { name: string; required?: boolean })[] = [
    ...new Set(tools.flatMap((t) => Object.keys(t.config ?? {}))),
  ],
): ToolServiceSpec {
  const [spec] = readToolServices({
    functions: {
      weather: {
        handler: 'weather.handler',
        toolService: {
          id: 'weather',
          topic: 'weather',
          configParams,
          tools: tools.map((t) => ({
            description: t.name,
            ...t,
            arguments: t.arguments?.map((a) => ({ description: a.name, ...a })),
          })),
        },
      },
    },
  })
  if (!spec) throw new Error('no tool service read')
  return spec
}

const request = (config: Record<string, unknown>, args: Record<string, unknown> = {}): ToolRequest => ({
  user: 'u',
  config,
  arguments: args,
})

/** Two tools on one service, told apart by `mode`, each with its own arguments. */
const WEATHER = serviceOf([
  { name: 'forecast', config: { mode: 'forecast' }, arguments: [{ name: 'days', type: 'integer', required: true }] },
  { name: 'alerts', config: { mode: 'alerts' }, arguments: [{ name: 'severe', type: 'boolean' }] },
])

describe('a service of several tools: the tool is the one whose config values the request carries', () => {
  const check = compileRequestCheck(WEATHER)
  const toolOf = compileToolIdentifier(WEATHER)

  it('applies the chosen tool’s argument rules, converting as they say', () => {
    expect(toolOf({ mode: 'forecast' })).toBe('forecast')
    expect(check(request({ mode: 'forecast' }, { days: '3' }))).toStrictEqual({
      ok: true,
      request: request({ mode: 'forecast' }, { days: 3 }),
    })
    expect(check(request({ mode: 'forecast' }, { days: 'soon' }))).toStrictEqual({
      ok: false,
      kind: 'invalid-arguments',
      message: 'invalid arguments: "days" must be an integer, got the string "soon"',
    })
    expect(check(request({ mode: 'forecast' }, {}))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
      message: 'invalid arguments: "days" is required',
    })
  })

  it('does not apply another tool’s rules', () => {
    expect(toolOf({ mode: 'alerts' })).toBe('alerts')
    // "days" is not an argument of alerts: it passes as it came, and nothing is required.
    expect(check(request({ mode: 'alerts' }, { days: 'soon' }))).toStrictEqual({
      ok: true,
      request: request({ mode: 'alerts' }, { days: 'soon' }),
    })
    expect(check(request({ mode: 'alerts' }, { severe: 'true' }))).toStrictEqual({
      ok: true,
      request: request({ mode: 'alerts' }, { severe: true }),
    })
    expect(check(request({ mode: 'alerts' }, { severe: 'very' }))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
    })
    expect(check(request({ mode: 'forecast' }, { days: 1, severe: 'very' }))).toMatchObject({ ok: true })
  })

  it('hands back the very request when nothing was converted', () => {
    const asSent = request({ mode: 'forecast' }, { days: 3 })
    const checked = check(asSent)
    expect(checked.ok && checked.request).toBe(asSent)
  })

  it('leaves the arguments to the function when no tool matches (a tool defined elsewhere)', () => {
    expect(toolOf({ mode: 'tides' })).toBe('')
    expect(toolOf({})).toBe('')
    expect(check(request({ mode: 'tides' }, { days: 'soon', severe: 'very' }))).toMatchObject({ ok: true })
    expect(check(request({}, { days: 'soon' }))).toMatchObject({ ok: true })
  })

  it('matches config values by their text, as TrustGraph sends config as strings', () => {
    const levels = serviceOf([
      { name: 'low', config: { level: 1, strict: false }, arguments: [{ name: 'q', type: 'string' }] },
      { name: 'high', config: { level: 2, strict: true }, arguments: [{ name: 'q', type: 'integer' }] },
    ])
    expect(compileToolIdentifier(levels)({ level: '2', strict: 'true' })).toBe('high')
    expect(compileToolIdentifier(levels)({ level: 1, strict: false })).toBe('low')
    expect(compileRequestCheck(levels)(request({ level: '2', strict: 'true' }, { q: 'x' }))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
    })
    expect(compileRequestCheck(levels)(request({ level: '1', strict: 'false' }, { q: 'x' }))).toMatchObject({
      ok: true,
    })
  })

  it('needs every config value of a tool, and only its own: an inherited property does not count', () => {
    const regional = serviceOf([
      { name: 'eu', config: { mode: 'forecast', region: 'eu' }, arguments: [{ name: 'days', type: 'integer' }] },
      { name: 'us', config: { mode: 'forecast', region: 'us' }, arguments: [{ name: 'days', type: 'number' }] },
    ])
    const toolOfRegional = compileToolIdentifier(regional)
    expect(toolOfRegional({ mode: 'forecast', region: 'eu' })).toBe('eu')
    expect(toolOfRegional({ mode: 'forecast' })).toBe('')
    expect(toolOfRegional({ region: 'us' })).toBe('')
    expect(compileRequestCheck(regional)(request({ mode: 'forecast' }, { days: 1.5 }))).toMatchObject({ ok: true })
    expect(compileRequestCheck(regional)(request({ mode: 'forecast', region: 'eu' }, { days: 1.5 }))).toMatchObject({
      ok: false,
    })

    const withInherited = Object.create({ region: 'eu' }) as Record<string, unknown>
    withInherited.mode = 'forecast'
    expect(toolOfRegional(withInherited)).toBe('')
    // A value that reads like a missing one is still not a missing one.
    const literal = serviceOf([
      { name: 'odd', config: { region: 'undefined' } },
      { name: 'even', config: { region: 'eu' } },
    ])
    expect(compileToolIdentifier(literal)({})).toBe('')
    expect(compileToolIdentifier(literal)({ region: 'undefined' })).toBe('odd')
  })

  it('names no tool when several match, and applies their rules only if they all declare the same', () => {
    // "any" has no config values: it matches every request, so a request for "strict" matches two tools.
    const overlapping = serviceOf([
      { name: 'any', arguments: [{ name: 'n', type: 'string' }] },
      { name: 'strict', config: { strict: 'yes' }, arguments: [{ name: 'n', type: 'integer' }] },
      { name: 'also-strict', config: { strict: 'yes' }, arguments: [{ name: 'n', type: 'integer' }] },
    ])
    const toolOfOverlapping = compileToolIdentifier(overlapping)
    expect(toolOfOverlapping({ strict: 'yes' })).toBe('')
    expect(toolOfOverlapping({ strict: 'no' })).toBe('any')
    // Their rules differ (a string for "any", an integer for the others): neither set applies.
    expect(compileRequestCheck(overlapping)(request({ strict: 'yes' }, { n: 'x' }))).toMatchObject({ ok: true })
    expect(compileRequestCheck(overlapping)(request({ strict: 'yes' }, { n: 5 }))).toMatchObject({ ok: true })
    expect(compileRequestCheck(overlapping)(request({ strict: 'no' }, { n: 5 }))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
    })

    const agreeing = serviceOf([
      { name: 'strict', config: { strict: 'yes' }, arguments: [{ name: 'n', type: 'integer' }] },
      { name: 'also-strict', config: { strict: 'yes' }, arguments: [{ name: 'n', type: 'integer' }] },
      { name: 'loose', config: { strict: 'no' }, arguments: [{ name: 'n', type: 'string' }] },
    ])
    expect(compileToolIdentifier(agreeing)({ strict: 'yes' })).toBe('')
    expect(compileRequestCheck(agreeing)(request({ strict: 'yes' }, { n: 'x' }))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
    })
  })

  it('applies the rules every tool shares to every request, whichever tool it is for', () => {
    const same = [{ name: 'city', type: 'string', required: true }]
    const shared = serviceOf([
      { name: 'forecast', config: { mode: 'forecast' }, arguments: same },
      { name: 'alerts', config: { mode: 'alerts' }, arguments: same },
    ])
    expect(compileRequestCheck(shared)(request({ mode: 'tides' }, {}))).toMatchObject({
      ok: false,
      message: 'invalid arguments: "city" is required',
    })
    expect(compileRequestCheck(shared)(request({}, { city: 7 }))).toMatchObject({
      ok: false,
      kind: 'invalid-arguments',
    })
  })

  it('tells rules apart by name, type and whether they are required', () => {
    const differing = (second: { name: string; type: string; required?: boolean }) =>
      compileRequestCheck(
        serviceOf([
          { name: 'a', config: { t: 'a' }, arguments: [{ name: 'x', type: 'string', required: true }] },
          { name: 'b', config: { t: 'b' }, arguments: [second] },
        ]),
      )
    // Were the two sets of rules taken for one, a request for no tool would be checked by a's.
    expect(differing({ name: 'y', type: 'string', required: true })(request({}, {}))).toMatchObject({ ok: true })
    expect(differing({ name: 'x', type: 'integer', required: true })(request({}, {}))).toMatchObject({ ok: true })
    expect(differing({ name: 'x', type: 'string' })(request({}, {}))).toMatchObject({ ok: true })
    expect(differing({ name: 'x', type: 'string', required: true })(request({}, {}))).toMatchObject({ ok: false })
    // Two rules each, the first alike and the second not: still different.
    const twoRules = (secondType: string) =>
      compileRequestCheck(
        serviceOf([
          {
            name: 'a',
            config: { t: 'a' },
            arguments: [
              { name: 'x', type: 'string', required: true },
              { name: 'y', type: 'string' },
            ],
          },
          {
            name: 'b',
            config: { t: 'b' },
            arguments: [
              { name: 'x', type: 'string', required: true },
              { name: 'y', type: secondType },
            ],
          },
        ]),
      )
    expect(twoRules('integer')(request({}, {}))).toMatchObject({ ok: true })
    expect(twoRules('string')(request({}, {}))).toMatchObject({ ok: false })
  })
})

describe('the tool label of a request (metrics and logs)', () => {
  it('is the only tool of a service whose tool has no config values, whatever the request carries', () => {
    const single = serviceOf([{ name: 'joke' }])
    expect(compileToolIdentifier(single)({})).toBe('joke')
    expect(compileToolIdentifier(single)({ anything: 'x' })).toBe('joke')
  })

  it('is the only tool of a service only when the request carries its config values', () => {
    const single = serviceOf([{ name: 'joke', config: { style: 'pun' } }])
    expect(compileToolIdentifier(single)({ style: 'pun' })).toBe('joke')
    expect(compileToolIdentifier(single)({ style: 'knock-knock' })).toBe('')
  })

  it('is empty for zero matches and for several, and the one tool for one', () => {
    const toolOf = compileToolIdentifier(
      serviceOf([
        { name: 'a', config: { k: '1' } },
        { name: 'b', config: { k: '2' } },
        { name: 'c', config: { k: '2' } },
        { name: 'd', config: { k: '3' } },
      ]),
    )
    expect(toolOf({ k: '0' })).toBe('')
    expect(toolOf({ k: '1' })).toBe('a')
    expect(toolOf({ k: '2' })).toBe('')
    expect(toolOf({ k: '3' })).toBe('d')
  })
})

describe('required config params', () => {
  const spec = serviceOf(
    [{ name: 'joke', config: { style: 'pun', region: 'eu' } }],
    [{ name: 'style', required: true }, { name: 'region', required: true }, 'tone'],
  )
  const check = compileRequestCheck(spec)

  it('refuses a request without one, naming it', () => {
    expect(check(request({ region: 'eu' }))).toStrictEqual({
      ok: false,
      kind: 'missing-config',
      message: 'tool service "weather" requires config param "style"',
    })
  })

  it('names every one missing', () => {
    expect(check(request({ tone: 'dry' }))).toStrictEqual({
      ok: false,
      kind: 'missing-config',
      message: 'tool service "weather" requires config params "style", "region"',
    })
  })

  it('refuses one sent as null (JSON has no other way to leave it out)', () => {
    expect(check(request({ style: null, region: 'eu' }))).toMatchObject({
      ok: false,
      kind: 'missing-config',
      message: 'tool service "weather" requires config param "style"',
    })
  })

  it('does not count an inherited property as sent', () => {
    const config = Object.create({ style: 'pun' }) as Record<string, unknown>
    config.region = 'eu'
    expect(check(request(config))).toMatchObject({ ok: false, kind: 'missing-config' })
  })

  it('accepts any value that is there, falsy ones included, and never asks for an optional one', () => {
    const sent = request({ style: '', region: 0 })
    expect(check(sent)).toStrictEqual({ ok: true, request: sent })
    expect(check(request({ style: false, region: 'eu', tone: null }))).toMatchObject({ ok: true })
  })
})

// ---- the bridge: refusals are answered without invoking the function ----

/** An invoker that records every call and answers what the function would. */
class RecordingInvoker implements Invoker {
  readonly calls: Invocation[] = []
  private readonly answer: (event: unknown) => Outcome
  constructor(answer: (event: unknown) => Outcome) {
    this.answer = answer
  }
  invoke = async (invocation: Invocation): Promise<Outcome> => {
    this.calls.push(invocation)
    return this.answer(invocation.event)
  }
  prepare = async () => undefined
  async close() {}
}

/** Bridge metrics that keep the tool label of every request received and answered. */
function recordingMetrics() {
  const received: string[] = []
  const answered: [tool: string, kind: ErrorKind | undefined][] = []
  const metrics: BridgeMetrics = {
    forService: () => ({
      received: (tool) => void received.push(tool),
      answered: (tool, kind) => void answered.push([tool, kind]),
      chunkPublished() {},
      inFlight() {},
      replayed() {},
      deadLettered() {},
      answeredStoreTrouble() {},
    }),
    transportReconnected() {},
  }
  return { metrics, received, answered }
}

describe('the bridge refuses before invoking', () => {
  const CONFIGURED = serviceOf(
    [
      {
        name: 'forecast',
        config: { mode: 'forecast' },
        arguments: [{ name: 'days', type: 'integer', required: true }],
      },
      { name: 'alerts', config: { mode: 'alerts' } },
      { name: 'also-alerts', config: { mode: 'alerts' } },
    ],
    [{ name: 'mode', required: true }],
  )
  const stopped = stoppedAfterEach<Bridge>()

  async function start() {
    const transport = new MemoryTransport()
    // The function would refuse a missing config the same way: only the record of calls tells who refused.
    const invoker = new RecordingInvoker((event) => {
      const config = (event as ToolRequest).config
      return config.mode === undefined || config.mode === null
        ? { ok: false, kind: 'missing-config', message: 'the function: no mode' }
        : { ok: true, text: 'sunny' }
    })
    const { metrics, received, answered } = recordingMetrics()
    await stopped(createBridge({ transport, invoker, services: [CONFIGURED], metrics })).start()
    const tap = await ResponseTap.open(transport, CONFIGURED.responseQueue)
    const ask = async (id: string, body: Uint8Array) => {
      await transport.publish(CONFIGURED.requestQueue, body, { id })
      const [message] = await tap.ended(id)
      return message!
    }
    return { transport, invoker, tap, ask, received, answered }
  }

  it('answers a request missing a required config param with missing-config, the function never called', async () => {
    const { invoker, ask, received, answered } = await start()
    const answer = await ask('r1', encodeRequest({ config: {}, arguments: { days: 2 } }))
    expect(answer.response).toStrictEqual({
      error: { type: 'missing-config', message: 'tool service "weather" requires config param "mode"' },
      response: '',
      end_of_stream: true,
    })
    const asNull = await ask('r2', encodeRequest({ config: { mode: null }, arguments: { days: 2 } }))
    expect(asNull.response.error).toStrictEqual({
      type: 'missing-config',
      message: 'tool service "weather" requires config param "mode"',
    })
    expect(invoker.calls).toHaveLength(0)
    expect(received).toStrictEqual(['', ''])
    expect(answered).toStrictEqual([
      ['', 'missing-config'],
      ['', 'missing-config'],
    ])
  })

  it('answers arguments that break the tool’s rules with invalid-arguments, the function never called', async () => {
    const { invoker, ask, answered } = await start()
    const answer = await ask('r3', encodeRequest({ config: { mode: 'forecast' }, arguments: { days: 'soon' } }))
    expect(answer.response.error).toStrictEqual({
      type: 'invalid-arguments',
      message: 'invalid arguments: "days" must be an integer, got the string "soon"',
    })
    expect(invoker.calls).toHaveLength(0)
    expect(answered).toStrictEqual([['forecast', 'invalid-arguments']])
  })

  it('invokes the function once with the arguments converted, labelled with the tool it is for', async () => {
    const { invoker, ask, received, answered } = await start()
    const answer = await ask('r4', encodeRequest({ config: { mode: 'forecast' }, arguments: { days: '2' } }))
    expect(answer.response).toStrictEqual({ error: null, response: 'sunny', end_of_stream: true })
    expect(invoker.calls.map((c) => c.event)).toStrictEqual([
      { user: '', config: { mode: 'forecast' }, arguments: { days: 2 } },
    ])
    await ask('r5', encodeRequest({ config: { mode: 'alerts' }, arguments: {} }))
    await ask('r6', encodeRequest({ config: { mode: 'tides' }, arguments: {} }))
    expect(invoker.calls).toHaveLength(3)
    // alerts matches two tools and tides none: neither gets a tool label.
    expect(received).toStrictEqual(['forecast', '', ''])
    expect(answered).toStrictEqual([
      ['forecast', undefined],
      ['', undefined],
      ['', undefined],
    ])
  })

  it('answers under the property "id" the request came with, and under "unknown" when it had none', async () => {
    const { transport, tap } = await start()
    await transport.publish(CONFIGURED.requestQueue, encodeRequest({ config: { mode: 'alerts' } }), { id: 'call-42' })
    const [answer] = await tap.ended('call-42')
    expect(answer!.delivery.properties).toStrictEqual({ id: 'call-42' })
    await transport.publish(CONFIGURED.requestQueue, encodeRequest({ config: { mode: 'alerts' } }), {})
    const [anonymous] = await tap.ended('unknown')
    expect(anonymous!.delivery.properties).toStrictEqual({ id: 'unknown' })
  })
})

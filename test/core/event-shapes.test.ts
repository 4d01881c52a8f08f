/**
 * Event shapes both ways, as units: the event each shape builds from a
 * request, and how each maps a function's result back to the answer; and
 * the serverless.yml errors for shapes that do not fit.
 */
import { describe, expect, it } from 'vitest'
import serverless from 'serverless-http'
import express from 'express'
import { compileEventShape, renderTemplate } from '../../bridge/core/event-shapes.ts'
import { BODY_EXCERPT_CHARS, bodyExcerpt } from '../../bridge/invokers/http-status-outcome.ts'
import { ConfigError } from '../../shared/errors.ts'
import { readToolServices, type ShapeSpec } from '../../bridge/project/tool-services.ts'
import type { ToolRequest } from '../../shared/protocol.ts'

const request = (args: Record<string, unknown>, config: Record<string, unknown> = {}, user = 'alice'): ToolRequest => ({
  user,
  config,
  arguments: args,
})

/** One service with this `toolService:` on top of the minimum, read as the bridge reads serverless.yml. */
function serviceWith(extra: Record<string, unknown>) {
  return readToolServices({
    service: 'shapes',
    functions: {
      fn: {
        handler: 'fn.handler',
        toolService: { id: 'fn-service', topic: 'fn', tools: [{ name: 'fn-tool', description: 'A tool' }], ...extra },
      },
    },
  })[0]!
}
const shapeOf = (extra: Record<string, unknown>): ShapeSpec => serviceWith(extra).shape

function eventOf(shape: ShapeSpec, req: ToolRequest) {
  const result = compileEventShape(shape).event(req)
  if (!result.ok) throw new Error(result.message)
  return result.event as Record<string, any>
}
const answerOf = (shape: ShapeSpec, text: string) => compileEventShape(shape).answer({ ok: true, text })

/** The test that a function's error passes through `shape`'s answer mapping as it is, in the describe of that shape. */
function leavesAnErrorOutcomeAlone(shape: ShapeSpec) {
  it('leaves an error outcome alone', () => {
    const failed = { ok: false as const, kind: 'timeout' as const, message: 'too slow' }
    expect(compileEventShape(shape).answer(failed)).toBe(failed)
  })
}

describe('trace headers', () => {
  it('go only into API Gateway events: the other shapes hand the function its event as it is', () => {
    for (const event of ['envelope', 'arguments', 'template'])
      expect(
        compileEventShape(shapeOf(event === 'template' ? { event, template: 'x' } : { event })).withTraceHeaders,
      ).toBeUndefined()
  })
})

describe('envelope (the default)', () => {
  const shape = shapeOf({})

  it('passes the request as it is, and the text back as it is', () => {
    const req = request({ topic: 'cats' }, { style: 'pun' })
    expect(shape.event).toBe('envelope')
    expect(eventOf(shape, req)).toBe(req)
    expect(answerOf(shape, '{"a":1}')).toStrictEqual({ ok: true, text: '{"a":1}' })
  })

  leavesAnErrorOutcomeAlone(shape)
})

describe('arguments', () => {
  it('passes the arguments alone; answer: json pretty-prints JSON and leaves other text alone', () => {
    const shape = shapeOf({ event: 'arguments', answer: 'json' })
    expect(eventOf(shape, request({ a: 1, b: 'two' }))).toStrictEqual({ a: 1, b: 'two' })
    expect(answerOf(shape, '{"a":1,"b":[2]}')).toStrictEqual({
      ok: true,
      text: '{\n  "a": 1,\n  "b": [\n    2\n  ]\n}',
    })
    expect(answerOf(shape, 'plain words')).toStrictEqual({ ok: true, text: 'plain words' })
  })
})

describe('template', () => {
  const template = {
    q: '{{arguments.city}}',
    days: '{{arguments.days}}',
    units: '{{config.units}}',
    who: 'asked by {{user}} about {{ arguments.city }} for {{arguments.days}} days',
    nested: { all: '{{arguments}}', missing: '{{arguments.nope}}', list: ['{{arguments.nope}}', 1] },
    fixed: true,
  }

  it('puts values in with their JSON type, text into strings, and leaves out what is missing', () => {
    const shape = shapeOf({ event: 'template', template })
    const event = eventOf(shape, request({ city: 'Oslo', days: 3 }, { units: 'metric' }))
    expect(event).toStrictEqual({
      q: 'Oslo',
      days: 3,
      units: 'metric',
      who: 'asked by alice about Oslo for 3 days',
      nested: { all: { city: 'Oslo', days: 3 }, list: [null, 1] },
      fixed: true,
    })
  })

  it('puts a value that is not a string into a longer string as its JSON text, and a missing one as nothing', () => {
    const req = request({ city: 'Oslo', days: 3, tags: ['a'], nothing: null })
    expect(
      renderTemplate(
        '{{arguments}} / {{arguments.days}} / {{arguments.tags}} / {{arguments.nothing}} / [{{arguments.nope}}]',
        req,
      ),
    ).toBe('{"city":"Oslo","days":3,"tags":["a"],"nothing":null} / 3 / ["a"] / null / []')
  })

  it('reads own properties only', () => {
    expect(renderTemplate('{{arguments.constructor}}', request({}))).toBeUndefined()
    expect(renderTemplate('x{{arguments.toString}}y', request({}))).toBe('xy')
  })

  it('refuses an unknown placeholder when serverless.yml is read, naming where it is', () => {
    expect(() => shapeOf({ event: 'template', template: { a: ['{{args.city}}'] } })).toThrow(
      'functions.fn.toolService.template.a[0]: unknown placeholder {{args.city}}',
    )
    expect(() => shapeOf({ event: 'template', template: '{{user.name}}' })).toThrow(ConfigError)
    // A known root inside a longer name, or an empty step in the path, is not a known path.
    expect(() => shapeOf({ event: 'template', template: '{{myarguments.city}}' })).toThrow(
      'unknown placeholder {{myarguments.city}}',
    )
    expect(() => shapeOf({ event: 'template', template: '{{arguments..city}}' })).toThrow(
      'unknown placeholder {{arguments..city}}',
    )
  })

  it('needs a template with event: template, and none without', () => {
    expect(() => shapeOf({ event: 'template' })).toThrow(
      'functions.fn.toolService.event: "event: template" and "template:" go together',
    )
    expect(() => shapeOf({ template: { a: 1 } })).toThrow(
      'functions.fn.toolService.template: "event: template" and "template:" go together',
    )
  })
})

describe('apigw-v2 (HTTP API)', () => {
  const get = shapeOf({ event: 'apigw-v2', route: { method: 'GET', path: '/items/{id}', query: ['lang'] } })

  it('takes the trace context among its headers, and has no multi-value ones', () => {
    const event = eventOf(get, request({ id: 'k' }))
    const traced = compileEventShape(get).withTraceHeaders!(event, { traceparent: 'tp' }) as ReturnType<typeof eventOf>
    expect(traced.headers).toStrictEqual({ ...event.headers, traceparent: 'tp' })
    expect(traced.multiValueHeaders).toBeUndefined()
    expect(traced.rawPath).toBe('/items/k')
  })
  const post = shapeOf({
    event: 'apigw-v2',
    route: { method: 'POST', path: '/orders/{id}/lines', query: ['dry'], headers: { 'X-Api-Version': '2' } },
  })

  it('builds GET: path parameters encoded, every other argument in the query string, no body', () => {
    const event = eventOf(get, request({ id: 'a b/c', lang: 'en', n: 5 }))
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/items/a%20b%2Fc',
      rawQueryString: 'lang=en&n=5',
      queryStringParameters: { lang: 'en', n: '5' },
      pathParameters: { id: 'a b/c' },
      headers: { 'x-toolbridge-user': 'alice', 'user-agent': 'toolbridge' },
      requestContext: { http: { method: 'GET', path: '/items/a%20b%2Fc', sourceIp: '127.0.0.1' }, stage: '$default' },
      isBase64Encoded: false,
    })
    expect(event).not.toHaveProperty('body')
    expect(typeof event.requestContext.requestId).toBe('string')
    expect(typeof event.requestContext.timeEpoch).toBe('number')
  })

  it('builds POST: the query arguments in the query string, the rest a JSON body; headers from route', () => {
    const event = eventOf(post, request({ id: 7, dry: true, sku: 'KB', quantity: 2 }, {}, ''))
    expect(event).toMatchObject({
      rawPath: '/orders/7/lines',
      rawQueryString: 'dry=true',
      body: '{"sku":"KB","quantity":2}',
    })
    expect(event.headers).toMatchObject({ 'content-type': 'application/json', 'x-api-version': '2' })
    expect(event.headers).not.toHaveProperty('x-toolbridge-user') // no user, no header
  })

  it('leaves an argument that is undefined out of the query string (an in-process caller may pass one)', () => {
    expect(eventOf(get, request({ id: 'x', lang: undefined, n: 1 })).rawQueryString).toBe('n=1')
  })

  it('refuses a request without a path parameter, without calling anything', () => {
    expect(compileEventShape(get).event(request({ lang: 'en' }))).toStrictEqual({
      ok: false,
      kind: 'invalid-arguments',
      message: 'invalid arguments: "id" is required (it is part of the path /items/{id})',
    })
  })

  it('maps a 2xx proxy response to its body, a base64 one decoded', () => {
    expect(answerOf(get, JSON.stringify({ statusCode: 200, body: 'hi', headers: {} }))).toStrictEqual({
      ok: true,
      text: 'hi',
    })
    expect(
      answerOf(
        get,
        JSON.stringify({ statusCode: 201, body: Buffer.from('héllo').toString('base64'), isBase64Encoded: true }),
      ),
    ).toStrictEqual({
      ok: true,
      text: 'héllo',
    })
    expect(answerOf(get, JSON.stringify({ statusCode: 204 }))).toStrictEqual({ ok: true, text: '' })
  })

  it('pretty-prints a JSON body with answer: json', () => {
    const json = shapeOf({ event: 'apigw-v2', answer: 'json' })
    expect(answerOf(json, JSON.stringify({ statusCode: 200, body: '{"a":[1]}' }))).toStrictEqual({
      ok: true,
      text: '{\n  "a": [\n    1\n  ]\n}',
    })
  })

  it('maps 4xx and 5xx to an error with the status and a bounded excerpt of the body', () => {
    expect(answerOf(get, JSON.stringify({ statusCode: 404, body: '{"error":"no item"}' }))).toStrictEqual({
      ok: false,
      kind: 'function-error',
      message: 'HTTP 404 Not Found: {"error":"no item"}',
    })
    const page = `<html>\n  <body>${'x'.repeat(10_000)}</body></html>`
    const outcome = answerOf(get, JSON.stringify({ statusCode: 502, body: page }))
    expect(outcome.ok).toBe(false)
    if (outcome.ok) return
    expect(outcome.message.startsWith('HTTP 502 Bad Gateway: <html> <body>xxx')).toBe(true)
    expect(outcome.message.endsWith('…')).toBe(true)
    expect(outcome.message.length).toBeLessThan(BODY_EXCERPT_CHARS + 40)
  })

  it('takes a result without statusCode as a 200 JSON body, as HTTP APIs do', () => {
    expect(answerOf(get, '{"answer":42}')).toStrictEqual({ ok: true, text: '{"answer":42}' })
    expect(answerOf(get, 'just text')).toStrictEqual({ ok: true, text: 'just text' })
  })

  it('is accepted by serverless-http: an Express app sees the method, path, query, body and headers', async () => {
    const app = express()
    app.use(express.json())
    app.all('/{*rest}', (req, res) => {
      res.json({
        method: req.method,
        path: req.path,
        query: req.query,
        body: req.body,
        user: req.get('x-toolbridge-user'),
      })
    })
    const handler = serverless(app)
    const getAnswer = answerOf(get, JSON.stringify(await handler(eventOf(get, request({ id: 'x1', lang: 'de' })), {})))
    expect(getAnswer.ok && JSON.parse(getAnswer.text)).toMatchObject({
      method: 'GET',
      path: '/items/x1',
      query: { lang: 'de' },
      user: 'alice',
    })
    const postAnswer = answerOf(post, JSON.stringify(await handler(eventOf(post, request({ id: 3, sku: 'KB' })), {})))
    expect(postAnswer.ok && JSON.parse(postAnswer.text)).toMatchObject({
      method: 'POST',
      path: '/orders/3/lines',
      body: { sku: 'KB' },
    })
  })
})

describe('apigw-v1 (REST API)', () => {
  const shape = shapeOf({ event: 'apigw-v1', route: { method: 'DELETE', path: '/items/{id}' } })

  it('takes the trace context among its headers, single and multi-value, the rest kept', () => {
    const event = eventOf(shape, request({ id: 'k' }))
    const traced = compileEventShape(shape).withTraceHeaders!(event, {
      traceparent: 'tp',
      tracestate: 'ts',
    }) as ReturnType<typeof eventOf>
    expect(traced.headers).toStrictEqual({ ...event.headers, traceparent: 'tp', tracestate: 'ts' })
    expect(traced.multiValueHeaders).toStrictEqual({
      ...event.multiValueHeaders,
      traceparent: ['tp'],
      tracestate: ['ts'],
    })
    expect(traced.path).toBe('/items/k')
    expect(event.headers.traceparent).toBeUndefined() // the original is left as it was
  })

  it('builds a REST API event: httpMethod, resource, multi-value maps, null for what is absent', () => {
    const event = eventOf(shape, request({ id: 'k', force: true }))
    expect(event).toMatchObject({
      resource: '/items/{id}',
      path: '/items/k',
      httpMethod: 'DELETE',
      queryStringParameters: { force: 'true' },
      multiValueQueryStringParameters: { force: ['true'] },
      pathParameters: { id: 'k' },
      stageVariables: null,
      body: null,
      requestContext: { httpMethod: 'DELETE', resourcePath: '/items/{id}', identity: { sourceIp: '127.0.0.1' } },
    })
    expect(event.multiValueHeaders['x-toolbridge-user']).toStrictEqual(['alice'])
  })

  it('is accepted by serverless-http', async () => {
    const app = express()
    app.delete(
      '/items/:id',
      (req, res) => void res.status(202).send(`deleted ${req.params.id} force=${String(req.query.force)}`),
    )
    const result = await serverless(app)(eventOf(shape, request({ id: 'k', force: true })), {})
    expect(answerOf(shape, JSON.stringify(result))).toStrictEqual({ ok: true, text: 'deleted k force=true' })
  })

  it('refuses a result that is not a proxy response, as REST APIs do', () => {
    expect(answerOf(shape, '{"answer":42}')).toMatchObject({
      ok: false,
      kind: 'function-error',
      message: expect.stringMatching(/did not return a proxy response/),
    })
  })
})

describe('API Gateway events: path parameters', () => {
  const v2 = shapeOf({ event: 'apigw-v2', route: { method: 'GET', path: '/items/{id}/{part}' } })
  const refusal = (name: string) => ({
    ok: false,
    kind: 'invalid-arguments',
    message: `invalid arguments: "${name}" is required (it is part of the path /items/{id}/{part})`,
  })

  it('refuses one sent as null or as the empty string: the function is never called on /items/', () => {
    expect(compileEventShape(v2).event(request({ id: null, part: 'a' }))).toStrictEqual(refusal('id'))
    expect(compileEventShape(v2).event(request({ id: 'x', part: '' }))).toStrictEqual(refusal('part'))
    // The first one missing is named.
    expect(compileEventShape(v2).event(request({}))).toStrictEqual(refusal('id'))
  })

  it('reads own arguments only', () => {
    const inherited = Object.create({ id: 'from-the-prototype' }) as Record<string, unknown>
    inherited.part = 'a'
    expect(compileEventShape(v2).event(request(inherited))).toStrictEqual(refusal('id'))
  })

  it('takes any other value as its text: 0, false, a number, JSON for an object', () => {
    const event = eventOf(v2, request({ id: 0, part: false }))
    expect(event.rawPath).toBe('/items/0/false')
    expect(event.pathParameters).toStrictEqual({ id: '0', part: 'false' })
    const nested = eventOf(v2, request({ id: { a: 1 }, part: 'é/?' }))
    expect(nested.rawPath).toBe('/items/%7B%22a%22%3A1%7D/%C3%A9%2F%3F')
    expect(nested.pathParameters).toStrictEqual({ id: '{"a":1}', part: 'é/?' })
  })
})

describe('API Gateway events: what is absent', () => {
  const v1 = shapeOf({ event: 'apigw-v1', route: { method: 'POST', path: '/orders' } })
  const v2 = shapeOf({ event: 'apigw-v2', route: { method: 'POST', path: '/orders' } })

  it('REST API (v1): null for no query and no path parameters, the body a JSON object', () => {
    const event = eventOf(v1, request({ sku: 'KB', quantity: 2 }, {}, ''))
    expect(event).toStrictEqual({
      resource: '/orders',
      path: '/orders',
      httpMethod: 'POST',
      headers: {
        host: 'toolbridge.execute-api.localhost',
        'user-agent': 'toolbridge',
        'content-type': 'application/json',
      },
      multiValueHeaders: {
        host: ['toolbridge.execute-api.localhost'],
        'user-agent': ['toolbridge'],
        'content-type': ['application/json'],
      },
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      pathParameters: null,
      stageVariables: null,
      requestContext: {
        accountId: 'anonymous',
        apiId: 'toolbridge',
        domainName: 'toolbridge.execute-api.localhost',
        httpMethod: 'POST',
        identity: { sourceIp: '127.0.0.1', userAgent: 'toolbridge' },
        path: '/orders',
        protocol: 'HTTP/1.1',
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        requestTimeEpoch: expect.any(Number),
        resourcePath: '/orders',
        stage: '$default',
      },
      body: '{"sku":"KB","quantity":2}',
      isBase64Encoded: false,
    })
  })

  it('REST API (v1): an empty JSON object for a body with no arguments left for it', () => {
    expect(eventOf(v1, request({})).body).toBe('{}')
  })

  it('HTTP API (v2): no queryStringParameters or pathParameters at all, an empty rawQueryString', () => {
    const event = eventOf(v2, request({ sku: 'KB' }, {}, ''))
    expect(event).toStrictEqual({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/orders',
      rawQueryString: '',
      headers: {
        host: 'toolbridge.execute-api.localhost',
        'user-agent': 'toolbridge',
        'content-type': 'application/json',
      },
      requestContext: {
        accountId: 'anonymous',
        apiId: 'toolbridge',
        domainName: 'toolbridge.execute-api.localhost',
        domainPrefix: 'toolbridge',
        http: { method: 'POST', path: '/orders', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'toolbridge' },
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        routeKey: '$default',
        stage: '$default',
        time: expect.stringMatching(/GMT$/),
        timeEpoch: expect.any(Number),
      },
      body: '{"sku":"KB"}',
      isBase64Encoded: false,
    })
  })

  it('REST API (v1) GET: every argument in both query maps, no body', () => {
    const get = shapeOf({
      event: 'apigw-v1',
      route: { method: 'GET', path: '/search', headers: { 'Content-Type': 'text/plain' } },
    })
    const event = eventOf(get, request({ q: 'cats', tags: ['a', 'b'], n: 2 }))
    expect(event.queryStringParameters).toStrictEqual({ q: 'cats', tags: '["a","b"]', n: '2' })
    expect(event.multiValueQueryStringParameters).toStrictEqual({ q: ['cats'], tags: ['["a","b"]'], n: ['2'] })
    expect(event.path).toBe('/search')
    expect(event.body).toBeNull()
    // A route's own Content-Type stays, written in lower case as API Gateway's headers are.
    expect(event.headers['content-type']).toBe('text/plain')
    expect(event.headers).not.toHaveProperty('Content-Type')
  })

  it('a route header of its own keeps its value over the JSON content type of a body', () => {
    const post = shapeOf({
      event: 'apigw-v2',
      route: { method: 'PUT', path: '/x', headers: { 'content-type': 'application/vnd.api+json' } },
    })
    expect(eventOf(post, request({ a: 1 })).headers['content-type']).toBe('application/vnd.api+json')
  })
})

describe('API Gateway proxy results', () => {
  const v1 = shapeOf({ event: 'apigw-v1' })
  const v2 = shapeOf({ event: 'apigw-v2' })

  it('a body that is not a string is its JSON text; a null or absent one is empty', () => {
    for (const shape of [v1, v2]) {
      expect(answerOf(shape, JSON.stringify({ statusCode: 200, body: { a: [1] } }))).toStrictEqual({
        ok: true,
        text: '{"a":[1]}',
      })
      expect(answerOf(shape, JSON.stringify({ statusCode: 200, body: 42 }))).toStrictEqual({ ok: true, text: '42' })
      expect(answerOf(shape, JSON.stringify({ statusCode: 200, body: false }))).toStrictEqual({
        ok: true,
        text: 'false',
      })
      expect(answerOf(shape, JSON.stringify({ statusCode: 200, body: null }))).toStrictEqual({ ok: true, text: '' })
      expect(answerOf(shape, JSON.stringify({ statusCode: 200 }))).toStrictEqual({ ok: true, text: '' })
    }
  })

  it('a non-string body of an error status is in the error message', () => {
    expect(answerOf(v1, JSON.stringify({ statusCode: 400, body: { error: 'bad sku' } }))).toStrictEqual({
      ok: false,
      kind: 'function-error',
      message: 'HTTP 400 Bad Request: {"error":"bad sku"}',
    })
    expect(answerOf(v1, JSON.stringify({ statusCode: 500 }))).toStrictEqual({
      ok: false,
      kind: 'function-error',
      message: 'HTTP 500 Internal Server Error',
    })
    expect(answerOf(v2, JSON.stringify({ statusCode: 199, body: 'early' }))).toMatchObject({
      ok: false,
      message: 'HTTP 199 Unknown Status: early',
    })
    expect(answerOf(v2, JSON.stringify({ statusCode: 300, body: 'moved' }))).toMatchObject({
      ok: false,
      message: 'HTTP 300 Multiple Choices: moved',
    })
    expect(answerOf(v2, JSON.stringify({ statusCode: 299, body: 'ok' }))).toStrictEqual({ ok: true, text: 'ok' })
  })

  it('decodes base64 only when isBase64Encoded is exactly true', () => {
    const encoded = Buffer.from('hello').toString('base64')
    expect(answerOf(v1, JSON.stringify({ statusCode: 200, body: encoded, isBase64Encoded: true }))).toStrictEqual({
      ok: true,
      text: 'hello',
    })
    expect(answerOf(v1, JSON.stringify({ statusCode: 200, body: encoded, isBase64Encoded: 'true' }))).toStrictEqual({
      ok: true,
      text: encoded,
    })
  })

  it('a statusCode that is not a number is no proxy response: the REST API refuses it, the HTTP API takes the whole result as the body', () => {
    const result = JSON.stringify({ statusCode: '200', body: 'x' })
    expect(answerOf(v1, result)).toStrictEqual({
      ok: false,
      kind: 'function-error',
      message:
        'the function did not return a proxy response ({statusCode, body}), as an API Gateway REST API (apigw-v1) needs',
    })
    expect(answerOf(v2, result)).toStrictEqual({ ok: true, text: result })
    for (const notAnObject of ['[1,2]', '7', '"text"', 'null', 'not json']) {
      expect(answerOf(v2, notAnObject)).toStrictEqual({ ok: true, text: notAnObject })
      expect(answerOf(v1, notAnObject)).toMatchObject({ ok: false, kind: 'function-error' })
    }
  })

  it('answer: json pretty-prints the body of a REST API response and a bare HTTP API result alike', () => {
    const json = shapeOf({ event: 'apigw-v1', answer: 'json' })
    expect(answerOf(json, JSON.stringify({ statusCode: 200, body: { a: 1 } }))).toStrictEqual({
      ok: true,
      text: '{\n  "a": 1\n}',
    })
    const json2 = shapeOf({ event: 'apigw-v2', answer: 'json' })
    expect(answerOf(json2, '{"b":2}')).toStrictEqual({ ok: true, text: '{\n  "b": 2\n}' })
    expect(answerOf(json2, 'plain')).toStrictEqual({ ok: true, text: 'plain' })
  })

  leavesAnErrorOutcomeAlone(v1)
})

describe('serverless.yml checks for shapes', () => {
  it('refuses route: without an API Gateway event, and stream with one', () => {
    expect(() => shapeOf({ route: { path: '/x' } })).toThrow(
      'functions.fn.toolService.route: is for "event: apigw-v1" or "event: apigw-v2"',
    )
    expect(() => shapeOf({ event: 'apigw-v2', response: 'stream' })).toThrow(
      /response: "stream" does not fit "event: apigw-v2"/,
    )
  })

  it('refuses an unknown shape or answer format', () => {
    expect(() => shapeOf({ event: 'sqs' })).toThrow(
      'functions.fn.toolService.event: must be one of "envelope", "arguments", "apigw-v1", "apigw-v2", "template"',
    )
    expect(() => shapeOf({ answer: 'yaml' })).toThrow(/answer: must be one of "text", "json"/)
  })

  it('defaults a route to POST /', () => {
    expect(shapeOf({ event: 'apigw-v2' }).route).toStrictEqual({ method: 'POST', path: '/', query: [], headers: {} })
  })
})

describe('bodyExcerpt', () => {
  it('keeps a short body whole, on one line', () => {
    expect(bodyExcerpt('  a\n\tb  ')).toBe('a b')
  })

  it('never cuts a character in half', () => {
    const excerpt = bodyExcerpt('😀'.repeat(BODY_EXCERPT_CHARS + 5))
    expect(Array.from(excerpt)).toHaveLength(BODY_EXCERPT_CHARS + 1)
    expect(excerpt.endsWith('😀…')).toBe(true)
  })
})

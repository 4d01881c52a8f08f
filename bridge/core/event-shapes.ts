/**
 * Event shapes: what a function receives for a request, and how what it
 * returns becomes the answer, so that functions not written for toolbridge
 * serve as tools unchanged (`toolService.event:` in serverless.yml).
 *
 * - `envelope` (default): `{user, config, arguments}`, config and arguments
 *   decoded to objects (docs/wire-contract.md#request-toolservicerequest).
 * - `arguments`: the arguments object alone.
 * - `template`: a JSON template with `{{arguments.x}}`, `{{config.y}}`,
 *   `{{user}}` placeholders. A string that is one placeholder becomes the
 *   value with its JSON type, and a field whose value is missing is left
 *   out; a placeholder inside a longer string is replaced by its text.
 * - `apigw-v1`, `apigw-v2`: an API Gateway proxy event (REST API, HTTP API),
 *   the request built from the arguments by `route:` (method, path with
 *   `{name}` parameters, query); `requestContext` is filled as API Gateway
 *   fills it, enough for serverless-http and @codegenie/serverless-express.
 *   The proxy response maps back: 2xx → its body is the answer; any other
 *   status → an error answer with the status and an excerpt of the body.
 *   An HTTP API (v2) also accepts a result without `statusCode` as a 200
 *   JSON body, as API Gateway does; a REST API (v1) does not.
 *
 * `answer: json` pretty-prints a body that is JSON (any other body stays
 * text). Streamed chunks pass through as they come: only the final result
 * is mapped. The invokers know nothing of this: the bridge maps the event
 * before invoking and the outcome after.
 */
import { randomUUID } from 'node:crypto'
import type { RouteSpec, ShapeSpec } from '../project/tool-services.ts'
import { isRecord, type Refusal } from '../../shared/errors.ts'
import type { ToolRequest } from '../../shared/protocol.ts'
import { TEMPLATE_PATH, TEMPLATE_PLACEHOLDER, type AnswerFormat } from '../../shared/tool-service-schema.ts'
import { httpStatusOutcome, isSuccess } from '../invokers/http-status-outcome.ts'
import type { Outcome } from '../invokers/invoker.ts'

export type EventResult = { ok: true; event: unknown } | Refusal

export interface EventMapping {
  /** The event the function is invoked with. */
  event(request: ToolRequest): EventResult
  /** The function's outcome as the tool's answer. */
  answer(outcome: Outcome): Outcome
  /**
   * API Gateway events only: the event with the invocation's trace context
   * (traceparent, ...) among its headers, where a traced caller's would be.
   */
  withTraceHeaders?(event: unknown, headers: Readonly<Record<string, string>>): unknown
}

export function compileEventShape(shape: ShapeSpec): EventMapping {
  const format = (outcome: Outcome): Outcome =>
    outcome.ok ? { ok: true, text: formatAnswer(outcome.text, shape.answer) } : outcome
  switch (shape.event) {
    case 'envelope':
      return { event: (request) => ({ ok: true, event: request }), answer: format }
    case 'arguments':
      return { event: (request) => ({ ok: true, event: request.arguments }), answer: format }
    case 'template':
      return { event: (request) => ({ ok: true, event: renderTemplate(shape.template, request) }), answer: format }
    case 'apigw-v1':
    case 'apigw-v2': {
      const version = shape.event
      const route = shape.route!
      return {
        event(request) {
          const http = httpRequest(route, request)
          if (!http.ok) return http
          return {
            ok: true,
            event: version === 'apigw-v2' ? apigwV2Event(http.value) : apigwV1Event(route, http.value),
          }
        },
        answer: (outcome) => (outcome.ok ? proxyAnswer(version, outcome.text, shape.answer) : outcome),
        withTraceHeaders: (event, headers) => withHeaders(version, event as ProxyEvent, headers),
      }
    }
  }
}

export function formatAnswer(text: string, format: AnswerFormat): string {
  if (format === 'text') return text
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text // not JSON: the text as it is
  }
}

// ---- template ----

/** A path's value in the request, or undefined; own properties only. */
function lookup(request: ToolRequest, name: string): unknown {
  const [, root, rest] = TEMPLATE_PATH.exec(name)!
  let value: unknown = request[root as keyof ToolRequest]
  for (const key of rest!.split('.').slice(1)) {
    if (!isRecord(value) || !Object.hasOwn(value, key)) return undefined
    value = value[key]
  }
  return value
}

const WHOLE_PLACEHOLDER = new RegExp(`^${TEMPLATE_PLACEHOLDER.source}$`)
const asText = (value: unknown) =>
  value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)

/** Fills a template (checked when serverless.yml was read: every placeholder names a known path). */
export function renderTemplate(template: unknown, request: ToolRequest): unknown {
  if (typeof template === 'string') {
    const whole = WHOLE_PLACEHOLDER.exec(template)
    if (whole) return lookup(request, whole[1]!)
    return template.replace(TEMPLATE_PLACEHOLDER, (_, name: string) => asText(lookup(request, name)))
  }
  if (Array.isArray(template)) return template.map((item) => renderTemplate(item, request) ?? null)
  if (isRecord(template)) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(template)) {
      const value = renderTemplate(item, request)
      if (value !== undefined) out[key] = value
    }
    return out
  }
  return template
}

// ---- API Gateway ----

interface HttpRequest {
  method: string
  path: string
  /** Path parameters, decoded. */
  pathParameters: Record<string, string>
  query: URLSearchParams
  headers: Record<string, string>
  body: string | undefined
}

const PATH_PARAMETER = /\{([^{}]+)\}/g
/** What API Gateway puts in a query string or path: a string as it is, anything else as JSON. */
const paramText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value))

/**
 * The HTTP request of `route` for these arguments: `{name}` in the path and
 * the `query` arguments from the arguments; the others as a JSON body, or
 * for GET and DELETE in the query string too.
 */
function httpRequest(route: RouteSpec, request: ToolRequest): { ok: true; value: HttpRequest } | Refusal {
  const args = request.arguments
  const used = new Set<string>()
  const pathParameters: Record<string, string> = {}
  let missing: string | undefined
  const path = route.path.replace(PATH_PARAMETER, (_, name: string) => {
    used.add(name)
    const value = Object.hasOwn(args, name) ? args[name] : undefined
    if (value === undefined || value === null || value === '') missing ??= name
    pathParameters[name] = paramText(value ?? '')
    return encodeURIComponent(pathParameters[name])
  })
  if (missing !== undefined)
    return {
      ok: false,
      kind: 'invalid-arguments',
      message: `invalid arguments: "${missing}" is required (it is part of the path ${route.path})`,
    }
  const withoutBody = route.method === 'GET' || route.method === 'DELETE'
  const query = new URLSearchParams()
  const rest: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(args)) {
    if (used.has(name) || value === undefined) continue
    if (withoutBody || route.query.includes(name)) query.append(name, paramText(value))
    else rest[name] = value
  }
  const headers: Record<string, string> = { 'user-agent': 'toolbridge', ...lowerCaseKeys(route.headers) }
  let body: string | undefined
  if (!withoutBody) {
    body = JSON.stringify(rest)
    headers['content-type'] ??= 'application/json'
  }
  if (request.user) headers['x-toolbridge-user'] = request.user
  return { ok: true, value: { method: route.method, path, pathParameters, query, headers, body } }
}

const lowerCaseKeys = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))

const HOST = 'toolbridge.execute-api.localhost'
const STAGE = '$default'

/** Query parameters as API Gateway gives them: single values (the last one wins) and lists; null when none. */
function queryMaps(query: URLSearchParams) {
  if (query.size === 0) return { single: null, multi: null }
  const single: Record<string, string> = {}
  const multi: Record<string, string[]> = {}
  for (const [key, value] of query) {
    single[key] = value
    ;(multi[key] ??= []).push(value)
  }
  return { single, multi }
}

/** An HTTP API (payload format 2.0) event. */
function apigwV2Event(http: HttpRequest) {
  const now = Date.now()
  const { single } = queryMaps(http.query)
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: http.path,
    rawQueryString: http.query.toString(),
    headers: { host: HOST, ...http.headers },
    ...(single ? { queryStringParameters: single } : {}),
    ...(Object.keys(http.pathParameters).length > 0 ? { pathParameters: http.pathParameters } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'toolbridge',
      domainName: HOST,
      domainPrefix: 'toolbridge',
      http: {
        method: http.method,
        path: http.path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'toolbridge',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: STAGE,
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    ...(http.body !== undefined ? { body: http.body } : {}),
    isBase64Encoded: false,
  }
}

/** A REST API (payload format 1.0) event. */
function apigwV1Event(route: RouteSpec, http: HttpRequest) {
  const now = Date.now()
  const { single, multi } = queryMaps(http.query)
  const headers = { host: HOST, ...http.headers }
  return {
    resource: route.path,
    path: http.path,
    httpMethod: http.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: single,
    multiValueQueryStringParameters: multi,
    pathParameters: Object.keys(http.pathParameters).length > 0 ? http.pathParameters : null,
    stageVariables: null,
    requestContext: {
      accountId: 'anonymous',
      apiId: 'toolbridge',
      domainName: HOST,
      httpMethod: http.method,
      identity: { sourceIp: '127.0.0.1', userAgent: 'toolbridge' },
      path: http.path,
      protocol: 'HTTP/1.1',
      requestId: randomUUID(),
      requestTimeEpoch: now,
      resourcePath: route.path,
      stage: STAGE,
    },
    body: http.body ?? null,
    isBase64Encoded: false,
  }
}

interface ProxyEvent {
  headers: Record<string, string>
  multiValueHeaders?: Record<string, string[]>
}

function withHeaders(
  version: 'apigw-v1' | 'apigw-v2',
  event: ProxyEvent,
  headers: Readonly<Record<string, string>>,
): ProxyEvent {
  const added = { ...event, headers: { ...event.headers, ...headers } }
  if (version === 'apigw-v2') return added
  const multi = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]))
  return { ...added, multiValueHeaders: { ...event.multiValueHeaders, ...multi } }
}

/** A proxy response (the function's result as text) -> the answer. */
export function proxyAnswer(version: 'apigw-v1' | 'apigw-v2', text: string, format: AnswerFormat): Outcome {
  let result: unknown
  try {
    result = JSON.parse(text)
  } catch {
    result = undefined // a plain string result
  }
  if (!isRecord(result) || typeof result.statusCode !== 'number') {
    // HTTP APIs take a result without statusCode as a 200 with that JSON as the body; REST APIs answer 502.
    if (version === 'apigw-v2') return { ok: true, text: formatAnswer(text, format) }
    return {
      ok: false,
      kind: 'function-error',
      message:
        'the function did not return a proxy response ({statusCode, body}), as an API Gateway REST API (apigw-v1) needs',
    }
  }
  let body =
    typeof result.body === 'string'
      ? result.body
      : result.body === undefined || result.body === null
        ? ''
        : JSON.stringify(result.body)
  if (result.isBase64Encoded === true) body = Buffer.from(body, 'base64').toString('utf8')
  if (!isSuccess(result.statusCode)) return httpStatusOutcome(result.statusCode, body)
  return { ok: true, text: formatAnswer(body, format) }
}

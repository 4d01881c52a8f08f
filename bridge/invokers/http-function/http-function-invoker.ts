/**
 * Calls functions over HTTP (`custom.toolServices.<key>.url`), for functions
 * on any platform: OpenFaaS, Knative, Cloud Run, Azure Functions, a plain
 * server. Node's own fetch (undici) does the HTTP.
 *
 * - The event (the envelope, or what the event shape made of it) is the
 *   JSON body of a POST (or the declared method); for GET and DELETE its
 *   fields go in the query string instead.
 * - Headers: fixed ones from serverless.yml, secret ones from environment
 *   variables named there (`headersFromEnv`), read once at start.
 * - A 2xx body is the answer. Any other status is an error answer with the
 *   status and an excerpt of the body (http-status-outcome.ts).
 * - 429 and 503 are retried, waiting at least what `Retry-After` asks, as
 *   long as the function's timeout allows; a refused connection (nothing ran)
 *   is retried too. Nothing else is, so a POST never runs twice because of
 *   the bridge. Nothing is retried once a chunk has gone out.
 * - `stream` services: a `text/event-stream` answer is handed on event by
 *   event (the `data` of each; an `event: error` ends the call with its data
 *   as the error), any other answer chunk by chunk as it arrives. A stream
 *   cut short ends with an error after the chunks already sent. In `single`
 *   mode an event stream's data is joined into one answer.
 * - The function's timeout bounds the whole call, retries and stream included.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import type { HttpLocation } from '../../project/tool-services.ts'
import { isRecord, isToolbridgeError, messageOf, type Refusal, ToolbridgeError } from '../../../shared/errors.ts'
import { httpStatusOutcome, isSuccess } from '../http-status-outcome.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { createRetry, RetryableAttempt, type Retrier, type RetryOptions } from '../../support/retry.ts'
import type { FunctionTarget, Invocation, Invoker, Outcome } from '../invoker.ts'

export const DEFAULT_HTTP_RETRIES = 3

export interface HttpInvokerOptions {
  /** Where `headersFromEnv` are read from. */
  env: Record<string, string | undefined>
  /** Retries after a 429, a 503 or a refused connection, within the function's timeout. */
  retries?: number
  /** The backoff when no Retry-After says otherwise (bridge/support/retry.ts). */
  retry?: Omit<RetryOptions, 'retries'>
  logger?: Logger
}

/** An HTTP function's headers once the environment is read. */
interface HttpHeaders {
  /** Every header to send, secrets included. */
  allHeaders: Record<string, string>
  /** Why it cannot be called (a header's environment variable is not set), if so. */
  problem: string | undefined
}

/** `Retry-After: 120` or an HTTP date -> milliseconds from now; 0 when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  if (header === null || header.trim() === '') return 0
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? 0 : Math.max(0, date - now)
}

/** A query-string value: a string as it is, anything else as JSON. */
const paramText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value))

/** Why fetch() failed, from its `cause` (fetch says only "fetch failed"). */
function networkReason(error: unknown): { code: string | undefined; message: string } {
  const cause = error instanceof Error && isRecord(error.cause) ? error.cause : undefined
  const code = typeof cause?.code === 'string' ? cause.code : undefined
  const message =
    cause && typeof cause.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error)
  return { code, message }
}

export class HttpInvoker implements Invoker<HttpLocation> {
  /** Each function's headers, its environment variables read once. */
  private readonly headers = new WeakMap<HttpLocation, HttpHeaders>()
  private readonly env: Record<string, string | undefined>
  private readonly retry: Retrier
  private readonly logger: Logger
  private readonly inFlight = new Set<AbortController>()

  constructor(options: HttpInvokerOptions) {
    this.env = options.env
    this.retry = createRetry({ ...options.retry, retries: options.retries ?? DEFAULT_HTTP_RETRIES })
    this.logger = options.logger ?? silentLogger
  }

  private headersFor(fn: HttpLocation): HttpHeaders {
    let headers = this.headers.get(fn)
    if (!headers) {
      const allHeaders: Record<string, string> = { 'user-agent': 'toolbridge', ...fn.headers }
      const unset: string[] = []
      for (const [header, variable] of Object.entries(fn.headersFromEnv)) {
        const value = this.env[variable]
        if (value === undefined || value === '') unset.push(`${variable} (for header ${header})`)
        else allHeaders[header] = value
      }
      const problem =
        unset.length > 0 ? `environment variable${unset.length > 1 ? 's' : ''} ${unset.join(', ')} not set` : undefined
      headers = { allHeaders, problem }
      this.headers.set(fn, headers)
    }
    return headers
  }

  /** Checks the configuration only: calling a function to see if it is there could run it. */
  async prepare(target: FunctionTarget<HttpLocation>): Promise<string | undefined> {
    return this.headersFor(target.location).problem
  }

  async invoke({ target, event, onChunk, trace }: Invocation<HttpLocation>): Promise<Outcome> {
    const fn = target.location
    const { allHeaders, problem } = this.headersFor(fn)
    if (problem) return { ok: false, kind: 'unavailable', message: `cannot call ${fn.url}: ${problem}` }
    // The function sees the invocation span as its parent, as any traced HTTP server would.
    const request = this.requestFor(fn, trace === undefined ? allHeaders : { ...allHeaders, ...trace.headers }, event)
    if (!request.ok) return request
    const controller = new AbortController()
    this.inFlight.add(controller)
    const deadline = Date.now() + target.timeoutMs
    const timer = setTimeout(() => controller.abort('timeout'), target.timeoutMs)
    let sentChunks = 0
    const forward = (text: string) => {
      sentChunks++
      onChunk(text)
    }
    const what = `${fn.method} ${fn.url}`
    try {
      return await this.retry(
        async (bail) => {
          let response: Response
          try {
            response = await fetch(request.url, {
              method: fn.method,
              headers: request.headers,
              body: request.body,
              signal: controller.signal,
            })
          } catch (error) {
            if (controller.signal.aborted) return bail(error) // reported below
            const { code, message } = networkReason(error)
            // Refused: the request never reached the function, so trying again cannot run it twice.
            if (code === 'ECONNREFUSED') throw new RetryableAttempt(`${what}: ${message}`)
            return bail(new ToolbridgeError('unavailable', `${what}: ${message}`, { cause: error }))
          }
          if (response.status === 429 || response.status === 503) {
            const waitMs = retryAfterMs(response.headers.get('retry-after'))
            const body = await response.text().catch(() => '')
            const failed = httpStatusOutcome(response.status, body)
            const message = `${what}: ${failed.ok ? '' : failed.message}`
            if (Date.now() + waitMs >= deadline) {
              return bail(
                new ToolbridgeError(
                  'unavailable',
                  `${message} (Retry-After ${Math.ceil(waitMs / 1000)} s is past the function's timeout)`,
                ),
              )
            }
            throw new RetryableAttempt(message, { retryAfterMs: waitMs })
          }
          if (!isSuccess(response.status)) return httpStatusOutcome(response.status, await response.text())
          return await this.read(response, target.response === 'stream', forward)
        },
        {
          signal: controller.signal,
          onRetry: (error, retryCount, waitMs) =>
            this.logger.warn(
              { fn: target.functionName, retry: retryCount + 1, inMs: waitMs, err: messageOf(error) },
              'HTTP call failed; retrying',
            ),
        },
      )
    } catch (error) {
      if (controller.signal.aborted) {
        if (controller.signal.reason === 'closing')
          return { ok: false, kind: 'unavailable', message: `the call to ${what} was cut short: the bridge is closing` }
        const after = sentChunks > 0 ? ` (after ${sentChunks} chunk${sentChunks > 1 ? 's' : ''})` : ''
        return {
          ok: false,
          kind: 'timeout',
          message: `function "${target.functionName}" (${what}) timed out after ${target.timeoutMs} ms${after}`,
        }
      }
      if (sentChunks > 0) {
        const { message } = networkReason(error)
        return {
          ok: false,
          kind: 'unavailable',
          message: `the response stream of ${what} broke off after ${sentChunks} chunk${sentChunks > 1 ? 's' : ''}: ${message}`,
        }
      }
      if (isToolbridgeError(error)) return { ok: false, kind: error.kind, message: error.message }
      return { ok: false, kind: 'unavailable', message: `${what}: ${networkReason(error).message}` }
    } finally {
      clearTimeout(timer)
      this.inFlight.delete(controller)
    }
  }

  /** The URL, headers and body for an event. */
  private requestFor(
    fn: HttpLocation,
    allHeaders: Record<string, string>,
    event: unknown,
  ): { ok: true; url: URL; headers: Record<string, string>; body: string | undefined } | Refusal {
    const url = new URL(fn.url)
    if (fn.method === 'GET' || fn.method === 'DELETE') {
      if (!isRecord(event))
        return {
          ok: false,
          kind: 'bad-request',
          message: `a ${fn.method} function takes its event in the query string: the event must be an object`,
        }
      for (const [key, value] of Object.entries(event))
        if (value !== undefined) url.searchParams.append(key, paramText(value))
      return { ok: true, url, headers: allHeaders, body: undefined }
    }
    return {
      ok: true,
      url,
      headers: { 'content-type': 'application/json', ...allHeaders },
      body: JSON.stringify(event),
    }
  }

  /** A 2xx body: whole, or chunk by chunk / event by event in stream mode. */
  private async read(response: Response, streaming: boolean, onChunk: (text: string) => void): Promise<Outcome> {
    const eventStream = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream')
    if (!eventStream && !streaming) return { ok: true, text: await response.text() }
    if (!response.body) return { ok: true, text: '' }
    const decoder = new TextDecoder()
    if (!eventStream) {
      for await (const bytes of response.body) {
        const text = decoder.decode(bytes, { stream: true }) // a character may straddle two chunks
        if (text !== '') onChunk(text)
      }
      const rest = decoder.decode()
      if (rest !== '') onChunk(rest)
      return { ok: true, text: '' }
    }
    const joined: string[] = []
    let failure: string | undefined
    const parser = createParser({
      onEvent(message: EventSourceMessage) {
        if (failure !== undefined) return
        if (message.event === 'error') failure = message.data || 'the function sent an error event'
        else if (message.data === '') return
        else if (streaming) onChunk(message.data)
        else joined.push(message.data)
      },
    })
    for await (const bytes of response.body) {
      parser.feed(decoder.decode(bytes, { stream: true }))
      if (failure !== undefined) break
    }
    if (failure !== undefined) return { ok: false, kind: 'function-error', message: failure }
    return { ok: true, text: joined.join('') }
  }

  async close(): Promise<void> {
    for (const controller of this.inFlight) controller.abort('closing')
  }
}

/**
 * Calls functions on AWS Lambda, or on anything that speaks its Invoke API
 * (serverless-offline: `--lambda-endpoint http://localhost:3002`), with
 * @aws-sdk/client-lambda.
 *
 * - `single` services: `Invoke` (RequestResponse). The payload is the
 *   function's result as JSON: a JSON string is that text, any other value
 *   its JSON text (docs/wire-contract.md#response-toolserviceresponse).
 * - `stream` services: `InvokeWithResponseStream`; each `PayloadChunk` is
 *   handed on as it arrives, and `InvokeComplete` with an `ErrorCode` ends
 *   the stream with an error. The function must stream (`lambdaStreaming()`
 *   in shared/handler.ts). An endpoint without that API (serverless-offline
 *   answers 404) is called with `Invoke` from then on, the answer in one piece.
 * - A function's error (`FunctionError`, `ErrorCode`) becomes an error
 *   response with its type and message; its stack trace stays in Lambda's logs.
 * - Throttling (429) and Lambda's 5xx are retried with backoff, at least as
 *   long as `Retry-After` asks, for up to `retryWindowMs`; network errors a
 *   few times. Then the request gets an error response: nothing is left
 *   unanswered. The SDK's own retries are off, so bridge/support/retry.ts is the only
 *   retrier. Nothing is retried once a chunk has gone out.
 * - A request over Lambda's 6 MB synchronous limit is refused without a call.
 * - Each call is bounded by the function's timeout (an AbortSignal on the
 *   SDK call, the stream included).
 *
 * A retry after a network error or a 5xx may run the function twice, as the
 * SDK's own retries would: Lambda offers no idempotency key for Invoke.
 */
import {
  InvokeCommand,
  InvokeWithResponseStreamCommand,
  LambdaClient,
  type LambdaClientConfig,
} from '@aws-sdk/client-lambda'
import { isRecord, isToolbridgeError, messageOf, ToolbridgeError } from '../../../shared/errors.ts'
import { resultText } from '../../../shared/protocol.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import { createRetry, RetryableAttempt, type Retrier, type RetryOptions } from '../../support/retry.ts'
import type { FunctionLocation } from '../../project/tool-services.ts'
import {
  functionError,
  type FunctionTarget,
  type Invocation,
  type InvocationTrace,
  type Invoker,
  type Outcome,
} from '../invoker.ts'
import { lambdaClientContext } from './lambda-client-context.ts'

/** Lambda's limit on a synchronous invocation's request payload (and on a buffered response): 6 MB. */
export const LAMBDA_MAX_REQUEST_BYTES = 6 * 1024 * 1024

export const DEFAULT_LAMBDA_RETRY_WINDOW_MS = 60_000
export const DEFAULT_LAMBDA_NETWORK_RETRIES = 2

export interface LambdaInvokerOptions {
  /** The Lambda API to call; default: AWS's endpoint for the region. */
  endpoint?: string
  /** Default: the SDK's lookup (AWS_REGION, the shared config file). */
  region?: string
  /** Use fixed dummy credentials (serverless-offline ignores them) instead of the standard credential chain. */
  dummyCredentials?: boolean
  /** Credentials other than the standard chain's, such as an assumed role's (bridge/invokers/lambda/lambda-functions.ts). */
  credentials?: LambdaClientConfig['credentials']
  /** How long throttling and 5xx answers are retried before the request gets an error response. */
  retryWindowMs?: number
  /** How many times a call that failed on the network is tried again. */
  networkRetries?: number
  /** The backoff between attempts (bridge/support/retry.ts); `retries` is governed by the two bounds above. */
  retry?: Omit<RetryOptions, 'retries'>
  logger?: Logger
}

const DUMMY_CREDENTIALS = { accessKeyId: 'toolbridge', secretAccessKey: 'toolbridge' }

/** What an error thrown by the SDK (or while reading a stream) means for the call. */
type Failure =
  | { type: 'throttled' | 'server'; message: string; retryAfterMs: number }
  | { type: 'network'; message: string }
  | { type: 'final'; kind: 'too-large' | 'unavailable'; message: string }

function httpStatus(error: unknown): number | undefined {
  if (!isRecord(error) || !isRecord(error.$metadata)) return undefined
  const status = error.$metadata.httpStatusCode
  return typeof status === 'number' ? status : undefined
}

function classify(error: unknown): Failure {
  const name = error instanceof Error ? error.name : 'Error'
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error)
  const status = httpStatus(error)
  // The SDK could not even sign the call: the bridge's AWS settings are missing, and trying again will not find them.
  if (status === undefined && isMissingAwsSetting(name, message)) {
    return {
      type: 'final',
      kind: 'unavailable',
      message: `the bridge's AWS configuration is incomplete: ${message} (set AWS_REGION and credentials, or --lambda-endpoint for a local Lambda)`,
    }
  }
  if (status === undefined) return { type: 'network', message } // no HTTP answer: refused, reset, DNS, a stream cut short
  if (status === 429 || name === 'TooManyRequestsException') {
    const seconds = Number((error as { retryAfterSeconds?: unknown }).retryAfterSeconds) // a string: it comes from a header
    return { type: 'throttled', message: `${name}: ${message}`, retryAfterMs: seconds > 0 ? seconds * 1000 : 0 }
  }
  // A 5xx with a body the SDK cannot parse (a proxy's HTML) arrives as a SyntaxError: still Lambda's failure, not ours.
  if (status >= 500) return { type: 'server', message: `HTTP ${status} ${name}: ${message}`, retryAfterMs: 0 }
  const kind = status === 413 || name === 'RequestTooLargeException' ? 'too-large' : 'unavailable'
  return { type: 'final', kind, message: `${name}: ${message}` }
}

/** No region (or an empty one), or no credentials anywhere in the chain: what the SDK throws before it sends anything. */
const isMissingAwsSetting = (name: string, message: string) =>
  name === 'CredentialsProviderError' || /^Region (is missing|not accepted)/.test(message)

/** A 404 that is not about the function: the endpoint does not have the API at all. */
const isMissingApi = (error: unknown) =>
  httpStatus(error) === 404 && !(error instanceof Error && error.name === 'ResourceNotFoundException')

/** A Lambda payload as text: a JSON string is its text, another JSON value its JSON text. */
function payloadText(text: string): string {
  if (text === '') return ''
  try {
    return resultText(JSON.parse(text))
  } catch {
    return text // not JSON (a streaming function's raw bytes, say): the text as it is
  }
}

const isTaskTimeout = (errorType: string, message: string) =>
  errorType === 'Sandbox.Timedout' || /Task timed out after/.test(message)

/**
 * A handler that cannot be loaded: its first line (which module is missing) and the fix, not the
 * require stack of the runtime's own files that follows it. Under serverless-offline the cause is
 * usually its build folder emptied under it.
 */
function importErrorMessage(message: string): string {
  const first = (message.split('\n', 1)[0] ?? '').replace(/^Error: /, '')
  return `${first} (the built handler is missing: rebuild the function; under serverless-offline, restart it)`
}

/** `{errorType, errorMessage, trace}` from Lambda -> an outcome; the trace is dropped. */
function lambdaFunctionError(body: string, fallbackType: string): Outcome {
  let errorType = fallbackType
  let errorMessage = body
  try {
    const parsed: unknown = JSON.parse(body)
    if (isRecord(parsed)) {
      if (typeof parsed.errorType === 'string') errorType = parsed.errorType
      errorMessage = typeof parsed.errorMessage === 'string' ? parsed.errorMessage : ''
    } else if (typeof parsed === 'string') {
      errorMessage = parsed
    }
  } catch {
    // not JSON: the body is the message
  }
  if (errorType === 'Runtime.ImportModuleError') errorMessage = importErrorMessage(errorMessage)
  if (isTaskTimeout(errorType, errorMessage)) return { ok: false, kind: 'timeout', message: errorMessage }
  // Lambda's own verdict on a result over 6 MB: "set response: stream" is the cure, as for the broker's limit.
  if (errorType === 'Function.ResponseSizeTooLarge') return { ok: false, kind: 'too-large', message: errorMessage }
  return functionError(errorType, errorMessage || `the function failed${errorType ? ` (${errorType})` : ''}`)
}

const utf8 = new TextDecoder()

/**
 * A function with a Lambda function to call: one of serverless.yml's, deployed
 * (`--invoker lambda`), or someone else's. Called with the invoker's own region
 * and credentials; external-lambda-invoker.ts keeps an invoker per region and role.
 */
export type OnLambda = Extract<FunctionLocation, { lambdaName: string }>

/** A traced invocation: its span's context, ready for Lambda's ClientContext. */
interface Traced {
  trace: InvocationTrace
  clientContext: string
}

export class LambdaInvoker implements Invoker<OnLambda> {
  private readonly client: LambdaClient
  private readonly retry: Retrier
  private readonly retryWindowMs: number
  private readonly networkRetries: number
  private readonly logger: Logger
  private readonly where: string
  /** Calls in flight, to abort on close(). */
  private readonly inFlight = new Set<AbortController>()
  /** The endpoint answered 404 to InvokeWithResponseStream: use Invoke. */
  private noStreamingApi = false

  constructor(options: LambdaInvokerOptions = {}) {
    const config: LambdaClientConfig = {
      maxAttempts: 1, // the SDK's retries off: bridge/support/retry.ts is the one retrier
      endpoint: options.endpoint,
      region: options.region,
      credentials: options.dummyCredentials ? DUMMY_CREDENTIALS : options.credentials,
      // Each service's `concurrency` bounds the calls; the SDK's default of 50 sockets would queue
      // calls behind long streams, eating into their timeout.
      requestHandler: {
        httpAgent: { keepAlive: true, maxSockets: Infinity },
        httpsAgent: { keepAlive: true, maxSockets: Infinity },
      },
    }
    this.client = new LambdaClient(config)
    this.retry = createRetry({ ...options.retry, retries: Infinity })
    this.retryWindowMs = options.retryWindowMs ?? DEFAULT_LAMBDA_RETRY_WINDOW_MS
    this.networkRetries = options.networkRetries ?? DEFAULT_LAMBDA_NETWORK_RETRIES
    this.logger = options.logger ?? silentLogger
    this.where = options.endpoint ?? 'AWS Lambda'
  }

  /** Nothing to load; checks that a region is known, as every call needs one. */
  async prepare(_target: FunctionTarget<OnLambda>): Promise<string | undefined> {
    try {
      await this.client.config.region()
      return undefined
    } catch (err) {
      return `no AWS region for Lambda: set AWS_REGION (${messageOf(err)})`
    }
  }

  async invoke({ target, event, onChunk, signal, trace }: Invocation<OnLambda>): Promise<Outcome> {
    const { lambdaName } = target.location
    const payload = Buffer.from(JSON.stringify(event))
    if (payload.byteLength > LAMBDA_MAX_REQUEST_BYTES) {
      return {
        ok: false,
        kind: 'too-large',
        message: `request of ${payload.byteLength} bytes is over Lambda's limit of ${LAMBDA_MAX_REQUEST_BYTES} bytes; function "${lambdaName}" was not called`,
      }
    }
    const traced = trace === undefined ? undefined : { trace, clientContext: lambdaClientContext(trace.headers) }
    const started = Date.now()
    let networkFailures = 0
    let sentChunks = false
    const forward = (text: string) => {
      sentChunks = true
      onChunk(text)
    }
    try {
      return await this.retry(
        async (bail, retryCount, retryTime) => {
          const controller = new AbortController()
          this.inFlight.add(controller)
          // One timer per attempt, cleared when it ends, rather than an AbortSignal.timeout left pending.
          const timer = setTimeout(() => controller.abort('timeout'), target.timeoutMs)
          // A caller that cancels stops the wait; the call is abandoned, never retried (it may still run on Lambda).
          const cancel = () => controller.abort('cancelled')
          if (signal?.aborted) cancel()
          else signal?.addEventListener('abort', cancel, { once: true })
          try {
            return await this.callOnce(target, payload, controller.signal, forward, traced)
          } catch (error) {
            if (controller.signal.aborted) {
              const reason = controller.signal.reason
              return bail(
                reason === 'timeout'
                  ? new ToolbridgeError('timeout', `function "${lambdaName}" timed out after ${target.timeoutMs} ms`)
                  : new ToolbridgeError(
                      'unavailable',
                      reason === 'cancelled'
                        ? `the call to "${lambdaName}" was cancelled by its caller and abandoned`
                        : `the call to "${lambdaName}" was cut short: the bridge is closing`,
                    ),
              )
            }
            const failure = classify(error)
            const what = `calling "${lambdaName}" on ${this.where}`
            if (sentChunks)
              return bail(
                new ToolbridgeError('unavailable', `the response stream broke off, ${what}: ${failure.message}`, {
                  cause: error,
                }),
              )
            if (failure.type === 'final')
              return bail(new ToolbridgeError(failure.kind, `${what}: ${failure.message}`, { cause: error }))
            if (failure.type === 'network') {
              networkFailures++
              if (networkFailures > this.networkRetries) {
                return bail(
                  new ToolbridgeError(
                    'unavailable',
                    `${what}: gave up after ${networkFailures} network failures: ${failure.message}`,
                    { cause: error },
                  ),
                )
              }
              throw new RetryableAttempt(failure.message, { cause: error })
            }
            const elapsed = Date.now() - started
            if (elapsed + Math.max(retryTime, failure.retryAfterMs) > this.retryWindowMs) {
              const state = failure.type === 'throttled' ? 'throttled' : 'failing'
              return bail(
                new ToolbridgeError(
                  'unavailable',
                  `${what}: still ${state} after ${retryCount + 1} attempts in ${elapsed} ms (retry window ${this.retryWindowMs} ms): ${failure.message}`,
                  { cause: error },
                ),
              )
            }
            throw new RetryableAttempt(failure.message, { cause: error, retryAfterMs: failure.retryAfterMs })
          } finally {
            clearTimeout(timer)
            signal?.removeEventListener('abort', cancel)
            this.inFlight.delete(controller)
          }
        },
        {
          signal, // no next attempt for a caller that cancelled while it waited
          onRetry: (error, retryCount, waitMs) =>
            this.logger.warn(
              { fn: lambdaName, retry: retryCount + 1, inMs: waitMs, err: messageOf(error) },
              'Lambda call failed; retrying',
            ),
        },
      )
    } catch (error) {
      if (isToolbridgeError(error)) return { ok: false, kind: error.kind, message: error.message }
      return { ok: false, kind: 'unavailable', message: `calling "${lambdaName}": ${messageOf(error)}` }
    }
  }

  /**
   * One call: InvokeWithResponseStream for a `stream` service, Invoke
   * otherwise — and Invoke at once, from then on, when the endpoint turns out
   * to have no streaming API.
   */
  private async callOnce(
    target: FunctionTarget<OnLambda>,
    payload: Uint8Array,
    signal: AbortSignal,
    onChunk: (text: string) => void,
    traced: Traced | undefined,
  ): Promise<Outcome> {
    const { lambdaName } = target.location
    if (target.response !== 'stream' || this.noStreamingApi) return this.call(lambdaName, payload, signal, traced)
    try {
      return await this.callStreaming(lambdaName, payload, signal, onChunk, traced)
    } catch (error) {
      // A 404 for the API itself comes before any chunk.
      if (signal.aborted || !isMissingApi(error)) throw error
      if (!this.noStreamingApi) {
        this.noStreamingApi = true
        this.logger.warn(
          { endpoint: this.where, fn: lambdaName },
          'the endpoint has no InvokeWithResponseStream (serverless-offline has none): stream services are called with Invoke, their answer in one piece',
        )
      }
      return this.call(lambdaName, payload, signal, traced)
    }
  }

  /** Invoke, RequestResponse: one payload. */
  private async call(name: string, payload: Uint8Array, signal: AbortSignal, traced?: Traced): Promise<Outcome> {
    const out = await this.client.send(
      new InvokeCommand({ FunctionName: name, Payload: payload, ClientContext: traced?.clientContext }),
      { abortSignal: signal },
    )
    traced?.trace.observed({ invocationId: out.$metadata.requestId })
    const text = out.Payload ? utf8.decode(out.Payload) : ''
    // FunctionError is "Unhandled" or "Handled", not a type: the body has the type.
    if (out.FunctionError) return lambdaFunctionError(text, '')
    return { ok: true, text: payloadText(text) }
  }

  /** InvokeWithResponseStream: chunks as they arrive, then InvokeComplete. */
  private async callStreaming(
    name: string,
    payload: Uint8Array,
    signal: AbortSignal,
    onChunk: (text: string) => void,
    traced?: Traced,
  ): Promise<Outcome> {
    const out = await this.client.send(
      new InvokeWithResponseStreamCommand({
        FunctionName: name,
        Payload: payload,
        ClientContext: traced?.clientContext,
      }),
      { abortSignal: signal },
    )
    traced?.trace.observed({ invocationId: out.$metadata.requestId })
    // Chunks are bytes: a character may straddle two of them.
    const decoder = new TextDecoder()
    for await (const event of out.EventStream ?? []) {
      if (event.PayloadChunk?.Payload) {
        const text = decoder.decode(event.PayloadChunk.Payload, { stream: true })
        if (text !== '') onChunk(text)
      } else if (event.InvokeComplete) {
        const rest = decoder.decode()
        if (rest !== '') onChunk(rest)
        const { ErrorCode: code, ErrorDetails: details } = event.InvokeComplete
        if (code) return lambdaFunctionError(details ?? '', code)
        return { ok: true, text: '' }
      }
    }
    throw new Error('the response stream ended without InvokeComplete')
  }

  async close(): Promise<void> {
    for (const controller of this.inFlight) controller.abort('closing')
    this.client.destroy()
  }
}

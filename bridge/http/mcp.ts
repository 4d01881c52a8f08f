/**
 * The tools as an MCP server (@modelcontextprotocol/server, the SDK's v2
 * line): every tool of serverless.yml is an MCP tool described as
 * mcp-tools.ts says, whose config values are the ones its declaration fixes,
 * and whose call goes through the broker to the bridge like any agent's
 * (tool-caller.ts). A streaming tool's
 * chunks are joined into one text result, and also sent as progress
 * notifications when the client asked for them (a `progressToken`).
 *
 * Both protocol eras are served, chosen per request from what the client
 * sends: 2026-07-28 (no `initialize`; `server/discover`; the protocol version
 * in every request's `_meta`) and the 2025 revisions (`initialize` first).
 * The server keeps nothing between requests in either era: one server
 * instance per HTTP request, so any replica answers any request.
 *
 * Two ways in: stdio (`toolbridge mcp`, one instance for the connection,
 * its era set by the first message) and Streamable HTTP at `/mcp` on the
 * gateway, behind its Host, Origin and token checks.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { PassThrough, Readable, Writable } from 'node:stream'
import type { ReadableStream as NodeReadableStream } from 'node:stream/web'
import { pipeline } from 'node:stream/promises'
import {
  type CallToolResult,
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from '@modelcontextprotocol/server'
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio'
import { isRecord, messageOf } from '../../shared/errors.ts'
import { type CallLogLevel, listenToCallLogs } from '../support/call-logs.ts'
import type { ToolCaller } from '../trustgraph/tool-caller.ts'
import { readJsonBody, requireJson } from './body.ts'
import { refuseMessage } from './message-bounds.ts'
import { DirectCalls } from './mcp-direct-calls.ts'
import { SERVED_VERSIONS, SERVER_INFO } from './mcp-identity.ts'
import { ReplayLog } from './mcp-replay.ts'
import { callerOf, declaresTasks, registerTaskMethods } from './mcp-task-methods.ts'
import { isListenStream, listensForTasks, TaskListens } from './mcp-task-notifications.ts'
import { TASKS_EXTENSION, type TaskLimits, type TaskOutcome, TaskStore } from './mcp-tasks.ts'
import { LegacySessions } from './mcp-sessions.ts'
import { describeTools, failedCall, type McpToolSet } from './mcp-tools.ts'
import { HttpError } from './responses.ts'
import { jsonRpcError } from './json-rpc-answers.ts'
import { jsonRpcLines } from './stdio-lines.ts'
import { contextToPass } from '../tracing/trace-context.ts'

/** MCP's error for a protocol revision the server does not serve. */
const UNSUPPORTED_VERSION = -32022

/** Console lines of one call sent to its client at most; then one line saying the rest were left out. */
export const MAX_LOG_MESSAGES_PER_CALL = 200

export interface McpServerOptions {
  /**
   * A call with a progress token that has sent nothing for this long gets a
   * progress notification anyway, and again after as long, so that a client
   * or proxy with an idle timeout keeps it open. Default 15 s.
   */
  heartbeatMs?: number
  /** Told of each tool call as it starts; the function it returns, when the call is answered. */
  onCall?: () => () => void
  /** Tasks for clients that declare the extension (HTTP only); without them, none. */
  tasks?: TaskOptions | undefined
}

export interface TaskOptions {
  store: TaskStore
  /** The gateway verifies OAuth access tokens on /mcp: a token's subject may name its caller (mcp-task-methods.ts). */
  verified: boolean
  /** A call still running after this long becomes a task (ms). */
  afterMs: number
}

/** Whether `work` is still running after `ms`. */
async function stillRunningAfter(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>((resolve) => void (timer = setTimeout(resolve, ms, true)))
  const settled = work.then(
    () => false,
    () => false,
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A call's end as a task's: its result, or the JSON-RPC error it failed with. */
const outcomeOf = (work: Promise<CallToolResult>): Promise<TaskOutcome> =>
  work.then(
    // As the call would have been answered: a 2026-07-28 result says it is complete.
    (result) => ({ status: 'completed', result: { ...result, resultType: 'complete' } }),
    (err: unknown) => ({
      status: 'failed',
      error:
        err instanceof ProtocolError
          ? { code: err.code, message: err.message }
          : { code: ProtocolErrorCode.InternalError, message: messageOf(err) },
    }),
  )

export const DEFAULT_HEARTBEAT_MS = 15_000

export function createMcpServer(caller: ToolCaller, tools: McpToolSet, options: McpServerOptions = {}): Server {
  const extensions = options.tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}
  const server = new Server(SERVER_INFO, { capabilities: { tools: {}, logging: {}, ...extensions } })
  const outputSchemas = new Map(tools.list.map((tool) => [tool.name, tool.outputSchema]))
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS

  server.setRequestHandler('tools/list', () => ({ tools: tools.list }))

  if (options.tasks) registerTaskMethods(server, options.tasks.store, options.tasks.verified)

  server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name } = request.params
    const served = caller.tools.get(name)
    if (served === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool "${name}"`)
    const args = request.params.arguments ?? {}
    if (!isRecord(args)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, '"arguments" must be an object')
    const answered = options.onCall?.()
    const progressToken = request.params._meta?.progressToken
    let progress = 0
    let heartbeat: NodeJS.Timeout | undefined
    // Once the call is a task its request has been answered: nothing more goes to it.
    let detached = false
    const notifyProgress = (message: string) => {
      if (detached) return
      void ctx.mcpReq
        .notify({
          method: 'notifications/progress',
          params: { progressToken: progressToken!, progress: ++progress, message },
        })
        .catch(() => {}) // a client that went away still gets nothing; the call finishes regardless
    }
    // Each notification, a chunk's or the heartbeat's own, puts the next heartbeat off.
    const beat = () => {
      clearTimeout(heartbeat)
      heartbeat = setTimeout(() => {
        notifyProgress('still running')
        beat()
      }, heartbeatMs)
    }
    const onChunk =
      progressToken === undefined
        ? undefined
        : (chunk: string) => {
            notifyProgress(chunk)
            beat()
          }
    if (progressToken !== undefined) beat()
    // The function's console lines, sent as log messages at the level the client asked for (the SDK filters).
    let logged = 0
    let stopLogs: (() => void) | undefined
    const onLog = (level: CallLogLevel, text: string) => {
      logged++
      if (detached) return
      if (logged <= MAX_LOG_MESSAGES_PER_CALL) return void ctx.mcpReq.log(level, text, name).catch(() => {})
      if (logged === MAX_LOG_MESSAGES_PER_CALL + 1)
        void ctx.mcpReq
          .log('warning', `more than ${MAX_LOG_MESSAGES_PER_CALL} lines: the rest are left out`, name)
          .catch(() => {})
    }
    const run = async (signal: AbortSignal): Promise<CallToolResult> => {
      try {
        // MCP carries a traced client's context in _meta (traceparent, tracestate, baggage).
        const meta = request.params._meta
        const traceContext = meta === undefined ? undefined : contextToPass(meta)
        const text = await caller.call(
          name,
          { arguments: args },
          { onChunk, signal, traceContext, onId: (id) => void (stopLogs = listenToCallLogs(id, onLog)) },
        )
        // The SDK shapes structured content for the client's era (2025 clients need an object).
        return server.projectCallToolResult(tools.result(name, text), outputSchemas.get(name))
      } catch (err) {
        const failed = failedCall(err)
        if ('error' in failed) throw new ProtocolError(failed.error.code, failed.error.message)
        return failed.result
      } finally {
        clearTimeout(heartbeat)
        stopLogs?.()
        answered?.()
      }
    }
    // The SDK aborts the request's signal on notifications/cancelled, and when the HTTP client goes away.
    const tasks = options.tasks
    if (tasks === undefined || !declaresTasks(ctx)) return run(ctx.mcpReq.signal)
    // A call that may become a task has a signal of its own: the request's until then, tasks/cancel's after.
    const controller = new AbortController()
    const follow = () => controller.abort(ctx.mcpReq.signal.reason)
    ctx.mcpReq.signal.addEventListener('abort', follow, { once: true })
    const work = run(controller.signal)
    const atOnce = served.tool.longRunning || tasks.afterMs === 0
    if (!atOnce && !(await stillRunningAfter(work, tasks.afterMs))) return work
    const task = tasks.store.create(callerOf(ctx, tasks.verified), controller, outcomeOf(work))
    // A full store: the call goes on as an ordinary one.
    if (task === undefined) return work
    detached = true
    clearTimeout(heartbeat)
    ctx.mcpReq.signal.removeEventListener('abort', follow)
    return { ...task, resultType: 'task' } as unknown as CallToolResult
  })
  return server
}

export interface McpHttpOptions {
  /** Bodies over this many bytes get 413. */
  maxBodyBytes: number
  /** Progress heartbeats and SSE keep-alive comments, this often on a quiet call or stream; default 15 s. */
  heartbeatMs?: number | undefined
  /** Tasks: when a call becomes one, how long a result is kept, how many are held. */
  tasks: McpTaskSettings
  /** The gateway verifies OAuth access tokens on /mcp before this handler runs. */
  oauth?: boolean
  /** Told of each tools/call: answered by the direct lane (mcp-direct-calls.ts) or by the SDK. */
  onToolCall?: ((path: 'direct' | 'sdk') => void) | undefined
}

export interface McpTaskSettings extends Omit<TaskLimits, 'pollIntervalMs'> {
  /** A call still running after this long becomes a task (ms). */
  afterMs: number
}

/** What a task's client is asked to wait between two tasks/get (ms). */
const TASK_POLL_INTERVAL_MS = 1000

/** 2025-era sessions: how many at once, and how long one lasts without a request. */
const SESSION_LIMITS = { maxSessions: 1000, idleMs: 10 * 60_000 }
/** What a client waits before it reconnects to a dropped stream (ms). */
const RETRY_MS = 1000
/** Events kept for resumption, across every session: bounded by count, bytes and age. */
const REPLAY_LIMITS = { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, windowMs: 5 * 60_000 }

/** The web Request the SDK's handler takes: the headers as sent, the body already read (passed on parsed). */
function webRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
  return new Request(new URL(req.url ?? '/', 'http://mcp.invalid'), { method: req.method, headers, signal })
}

/**
 * The SDK's modern path names only 2026-07-28 when it refuses a revision it
 * does not serve (-32022); a client that could fall back to a 2025 revision
 * is told every one served.
 */
async function withEveryServedVersion(response: Response): Promise<Response> {
  if (response.status !== 400 || !response.headers.get('content-type')?.includes('json')) return response
  const text = await response.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return new Response(text, response)
  }
  if (isRecord(body) && isRecord(body.error) && body.error.code === UNSUPPORTED_VERSION && isRecord(body.error.data)) {
    const error = { ...body.error, data: { ...body.error.data, supported: SERVED_VERSIONS } }
    return new Response(JSON.stringify({ ...body, error }), response)
  }
  return new Response(text, response)
}

/** Copies a web Response onto Node's; resolves once it is sent or the client has gone. */
async function sendResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => void (headers[name] = value))
  res.writeHead(response.status, headers)
  if (!response.body) return void res.end()
  // A stream the client stopped reading ends here; the SDK has its abort already.
  await pipeline(Readable.fromWeb(response.body as NodeReadableStream), res).catch(() => {})
}

/**
 * Serves Streamable HTTP at one path; resolves once the response is
 * complete. Refusals before the SDK sees the request are thrown as HttpError.
 *
 * 2026-07-28 requests are served statelessly, one server instance each.
 * 2025-era clients that `initialize` get a session (mcp-sessions.ts): SSE
 * streams with a priming event, event ids and `retry`, resumable with
 * `Last-Event-ID` (GET), cancellable with `notifications/cancelled`; other
 * 2025-era requests are served statelessly.
 */
export function mcpHttpHandler(caller: ToolCaller, options: McpHttpOptions) {
  const tools = describeTools([...caller.tools.values()].map((entry) => entry.tool))
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
  const { afterMs, ...limits } = options.tasks
  // One store for every request: a task outlives the request that made it.
  const store = new TaskStore({ ...limits, pollIntervalMs: TASK_POLL_INTERVAL_MS })
  const tasks = { store, afterMs, verified: options.oauth ?? false }
  const factory = () => createMcpServer(caller, tools, { heartbeatMs, tasks })
  const direct = new DirectCalls(caller, tools)
  const taskListens = new TaskListens(tasks.store, { heartbeatMs, serverInfo: SERVER_INFO, verified: tasks.verified })
  const handler = createMcpHandler(factory, {
    legacy: 'stateless',
    maxRequestBodySize: options.maxBodyBytes,
    keepAliveMs: heartbeatMs,
  })
  const sessions = new LegacySessions(factory, new ReplayLog(REPLAY_LIMITS), {
    ...SESSION_LIMITS,
    retryMs: RETRY_MS,
    keepAliveMs: heartbeatMs,
  })
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id']
    const held = typeof sessionId === 'string' ? sessionId : undefined
    const gone = new AbortController()
    // Only a response cut short has a call to stop (an abort makes an error object: not one per request).
    res.once('close', () => res.writableFinished || gone.abort())
    if (req.method === 'GET' || req.method === 'DELETE') {
      // A session's stream to resume (Last-Event-ID) or its end; without a session there is nothing to do.
      const answer = held === undefined ? undefined : sessions.serve(held, webRequest(req, gone.signal))
      if (answer) return sendResponse(await answer, res)
      return jsonRpcError(res, 405, 'Method not allowed: GET and DELETE need an MCP session this server holds', {
        allow: 'POST',
      })
    }
    if (req.method !== 'POST') return jsonRpcError(res, 405, 'Method not allowed', { allow: 'GET, POST, DELETE' })
    requireJson(req)
    const message = await readJsonBody(req, options.maxBodyBytes, undefined)
    if (message === undefined) throw new HttpError(400, 'Parse error: empty body')
    const refusal = refuseMessage(message)
    if (refusal) return jsonRpcError(res, 400, refusal.message, {}, refusal.code)
    const verdict = direct.judge(req.headers, message)
    if (verdict !== undefined && 'call' in verdict) {
      options.onToolCall?.('direct')
      return direct.answer(verdict.call, res, gone.signal)
    }
    if (isRecord(message) && message.method === 'tools/call') options.onToolCall?.('sdk')
    const request = webRequest(req, gone.signal)
    if (isRecord(message) && message.method === 'initialize' && (await isLegacyRequest(request, message)))
      return sendResponse(await sessions.open(request, message), res)
    const inSession = held === undefined ? undefined : sessions.serve(held, request, message)
    if (inSession) return sendResponse(await inSession, res)
    const answer = await handler.fetch(request, { parsedBody: message })
    if (verdict !== undefined) direct.learn(verdict.envelope, answer.status)
    // Task notifications: the SDK has checked the request, and would have opened a stream without them.
    if (listensForTasks(message) && isListenStream(answer)) {
      await answer.body?.cancel()
      return taskListens.serve(message, req.headers.authorization ?? '', res)
    }
    return sendResponse(await withEveryServedVersion(answer), res)
  }
  return Object.assign(serve, {
    /** Ends the task notification streams: their tasks may outlast the gateway's wait for calls in flight. */
    endStreams: () => taskListens.endAll(),
    close: () => {
      taskListens.endAll()
      sessions.close()
      tasks.store.close()
    },
  })
}

/**
 * Serves MCP on stdin/stdout until stdin ends, then finishes the calls still
 * in flight (their answers are written as usual) for at most `drainMs`:
 * piping requests into the command and closing its input is a common first
 * try. stdout belongs to the protocol: anything else written there (a
 * function's console.log, in process or from a worker thread) goes to
 * stderr instead.
 */
export async function serveMcpStdio(caller: ToolCaller, { drainMs }: { drainMs: number }): Promise<void> {
  const write = process.stdout.write.bind(process.stdout) as (
    chunk: Uint8Array | string,
    callback: (err?: Error | null) => void,
  ) => boolean
  const protocolOut = new Writable({ write: (chunk: Uint8Array, _encoding, callback) => void write(chunk, callback) })
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  const ended = new Promise<void>((resolve) => process.stdin.once('end', resolve))
  // Lines the SDK would drop silently (not JSON) or stop on (too long) get a JSON-RPC error instead.
  const lines = jsonRpcLines(
    process.stdin,
    (error) => void protocolOut.write(JSON.stringify({ jsonrpc: '2.0', error, id: null }) + '\n'),
  )
  const tools = describeTools([...caller.tools.values()].map((entry) => entry.tool))
  let inFlight = 0
  let idle: (() => void) | undefined
  const onCall = () => {
    inFlight++
    return () => {
      if (--inFlight === 0) idle?.()
    }
  }
  // The SDK's transport closes, and aborts what runs, when its input ends: it is given an input that
  // ends only once the calls in flight are answered.
  const input = new PassThrough()
  lines.pipe(input, { end: false })
  const handle = serveStdio(() => createMcpServer(caller, tools, { onCall }), {
    transport: new StdioServerTransport(input, protocolOut),
  })
  await ended
  if (inFlight > 0) {
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      idle = resolve
      timer = setTimeout(resolve, drainMs)
    })
    clearTimeout(timer)
  }
  // The last answers are on their way to stdout: let them out before the transport closes.
  await new Promise<void>((resolve) => protocolOut.write('', () => resolve()))
  input.end()
  await handle.close()
}

/**
 * Task status notifications of the Tasks extension: a 2026-07-28
 * `subscriptions/listen` whose `notifications.taskIds` names tasks is
 * answered with an SSE stream of `notifications/tasks`, each carrying the
 * whole task as `tasks/get` would answer it then.
 *
 * The SDK's own listen streams know only its four change notifications and
 * drop `taskIds`; mcp.ts lets the SDK check such a request as any other
 * (revision, headers, params) and serves it here once the SDK would have
 * opened a stream for it.
 *
 * The stream starts with `notifications/subscriptions/acknowledged` naming
 * the ids it will notify: the caller's own tasks only (another caller's id
 * is left out as an unknown one is). Then one `notifications/tasks` per
 * status change; a task already finished is sent at once. Once every task
 * named has finished and been sent, the stream ends with the listen
 * request's (empty) result, as it does when the gateway stops. A client that
 * goes away stops its watchers. Nothing else (no progress, no log messages)
 * is sent on it but keep-alive comments.
 */
import type { ServerResponse } from 'node:http'
import { SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server'
import { isRecord } from '../../shared/errors.ts'
import { callerFrom, envelopeDeclaresTasks, tasksNotDeclared } from './mcp-task-methods.ts'
import { answerJsonRpcError, type RequestId } from './json-rpc-answers.ts'
import type { TaskStore, WireTask } from './mcp-tasks.ts'

const LISTEN = 'subscriptions/listen'
/** JSON-RPC's invalid params. */
const INVALID_PARAMS = -32602

/** Whether `message` is a `subscriptions/listen` request that asks for task notifications. */
export function listensForTasks(message: unknown): message is { id: RequestId; params: Record<string, unknown> } {
  return (
    isRecord(message) &&
    message.method === LISTEN &&
    (typeof message.id === 'string' || typeof message.id === 'number') &&
    isRecord(message.params) &&
    isRecord(message.params.notifications) &&
    message.params.notifications.taskIds !== undefined
  )
}

/** Whether the SDK answered a listen request by opening its stream (not with an error). */
export const isListenStream = (response: Response): boolean =>
  response.status === 200 && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')

export interface TaskListenOptions {
  /** A keep-alive comment goes out this often (ms). */
  heartbeatMs: number
  /** The server's name and version, in the result that ends a stream. */
  serverInfo: { name: string; version: string }
  /** The gateway verifies OAuth access tokens on /mcp (mcp-task-methods.ts: callerFrom). */
  verified: boolean
}

export class TaskListens {
  readonly #store: TaskStore
  readonly #options: TaskListenOptions
  /** Each open stream's graceful end. */
  readonly #open = new Set<() => void>()

  constructor(store: TaskStore, options: TaskListenOptions) {
    this.#store = store
    this.#options = options
  }

  /** Streams open. */
  get open(): number {
    return this.#open.size
  }

  /** Ends every open stream with its listen result (the gateway is stopping). */
  endAll(): void {
    for (const end of [...this.#open]) end()
  }

  /**
   * Answers one listen request the SDK has already accepted; `authorization`
   * is its Authorization header (or ''). Resolves once its stream ends.
   */
  serve(
    message: { id: RequestId; params: Record<string, unknown> },
    authorization: string,
    res: ServerResponse,
  ): Promise<void> {
    const { id } = message
    const envelope = isRecord(message.params._meta) ? message.params._meta : {}
    if (!envelopeDeclaresTasks(envelope)) {
      const refusal = tasksNotDeclared()
      return answerJsonRpcError(res, 400, id, { code: refusal.code, message: refusal.message, data: refusal.data })
    }
    const notifications = message.params.notifications as Record<string, unknown>
    const { taskIds } = notifications
    if (!Array.isArray(taskIds) || !taskIds.every((taskId) => typeof taskId === 'string'))
      return answerJsonRpcError(res, 200, id, {
        code: INVALID_PARAMS,
        message: '"notifications.taskIds" must be strings',
      })
    const owner = callerFrom(authorization, envelope, this.#options.verified)
    const stamp = { [SUBSCRIPTION_ID_META_KEY]: id }

    let ended = false
    let pending = 0
    const stops: (() => void)[] = []
    const write = (frame: string) => {
      if (!ended) res.write(frame)
    }
    const send = (method: string, params: Record<string, unknown>) =>
      write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method, params })}\n\n`)
    const notify = (task: WireTask) => send('notifications/tasks', { ...task, _meta: stamp })
    const heartbeat = setInterval(() => write(': keepalive\n\n'), this.#options.heartbeatMs)
    heartbeat.unref()
    /** Stops listening; `graceful`: the stream ends with the listen request's result. */
    const end = (graceful: boolean) => {
      if (ended) return
      if (graceful) {
        const result = { resultType: 'complete', _meta: { ...stamp, [SERVER_INFO_META_KEY]: this.#options.serverInfo } }
        write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`)
      }
      ended = true
      clearInterval(heartbeat)
      for (const stop of stops) stop()
      this.#open.delete(endGracefully)
      res.end()
    }
    const endGracefully = () => end(true)
    const done = new Promise<void>((resolve) => res.once('close', resolve))
    res.once('close', () => end(false))
    this.#open.add(endGracefully)

    // Registered before anything is written: no change can come between the acknowledgement and the watch.
    const accepted: string[] = []
    const finished: WireTask[] = []
    for (const taskId of new Set(taskIds as string[])) {
      const watched = this.#store.watch(owner, taskId, (task) => {
        notify(task)
        if (--pending === 0) endGracefully()
      })
      if (watched === undefined) continue
      accepted.push(taskId)
      stops.push(watched.stop)
      if (watched.task.status === 'working') pending++
      else finished.push(watched.task)
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    })
    send('notifications/subscriptions/acknowledged', {
      notifications: accepted.length > 0 ? { taskIds: accepted } : {},
      _meta: stamp,
    })
    for (const task of finished) notify(task)
    if (pending === 0) endGracefully()
    return done
  }
}

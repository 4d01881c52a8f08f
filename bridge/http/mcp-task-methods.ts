/**
 * The Tasks extension on the wire (mcp-tasks.ts holds the tasks): whether a
 * request's client declared it, who the caller is, and `tasks/get`,
 * `tasks/cancel` and `tasks/update` (status notifications:
 * mcp-task-notifications.ts).
 *
 * A client declares the extension in each request's capabilities (the
 * 2026-07-28 `_meta` envelope); what it declared before does not count. The
 * task methods refuse a client that did not (-32021), and answer an id that
 * is unknown, expired or another caller's alike (-32602).
 */
import { createHash } from 'node:crypto'
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
  type StandardSchemaV1,
} from '@modelcontextprotocol/server'
import { isRecord } from '../../shared/errors.ts'
import { TASKS_EXTENSION, type TaskStore } from './mcp-tasks.ts'

const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
const CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'

/** The request's 2026-07-28 envelope (the SDK types it as an empty object). */
const envelopeOf = (ctx: ServerContext): Record<string, unknown> => ctx.mcpReq.envelope ?? {}

/** Whether this request's client declared the Tasks extension; only the request's own capabilities count. */
export const declaresTasks = (ctx: ServerContext): boolean => envelopeDeclaresTasks(envelopeOf(ctx))

/** Whether a request's `_meta` declares the Tasks extension in its client capabilities. */
export function envelopeDeclaresTasks(envelope: Record<string, unknown>): boolean {
  const declared = envelope[CLIENT_CAPABILITIES]
  return isRecord(declared) && isRecord(declared.extensions) && isRecord(declared.extensions[TASKS_EXTENSION])
}

/**
 * Who is asking, as tasks are keyed: the access token's issuer and subject
 * (a JWT the gateway has already verified) or a digest of the token, and
 * the client's name in its request's `clientInfo`.
 */
export const callerOf = (ctx: ServerContext): string =>
  callerFrom(ctx.http?.req?.headers.get('authorization') ?? '', envelopeOf(ctx))

/** The caller of a request with this Authorization header (or '') and this `_meta`. */
export function callerFrom(authorization: string, envelope: Record<string, unknown>): string {
  const clientInfo = envelope[CLIENT_INFO]
  const client = isRecord(clientInfo) ? String(clientInfo.name) : ''
  return JSON.stringify([subjectOf(authorization), client])
}

function subjectOf(authorization: string): string {
  if (authorization === '') return ''
  const parts = authorization.replace(/^bearer +/i, '').split('.')
  if (parts.length === 3) {
    try {
      const claims: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'))
      if (isRecord(claims) && typeof claims.sub === 'string') return `sub ${String(claims.iss)} ${claims.sub}`
    } catch {
      // Not a JWT after all: its digest names it.
    }
  }
  return `token ${createHash('sha256').update(authorization).digest('hex')}`
}

/** `{ taskId: string }`, as the SDK's custom-method registration takes a schema. */
const TASK_ID_PARAMS: StandardSchemaV1<unknown, { taskId: string }> = {
  '~standard': {
    version: 1,
    vendor: 'toolbridge',
    validate: (value) =>
      isRecord(value) && typeof value.taskId === 'string'
        ? { value: { taskId: value.taskId } }
        : { issues: [{ message: '"taskId" must be a string' }] },
  },
}

/** The refusal of a task method, or of task notifications, to a client that did not declare the extension (-32021). */
export const tasksNotDeclared = () =>
  new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    'Missing required client capability',
  )

const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Task not found (or expired)')

export function registerTaskMethods(server: Server, store: TaskStore): void {
  const asker = (ctx: ServerContext): string => {
    if (!declaresTasks(ctx)) throw tasksNotDeclared()
    return callerOf(ctx)
  }
  server.setRequestHandler('tasks/get', { params: TASK_ID_PARAMS }, ({ taskId }, ctx) => {
    const task = store.get(asker(ctx), taskId)
    if (task === undefined) throw notFound()
    return task
  })
  server.setRequestHandler('tasks/cancel', { params: TASK_ID_PARAMS }, ({ taskId }, ctx) => {
    if (!store.cancel(asker(ctx), taskId)) throw notFound()
    return {}
  })
  // No task here ever waits for input: every response is to a request not outstanding, ignored as the extension says.
  server.setRequestHandler('tasks/update', { params: TASK_ID_PARAMS }, ({ taskId }, ctx) => {
    if (!store.has(asker(ctx), taskId)) throw notFound()
    return {}
  })
}

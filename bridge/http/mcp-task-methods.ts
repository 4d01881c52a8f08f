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
 * Who is asking, as tasks are keyed: with OAuth on /mcp (`verified`: the
 * gateway has checked the token before this), the token's issuer and
 * subject, so a refreshed token keeps its tasks; otherwise a digest of the
 * whole Authorization header, as claims nothing checked are the sender's
 * say-so. And the client's name in its request's `clientInfo`.
 */
export const callerOf = (ctx: ServerContext, verified: boolean): string =>
  callerFrom(ctx.http?.req?.headers.get('authorization') ?? '', envelopeOf(ctx), verified)

/** The caller of a request with this Authorization header (or '') and this `_meta`. */
export function callerFrom(authorization: string, envelope: Record<string, unknown>, verified: boolean): string {
  const clientInfo = envelope[CLIENT_INFO]
  const client = isRecord(clientInfo) ? String(clientInfo.name) : ''
  return JSON.stringify([(verified && verifiedSubject(authorization)) || digestOf(authorization), client])
}

/** The issuer and subject of a verified JWT access token; undefined if it has none. */
function verifiedSubject(authorization: string): string | undefined {
  const claims = authorization.replace(/^bearer +/i, '').split('.')[1]
  try {
    const parsed: unknown = JSON.parse(Buffer.from(claims ?? '', 'base64url').toString('utf8'))
    if (isRecord(parsed) && typeof parsed.sub === 'string') return `sub ${String(parsed.iss)} ${parsed.sub}`
  } catch {}
  return undefined
}

const digestOf = (authorization: string) =>
  authorization === '' ? '' : `token ${createHash('sha256').update(authorization).digest('hex')}`

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

export function registerTaskMethods(server: Server, store: TaskStore, verified: boolean): void {
  const asker = (ctx: ServerContext): string => {
    if (!declaresTasks(ctx)) throw tasksNotDeclared()
    return callerOf(ctx, verified)
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

/**
 * MCP Tasks (`io.modelcontextprotocol/tasks`) on /mcp at 2026-07-28: a call
 * of a client that declares the extension, to a tool marked `longRunning:`
 * or one still running after --mcp-task-after, becomes a task that later
 * requests ask for. Driven two ways: a raw client written from the
 * extension's text (every request a fetch of its own, as a stateless client
 * sends it), and the extension's own client library,
 * @modelcontextprotocol/ext-tasks, over the SDK's v2 client. The function
 * counts the calls whose signal was aborted.
 */
import { fileURLToPath } from 'node:url'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client'
import { describe, expect, it } from 'vitest'
import { callerFrom } from '../../bridge/http/mcp-task-methods.ts'
import { TASKS_EXTENSION, type TaskOutcome, TaskStore } from '../../bridge/http/mcp-tasks.ts'
import { lastMessage, modernClient, MODERN, modernHeaders, nextRequestId } from '../support/mcp-modern-post.ts'
import { mcpServedInProcess } from '../support/in-process-runtime.ts'

const YML = fileURLToPath(new URL('../fixtures/mcp-long-calls/tasks.yml', import.meta.url))
const INVALID_PARAMS = -32602
const MISSING_CAPABILITY = -32021

interface Reply {
  result?: Record<string, unknown>
  error?: { code: number; message: string; data?: unknown }
}

const { request, call, getTask, settled } = modernClient<Reply>('tasks-test')
const textOf = (result: Record<string, unknown> | undefined) => (result!.content as { text: string }[])[0]!.text

/** How many calls the function saw aborted, asked until it reaches `expected` (or 10 s pass). */
async function cancellationsSeen(url: string, expected: number): Promise<number> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const seen = Number(textOf((await call(url, 'lookup', { cancelled: true }, { tasks: false })).result))
    if (seen >= expected || Date.now() > deadline) return seen
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('MCP tasks at 2026-07-28 (raw client from the extension text)', () => {
  const served = mcpServedInProcess(YML, { mcpTaskAfter: '1' })

  it('says in server/discover that it serves the extension', async () => {
    const reply = await request(served.url, 'server/discover', {})
    expect(reply.result?.capabilities).toMatchObject({ extensions: { [TASKS_EXTENSION]: {} } })
  })

  it('makes a call to a long-running tool a task, whose result tasks/get gives', async () => {
    const created = await call(served.url, 'report', { seconds: 0.2 })
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1000 })
    const taskId = created.result!.taskId as string
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/)
    expect(typeof created.result!.ttlMs).toBe('number')
    const done = await settled(served.url, taskId)
    expect(done.result).toMatchObject({ resultType: 'complete', taskId, status: 'completed' })
    expect(textOf(done.result!.result as Record<string, unknown>)).toBe('answered after 0.2 s')
  })

  it('answers a client that does not declare the extension with the ordinary result', async () => {
    const reply = await call(served.url, 'report', { seconds: 0.2 }, { tasks: false })
    expect(reply.result?.resultType).toBe('complete')
    expect(textOf(reply.result)).toBe('answered after 0.2 s')
  })

  it('makes a call still running after --mcp-task-after a task, and answers a quicker one at once', async () => {
    const quick = await call(served.url, 'lookup', { seconds: 0 })
    expect(quick.result?.resultType).toBe('complete')
    expect(textOf(quick.result)).toBe('answered after 0 s')
    const slow = await call(served.url, 'lookup', { seconds: 2 })
    expect(slow.result).toMatchObject({ resultType: 'task', status: 'working' })
    const done = await settled(served.url, slow.result!.taskId as string)
    expect(done.result?.status).toBe('completed')
    expect(textOf(done.result!.result as Record<string, unknown>)).toBe('answered after 2 s')
  })

  it('tasks/cancel aborts the function and the task says cancelled', async () => {
    const before = await cancellationsSeen(served.url, 0)
    const created = await call(served.url, 'report', { seconds: 30 })
    const taskId = created.result!.taskId as string
    const cancelled = await request(served.url, 'tasks/cancel', { taskId })
    expect(cancelled.error).toBeUndefined()
    expect(cancelled.result?.resultType).toBe('complete')
    expect(await cancellationsSeen(served.url, before + 1)).toBe(before + 1)
    expect((await getTask(served.url, taskId)).result).toMatchObject({ taskId, status: 'cancelled' })
  })

  it("refuses another caller's task id as it refuses an unknown one", async () => {
    const created = await call(served.url, 'report', { seconds: 0 }, { authorization: 'Bearer alice' })
    const taskId = created.result!.taskId as string
    expect((await settled(served.url, taskId, { authorization: 'Bearer alice' })).result?.status).toBe('completed')
    const unknown = await getTask(served.url, crypto.randomUUID(), { authorization: 'Bearer alice' })
    expect(unknown.error?.code).toBe(INVALID_PARAMS)
    for (const other of [{ authorization: 'Bearer mallory' }, { authorization: 'Bearer alice', client: 'other' }, {}]) {
      const reply = await getTask(served.url, taskId, other)
      expect(reply.error).toEqual(unknown.error)
      const cancel = await request(served.url, 'tasks/cancel', { taskId }, other)
      expect(cancel.error?.code).toBe(INVALID_PARAMS)
    }
    // Still there for its own caller.
    expect((await getTask(served.url, taskId, { authorization: 'Bearer alice' })).result?.status).toBe('completed')
  })

  it('keys a verified JWT by its issuer and subject (a refreshed token keeps its tasks), an unverified one by the whole token', () => {
    const token = (signature: string) =>
      `Bearer e30.${Buffer.from('{"iss":"https://idp.example","sub":"alice"}').toString('base64url')}.${signature}`
    const envelope = { 'io.modelcontextprotocol/clientInfo': { name: 'c' } }
    expect(callerFrom(token('first'), envelope, true)).toBe(callerFrom(token('refreshed'), envelope, true))
    expect(callerFrom(token('first'), envelope, false)).not.toBe(callerFrom(token('refreshed'), envelope, false))
    expect(callerFrom(token('first'), envelope, true)).not.toBe(callerFrom('Bearer opaque', envelope, true))
  })

  it('keys a token that looks like a JWT by the whole token where nothing verified it, never by its claims', async () => {
    // Here /mcp takes any token: a JWT's claims are the sender's say-so, so another token naming the same subject is another caller.
    const jwt = (signature: string) =>
      `Bearer ${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"iss":"https://idp.example","sub":"alice"}').toString('base64url')}.${signature}`
    const created = await call(served.url, 'report', { seconds: 0 }, { authorization: jwt('real') })
    const taskId = created.result!.taskId as string
    expect((await settled(served.url, taskId, { authorization: jwt('real') })).result?.status).toBe('completed')
    expect((await getTask(served.url, taskId, { authorization: jwt('forged') })).error?.code).toBe(INVALID_PARAMS)
  })

  it('refuses the task methods to a client that does not declare the extension (-32021)', async () => {
    const created = await call(served.url, 'report', { seconds: 0 })
    const taskId = created.result!.taskId as string
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const reply = await request(served.url, method, { taskId, inputResponses: {} }, { tasks: false })
      expect(reply.error?.code).toBe(MISSING_CAPABILITY)
      expect(reply.error?.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } })
    }
  })

  it('acknowledges tasks/update for its task (none ever waits for input) and refuses an unknown id', async () => {
    const created = await call(served.url, 'report', { seconds: 0 })
    const taskId = created.result!.taskId as string
    const ack = await request(served.url, 'tasks/update', { taskId, inputResponses: { name: { action: 'accept' } } })
    expect(ack.result?.resultType).toBe('complete')
    const unknown = await request(served.url, 'tasks/update', { taskId: 'no-such-task', inputResponses: {} })
    expect(unknown.error?.code).toBe(INVALID_PARAMS)
    const malformed = await request(served.url, 'tasks/get', { taskId: 42 })
    expect(malformed.error?.code).toBe(INVALID_PARAMS)
  })
})

describe('MCP tasks: expiry and the bound on tasks held', () => {
  const served = mcpServedInProcess(YML, { mcpTaskTtl: '1', mcpMaxTasks: '2' })

  it('forgets a finished task after its ttl: tasks/get then answers -32602', async () => {
    const created = await call(served.url, 'report', { seconds: 0 })
    const taskId = created.result!.taskId as string
    expect((await settled(served.url, taskId)).result?.status).toBe('completed')
    const deadline = Date.now() + 10_000
    let reply = await getTask(served.url, taskId)
    while (reply.result && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      reply = await getTask(served.url, taskId)
    }
    expect(reply.error?.code).toBe(INVALID_PARAMS)
  })

  it('past --mcp-max-tasks runs a call as an ordinary one; room comes back once a task expires', async () => {
    const held = await Promise.all([
      call(served.url, 'report', { seconds: 30 }),
      call(served.url, 'report', { seconds: 30 }),
    ])
    for (const reply of held) expect(reply.result?.resultType).toBe('task')
    const third = await call(served.url, 'report', { seconds: 0 })
    expect(third.result?.resultType).toBe('complete')
    expect(textOf(third.result)).toBe('answered after 0 s')
    for (const reply of held) await request(served.url, 'tasks/cancel', { taskId: reply.result!.taskId as string })
    const deadline = Date.now() + 10_000
    let next = await call(served.url, 'report', { seconds: 0 })
    while (next.result?.resultType !== 'task' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      next = await call(served.url, 'report', { seconds: 0 })
    }
    expect(next.result?.resultType).toBe('task')
  })
})

describe('the task store', () => {
  const work = () => new Promise<never>(() => {})

  it('holds at most maxTasks of 10,000 asked for, and takes new ones once old ones expire', () => {
    let now = 0
    const store = new TaskStore({ ttlMs: 1000, maxTasks: 1000, pollIntervalMs: 1000 }, () => now)
    const made = []
    for (let i = 0; i < 10_000; i++) made.push(store.create('caller', new AbortController(), work()))
    expect(made.filter((task) => task !== undefined)).toHaveLength(1000)
    expect(store.size).toBe(1000)
    // Running tasks never expire; cancelled ones are kept their ttl, then make room.
    for (const task of made.slice(0, 10)) store.cancel('caller', task!.taskId)
    now += 999
    expect(store.create('caller', new AbortController(), work())).toBeUndefined()
    now += 1
    expect(store.create('caller', new AbortController(), work())).toBeDefined()
    expect(store.size).toBe(991)
  })

  it("keys tasks to their caller and aborts a cancelled task's signal once", async () => {
    const store = new TaskStore({ ttlMs: 1000, maxTasks: 10, pollIntervalMs: 1000 })
    const controller = new AbortController()
    const task = store.create('alice', controller, work())!
    expect(store.get('bob', task.taskId)).toBeUndefined()
    expect(store.cancel('bob', task.taskId)).toBe(false)
    expect(controller.signal.aborted).toBe(false)
    expect(store.cancel('alice', task.taskId)).toBe(true)
    expect(controller.signal.aborted).toBe(true)
    expect(store.get('alice', task.taskId)?.status).toBe('cancelled')
  })

  it('keeps a result ttlMs after the task finished, then answers as for an unknown id', async () => {
    let now = 0
    const store = new TaskStore({ ttlMs: 1000, maxTasks: 10, pollIntervalMs: 1000 }, () => now)
    let finish!: (outcome: TaskOutcome) => void
    const task = store.create('alice', new AbortController(), new Promise((resolve) => void (finish = resolve)))!
    now = 5000
    finish({ status: 'completed', result: {} })
    await Promise.resolve()
    expect(store.get('alice', task.taskId)).toMatchObject({ status: 'completed', ttlMs: 6000, result: {} })
    now = 5999
    expect(store.get('alice', task.taskId)?.status).toBe('completed')
    now = 6000
    expect(store.get('alice', task.taskId)).toBeUndefined()
    expect(store.size).toBe(0)
  })
})

describe('MCP tasks with the extension’s own client (@modelcontextprotocol/ext-tasks)', () => {
  const served = mcpServedInProcess(YML)

  /** A session of the library over the SDK's client at 2026-07-28; the library sends task traffic by `rawDispatch`. */
  async function session() {
    const client = new Client({ name: 'ext-tasks', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } })
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url)))
    const dispatch = async (
      message: unknown,
      options?: { context?: { headers?: Readonly<Record<string, string>> } },
    ) => {
      const { method, params } = message as { method: string; params: Record<string, unknown> }
      const res = await fetch(served.url, {
        method: 'POST',
        headers: modernHeaders(method, params.name, { ...options?.context?.headers }),
        body: JSON.stringify({ jsonrpc: '2.0', id: nextRequestId(), method, params }),
      })
      const reply = lastMessage(await res.text())
      return reply.error
        ? { kind: 'error' as const, error: reply.error }
        : { kind: 'result' as const, result: reply.result }
    }
    const tasks = createTaskSessionFromClient(client, {
      endpointId: 'toolbridge-test',
      rawDispatch: dispatch,
      v2RequestFraming: {
        protocolVersion: MODERN,
        clientInfo: { name: 'ext-tasks', version: '1' },
        clientCapabilities: {},
      },
    })
    return tasks
  }

  it('gets a task for the long-running tool and settles it to its result', async () => {
    const tasks = await session()
    try {
      const execution = await tasks.callTool('report', { seconds: 0.2 })
      expect(execution.kind).toBe('task')
      const { outcome } = await execution.settle()
      expect(outcome.status === 'failed' ? outcome.error : outcome.status).toBe('completed')
      expect(textOf(resultFromTaskOutcome(outcome) as Record<string, unknown>)).toBe('answered after 0.2 s')
    } finally {
      await tasks.close()
    }
  })

  it('cancels a task through the library, which aborts the function', async () => {
    const tasks = await session()
    try {
      const before = await cancellationsSeen(served.url, 0)
      const execution = await tasks.callTool('report', { seconds: 30 })
      expect(execution.kind).toBe('task')
      await execution.cancel()
      expect(await cancellationsSeen(served.url, before + 1)).toBe(before + 1)
    } finally {
      await tasks.close()
    }
  })
})

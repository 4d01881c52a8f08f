/**
 * Task status notifications (`notifications/tasks` on `subscriptions/listen`)
 * of the MCP Tasks extension on /mcp at 2026-07-28, driven by a raw client
 * written from the extension's text: every request a fetch of its own, the
 * listen stream read event by event.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { contributeTaskFilterV2, isTaskStatusNotificationV2 } from '@modelcontextprotocol/ext-tasks/core/v2'
import { describe, expect, it } from 'vitest'
import { callerFrom } from '../../bridge/http/mcp-task-methods.ts'
import { TaskListens } from '../../bridge/http/mcp-task-notifications.ts'
import { MAX_WATCHERS_PER_TASK, TASKS_EXTENSION, type TaskOutcome, TaskStore } from '../../bridge/http/mcp-tasks.ts'
import { MODERN, type ModernCaller, modernClient, postModern } from '../support/mcp-modern-post.ts'
import { mcpServedInProcess } from '../support/in-process-runtime.ts'

const YML = fileURLToPath(new URL('../fixtures/mcp-long-calls/tasks.yml', import.meta.url))
const MISSING_CAPABILITY = -32021
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

type Message = Record<string, unknown> & {
  id?: number
  method?: string
  params?: Record<string, unknown>
  result?: Record<string, unknown>
  error?: { code: number; message: string; data?: unknown }
}

type As = Omit<ModernCaller, 'client'>

const post = (url: string, method: string, params: Record<string, unknown>, as: As = {}, signal?: AbortSignal) =>
  postModern(url, method, params, { ...as, defaultClient: 'notifications-test' }, signal)

/** A listen stream, read one message at a time; `next` is undefined once the stream has ended. */
interface Listening {
  id: number
  status: number
  contentType: string
  next(): Promise<Message | undefined>
  /** Every message still to come, until the stream ends. */
  rest(): Promise<Message[]>
  close(): void
}

async function listen(url: string, notifications: Record<string, unknown>, as?: As): Promise<Listening> {
  const abort = new AbortController()
  const { id, sent } = post(url, 'subscriptions/listen', { notifications }, as, abort.signal)
  const res = await sent
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffered = ''
  const next = async (): Promise<Message | undefined> => {
    for (;;) {
      const end = buffered.indexOf('\n\n')
      if (end >= 0) {
        const event = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
        if (data.length > 0) return JSON.parse(data.join('\n'))
        continue // a keep-alive comment
      }
      const { value, done } = await reader.read()
      if (done) return buffered.trim().startsWith('{') ? (JSON.parse(buffered) as Message) : undefined
      buffered += value
    }
  }
  return {
    id,
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    next: async () => {
      const message = await next()
      // Nothing after a JSON body.
      if (message !== undefined && !res.headers.get('content-type')?.startsWith('text/event-stream')) buffered = ''
      return message
    },
    rest: async () => {
      const all: Message[] = []
      for (let message = await next(); message !== undefined; message = await next()) all.push(message)
      return all
    },
    close: () => abort.abort(),
  }
}

const { request, call, settled } = modernClient<Message>('notifications-test')
const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0]!.text
/** A task as the notification carries it, without the notification's own _meta. */
const taskOf = ({ _meta, ...task }: Record<string, unknown>) => task
/** A task as tasks/get answers it, without what a result adds. */
const gotTask = ({ _meta, resultType, ...task }: Record<string, unknown>) => task

describe('MCP task status notifications (subscriptions/listen)', () => {
  const served = mcpServedInProcess(YML)

  it('acknowledges the task, sends it completed with its result as tasks/get has it, then ends the stream', async () => {
    const created = await call(served.url, 'report', { seconds: 0.3 })
    const taskId = created.result!.taskId as string
    const stream = await listen(served.url, { taskIds: [taskId] })
    expect(stream.status).toBe(200)
    expect(stream.contentType).toMatch(/^text\/event-stream/)
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] }, _meta: { [SUBSCRIPTION_ID]: stream.id } },
    })
    const notified = (await stream.next())!
    expect(notified.method).toBe('notifications/tasks')
    expect(notified.params).toMatchObject({ taskId, status: 'completed', _meta: { [SUBSCRIPTION_ID]: stream.id } })
    expect(textOf(notified.params!.result)).toBe('answered after 0.3 s')
    // The listen request's result ends the stream, and nothing comes after it.
    const last = (await stream.next())!
    expect(last).toMatchObject({ id: stream.id, result: { _meta: { [SUBSCRIPTION_ID]: stream.id } } })
    expect(await stream.next()).toBeUndefined()
    const got = await request(served.url, 'tasks/get', { taskId })
    expect(taskOf(notified.params!)).toEqual(gotTask(got.result!))
  })

  it('sends a cancelled task as cancelled', async () => {
    const created = await call(served.url, 'report', { seconds: 30 })
    const taskId = created.result!.taskId as string
    const stream = await listen(served.url, { taskIds: [taskId] })
    expect((await stream.next())?.params?.notifications).toEqual({ taskIds: [taskId] })
    expect((await request(served.url, 'tasks/cancel', { taskId })).error).toBeUndefined()
    const notified = (await stream.next())!
    expect(notified).toMatchObject({ method: 'notifications/tasks', params: { taskId, status: 'cancelled' } })
    expect(taskOf(notified.params!)).toEqual(gotTask((await request(served.url, 'tasks/get', { taskId })).result!))
    expect((await stream.rest()).map((message) => message.id)).toEqual([stream.id])
  })

  it("leaves another caller's task out of the acknowledgement and never sends it", async () => {
    const alice = { authorization: 'Bearer alice' }
    const mallory = { authorization: 'Bearer mallory' }
    const theirs = (await call(served.url, 'report', { seconds: 0.2 }, alice)).result!.taskId as string
    const mine = (await call(served.url, 'report', { seconds: 0.2 }, mallory)).result!.taskId as string
    const stream = await listen(served.url, { taskIds: [theirs, mine, crypto.randomUUID()] }, mallory)
    expect((await stream.next())?.params?.notifications).toEqual({ taskIds: [mine] })
    const rest = await stream.rest()
    expect(rest.filter((message) => message.method === 'notifications/tasks').map((m) => m.params!.taskId)).toEqual([
      mine,
    ])
    expect(JSON.stringify(rest)).not.toContain(theirs)
    // Naming none of its own: acknowledged with nothing, and ended.
    const none = await listen(served.url, { taskIds: [theirs] }, mallory)
    const messages = await none.rest()
    expect(messages[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: {} },
    })
    expect(messages.slice(1).map((message) => message.id)).toEqual([none.id])
    expect((await settled(served.url, theirs, alice)).result?.status).toBe('completed')
  })

  it('refuses task notifications to a client that does not declare the extension (-32021)', async () => {
    const taskId = (await call(served.url, 'report', { seconds: 0 })).result!.taskId as string
    const stream = await listen(served.url, { taskIds: [taskId] }, { tasks: false })
    const reply = (await stream.next())!
    expect(reply.id).toBe(stream.id)
    expect(reply.error?.code).toBe(MISSING_CAPABILITY)
    expect(reply.error?.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } })
  })

  it('sends a task already finished at once, and ends once the last task named has finished', async () => {
    const early = (await call(served.url, 'report', { seconds: 0 })).result!.taskId as string
    expect((await settled(served.url, early)).result?.status).toBe('completed')
    const late = (await call(served.url, 'report', { seconds: 0.5 })).result!.taskId as string
    const stream = await listen(served.url, { taskIds: [early, late, early] })
    expect((await stream.next())?.params?.notifications).toEqual({ taskIds: [early, late] })
    const rest = await stream.rest()
    const sent = rest.filter((message) => message.method === 'notifications/tasks').map((m) => m.params!)
    expect(sent.map((task) => [task.taskId, task.status])).toEqual([
      [early, 'completed'],
      [late, 'completed'],
    ])
    expect(rest.at(-1)).toMatchObject({ id: stream.id, result: {} })
  })

  it("reaches the SDK client's listen(), with the filter and notification shapes of @modelcontextprotocol/ext-tasks", async () => {
    const taskId = (await call(served.url, 'report', { seconds: 0.3 })).result!.taskId as string
    const client = new Client(
      { name: 'notifications-test', version: '1' },
      {
        capabilities: { extensions: { [TASKS_EXTENSION]: {} } } as never,
        versionNegotiation: { mode: { pin: MODERN } },
      },
    )
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url)))
    try {
      const received: unknown[] = []
      client.fallbackNotificationHandler = async (notification) => void received.push(notification)
      // The library has no listen call of its own: it contributes task ids to the client's filter.
      const { notifications } = contributeTaskFilterV2({}, [taskId])
      const subscription = await client.listen(notifications as never)
      expect(await subscription.closed).toBe('graceful')
      expect(received).toHaveLength(1)
      expect(isTaskStatusNotificationV2(received[0])).toBe(true)
      expect(received[0]).toMatchObject({ method: 'notifications/tasks', params: { taskId, status: 'completed' } })
    } finally {
      await client.close()
    }
  })

  it('refuses a malformed task list (-32602)', async () => {
    const stream = await listen(served.url, { taskIds: 'all' })
    const reply = (await stream.next())!
    expect(reply.error?.code).toBe(-32602)
  })
})

describe('task notification streams and the store', () => {
  const work = () => new Promise<never>(() => {})

  it('lets a stream closed early go: its watcher is released', async () => {
    const store = new TaskStore({ ttlMs: 1000, maxTasks: 10, pollIntervalMs: 1000 })
    // The caller the listen request below is, without a token.
    const caller = callerFrom('', { 'io.modelcontextprotocol/clientInfo': { name: 'notifications-test' } }, false)
    const task = store.create(caller, new AbortController(), work())!
    const listens = new TaskListens(store, {
      heartbeatMs: 60_000,
      serverInfo: { name: 'test', version: '1' },
      verified: false,
    })
    let body: unknown
    const server: Server = createServer((req, res) => {
      let text = ''
      req.on('data', (chunk) => void (text += chunk))
      req.on('end', () => {
        body = JSON.parse(text)
        void listens.serve(body as never, '', res)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const address = server.address() as AddressInfo
      const stream = await listen(`http://127.0.0.1:${address.port}/`, { taskIds: [task.taskId] })
      expect((await stream.next())?.params?.notifications).toEqual({ taskIds: [task.taskId] })
      expect(store.watchers).toBe(1)
      expect(listens.open).toBe(1)
      stream.close()
      const deadline = Date.now() + 10_000
      while ((store.watchers > 0 || listens.open > 0) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20))
      expect(store.watchers).toBe(0)
      expect(listens.open).toBe(0)
    } finally {
      listens.endAll()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('bounds the watchers of one task and of the store, and lets them go when the task finishes', async () => {
    const store = new TaskStore({ ttlMs: 1000, maxTasks: 20, pollIntervalMs: 1000 })
    let finish!: (outcome: TaskOutcome) => void
    const task = store.create('alice', new AbortController(), new Promise((resolve) => void (finish = resolve)))!
    const told: string[] = []
    const watched = []
    for (let i = 0; i < MAX_WATCHERS_PER_TASK; i++)
      watched.push(store.watch('alice', task.taskId, (changed) => told.push(changed.status)))
    expect(watched.every((watch) => watch?.task.status === 'working')).toBe(true)
    expect(store.watch('alice', task.taskId, () => {})).toBeUndefined()
    expect(store.watch('bob', task.taskId, () => {})).toBeUndefined()
    expect(store.watchers).toBe(MAX_WATCHERS_PER_TASK)
    // The store's bound: its maxTasks watchers in all.
    const other = store.create('alice', new AbortController(), work())!
    const more = [0, 1, 2, 3, 4].map(() => store.watch('alice', other.taskId, () => {}))
    expect(more.filter((watch) => watch !== undefined)).toHaveLength(20 - MAX_WATCHERS_PER_TASK)
    watched[0]!.stop()
    watched[0]!.stop()
    expect(store.watchers).toBe(19)
    finish({ status: 'completed', result: {} })
    await Promise.resolve()
    expect(told).toEqual(Array(MAX_WATCHERS_PER_TASK - 1).fill('completed'))
    expect(store.watchers).toBe(20 - MAX_WATCHERS_PER_TASK)
    // A finished task is given as it is, with nothing to watch.
    expect(store.watch('alice', task.taskId, () => {})?.task.status).toBe('completed')
    expect(store.watchers).toBe(20 - MAX_WATCHERS_PER_TASK)
  })
})

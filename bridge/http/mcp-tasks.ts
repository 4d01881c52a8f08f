/**
 * The tasks of the MCP Tasks extension (`io.modelcontextprotocol/tasks`),
 * held in this gateway's memory: a tool call that became a task runs on
 * here, and its client asks for it with `tasks/get` in later requests.
 *
 * Each task belongs to the caller that started it; any other caller is told
 * it does not exist, as for an id never given out. Ids are random UUIDs, so
 * they cannot be guessed. A finished task is kept `ttlMs` after it finished,
 * then forgotten. At most `maxTasks` are held: when that many are, no new
 * task is made (the caller runs its call as an ordinary one) until one
 * expires. No timer runs: expired tasks are dropped when they are asked for
 * or when room is needed.
 *
 * A running task can be watched (`watch`): its watchers are told of the
 * change when it finishes or is cancelled, then dropped, as a finished task
 * changes no more. At most `MAX_WATCHERS_PER_TASK` watch one task, and at
 * most `maxTasks` watch in all.
 */
import { randomUUID } from 'node:crypto'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

export interface TaskLimits {
  /** How long a finished task's result is kept (ms). */
  ttlMs: number
  /** Tasks held at once, running and finished. */
  maxTasks: number
  /** How often a client is asked to poll (ms). */
  pollIntervalMs: number
}

/** How a task's work ended: a result (errors a model reads included), or a JSON-RPC error. */
export type TaskOutcome =
  | { status: 'completed'; result: Record<string, unknown> }
  | { status: 'failed'; error: { code: number; message: string } }

type Status = 'working' | 'completed' | 'failed' | 'cancelled'

/** Watchers of one task at most (status notification streams naming it). */
export const MAX_WATCHERS_PER_TASK = 16

/** Told of a task's state, as `get` answers it, when its status changes. */
export type TaskWatcher = (task: WireTask) => void

interface Held {
  taskId: string
  owner: string
  status: Status
  createdAt: number
  lastUpdatedAt: number
  /** Infinity while it runs: a running task is never dropped. */
  expiresAt: number
  controller: AbortController
  outcome?: TaskOutcome
  /** Told when the task finishes; empty once it has. */
  watchers: Set<TaskWatcher>
}

/** A task as the wire carries it (the Task shape, with its result or error once it has one). */
export type WireTask = Record<string, unknown> & { taskId: string; status: Status }

export class TaskStore {
  readonly #tasks = new Map<string, Held>()
  readonly #limits: TaskLimits
  readonly #now: () => number
  #watching = 0

  constructor(limits: TaskLimits, now: () => number = Date.now) {
    this.#limits = limits
    this.#now = now
  }

  get size(): number {
    return this.#tasks.size
  }

  /** Watchers registered, across every task. */
  get watchers(): number {
    return this.#watching
  }

  /**
   * A new task for `owner` whose work is `work`; `controller` is aborted if
   * it is cancelled. Undefined when the store is full even after dropping the
   * expired ones.
   */
  create(owner: string, controller: AbortController, work: Promise<TaskOutcome>): WireTask | undefined {
    if (this.#tasks.size >= this.#limits.maxTasks) this.#dropExpired()
    if (this.#tasks.size >= this.#limits.maxTasks) return undefined
    const now = this.#now()
    const held: Held = {
      taskId: randomUUID(),
      owner,
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      expiresAt: Number.POSITIVE_INFINITY,
      controller,
      watchers: new Set(),
    }
    this.#tasks.set(held.taskId, held)
    void work.then((outcome) => {
      // A cancelled task stays cancelled, whatever its work did after.
      if (held.status !== 'working') return
      held.status = outcome.status
      held.outcome = outcome
      this.#finish(held)
    })
    return this.#wire(held)
  }

  /** The task as `tasks/get` answers it; undefined when unknown, another caller's, or expired. */
  get(owner: string, taskId: string): WireTask | undefined {
    const held = this.#find(owner, taskId)
    return held && this.#wire(held)
  }

  /** Cancels a running task (its work's signal is aborted); false when there is no such task. */
  cancel(owner: string, taskId: string): boolean {
    const held = this.#find(owner, taskId)
    if (held === undefined) return false
    if (held.status === 'working') {
      held.status = 'cancelled'
      this.#finish(held)
      held.controller.abort(new Error('the task was cancelled'))
    }
    return true
  }

  /**
   * The task as `get` answers it, and while it runs, `watcher` registered to
   * be told once its status changes; `stop` unregisters it (and does nothing
   * once the task has finished). Undefined when there is no such task, and
   * for a running task when it, or the store, has as many watchers as it takes.
   */
  watch(owner: string, taskId: string, watcher: TaskWatcher): { task: WireTask; stop: () => void } | undefined {
    const held = this.#find(owner, taskId)
    if (held === undefined) return undefined
    const task = this.#wire(held)
    if (held.status !== 'working') return { task, stop: () => {} }
    if (held.watchers.size >= MAX_WATCHERS_PER_TASK || this.#watching >= this.#limits.maxTasks) return undefined
    // One registration per call, even for a function already watching.
    const registered: TaskWatcher = (changed) => watcher(changed)
    held.watchers.add(registered)
    this.#watching++
    return {
      task,
      stop: () => {
        if (held.watchers.delete(registered)) this.#watching--
      },
    }
  }

  /** Whether `owner` has a task of this id. */
  has(owner: string, taskId: string): boolean {
    return this.#find(owner, taskId) !== undefined
  }

  /** Cancels every running task and forgets them all: the gateway is stopping. */
  close(): void {
    for (const held of this.#tasks.values()) {
      held.watchers.clear()
      held.controller.abort(new Error('toolbridge stopped'))
    }
    this.#tasks.clear()
    this.#watching = 0
  }

  #find(owner: string, taskId: string): Held | undefined {
    const held = this.#tasks.get(taskId)
    if (held === undefined || held.owner !== owner) return undefined
    if (held.expiresAt <= this.#now()) {
      this.#tasks.delete(taskId)
      return undefined
    }
    return held
  }

  /** The task has just finished or been cancelled: its watchers are told, then let go. */
  #finish(held: Held): void {
    held.lastUpdatedAt = this.#now()
    held.expiresAt = held.lastUpdatedAt + this.#limits.ttlMs
    const watchers = [...held.watchers]
    this.#watching -= watchers.length
    held.watchers.clear()
    for (const watcher of watchers) {
      try {
        watcher(this.#wire(held))
      } catch {
        // One watcher's failure is its own: the others are told, and the cancel or result goes on.
      }
    }
  }

  #dropExpired(): void {
    const now = this.#now()
    for (const [id, held] of this.#tasks) if (held.expiresAt <= now) this.#tasks.delete(id)
  }

  #wire(held: Held): WireTask {
    // ttlMs counts from creation; while the task runs it covers the run so far plus the time a result is kept.
    const until = held.status === 'working' ? this.#now() + this.#limits.ttlMs : held.expiresAt
    const outcome = held.outcome
    return {
      taskId: held.taskId,
      status: held.status,
      createdAt: new Date(held.createdAt).toISOString(),
      lastUpdatedAt: new Date(held.lastUpdatedAt).toISOString(),
      ttlMs: until - held.createdAt,
      pollIntervalMs: this.#limits.pollIntervalMs,
      ...(outcome?.status === 'completed' ? { result: outcome.result } : {}),
      ...(outcome?.status === 'failed' ? { error: outcome.error, statusMessage: outcome.error.message } : {}),
      ...(held.status === 'cancelled' ? { statusMessage: 'cancelled by its caller' } : {}),
    }
  }
}

/**
 * Inside a worker thread: one execution environment of one function, like a
 * Lambda sandbox. Module state persists between invocations. The main thread
 * (local.ts) sends it one invocation at a time, or with the function's
 * `invocationsPerWorker` several; this side runs whatever it is sent.
 *
 * The messages both ways are defined here and nowhere else. Invocations
 * and their ends travel in batches: with several in flight, one message per
 * turn of the event loop instead of one per invocation, since each message
 * may wake a sleeping thread, the main cost of a call through a worker.
 */
import { getHeapStatistics } from 'node:v8'
import { parentPort, workerData } from 'node:worker_threads'
import { messageOf } from '../../shared/errors.ts'
import { ChunkSender } from './chunk-credit.ts'
import {
  describeError,
  lambdaContext,
  loadHandler,
  runHandler,
  StreamTooLarge,
  type LambdaHandler,
} from './run-handler.ts'

export interface WorkerSetup {
  baseDir: string
  handler: string
  functionName: string
  maxStreamBytes: number
  /** The bridge's compile cache, if it has one (worker-entry.js). */
  compileCacheDir: string | undefined
  /** Whether the function has a memorySize to hold its off-heap memory to: only then is it measured. */
  measureOffHeap: boolean
}

/** One invocation as sent to a worker; `id` names it in every message about it. */
export interface WorkerCall {
  id: number
  requestId: string
  timeoutMs: number
  event: unknown
}

export type ToWorker =
  | { type: 'invoke'; calls: WorkerCall[] }
  /** The main thread took one chunk message of this invocation (chunk-credit.ts). */
  | { type: 'credit'; id: number }
  /** These invocations timed out and were answered: stop their streams, drop their results, confirm. */
  | { type: 'cancel'; ids: number[] }

export type InvocationEnd = { id: number } & (
  | { type: 'done'; text: string }
  | { type: 'error'; errorType: string; errorMessage: string }
  | { type: 'too-large'; message: string }
)

export type FromWorker =
  | { type: 'ready'; heapLimitBytes: number }
  | { type: 'load-error'; message: string }
  | { type: 'chunk'; id: number; text: string }
  /** How invocations ended, with the Buffer/ArrayBuffer bytes the environment still holds after them (0: not measured). */
  | { type: 'ended'; ends: InvocationEnd[]; arrayBufferBytes: number }
  /** The invocations of a `cancel`, given up: the worker's event loop is turning. */
  | { type: 'cancelled'; ids: number[] }

const port = parentPort!
const setup = workerData as WorkerSetup
const send = (message: FromWorker) => port.postMessage(message)

let handler: LambdaHandler
try {
  handler = await loadHandler(setup.baseDir, setup.handler)
  send({ type: 'ready', heapLimitBytes: getHeapStatistics().heap_size_limit })
} catch (err) {
  send({ type: 'load-error', message: messageOf(err) })
}

interface Active {
  chunks: ChunkSender
  /** Aborted when the main thread gave the invocation up (timeout): its stream is closed at the next chunk. */
  abort: AbortController
}
const active = new Map<number, Active>()

/** Ends waiting to be sent: those that finish in one turn of the event loop go in one message. */
let ends: InvocationEnd[] = []
let flushing = false

function flushEnds(): void {
  flushing = false
  if (ends.length === 0) return
  // Off-heap memory has no limit of its own in a worker: the main thread compares this with memorySize.
  // process.memoryUsage() costs several µs a call, so only a function with a limit pays for it, once a batch.
  send({ type: 'ended', ends, arrayBufferBytes: setup.measureOffHeap ? process.memoryUsage().arrayBuffers : 0 })
  ends = []
}

function ended(end: InvocationEnd): void {
  if (!active.delete(end.id)) return // given up by the main thread: it has answered already
  ends.push(end)
  if (active.size === 0)
    flushEnds() // nothing else can end in this turn: no reason to wait
  else if (!flushing) {
    flushing = true
    setImmediate(flushEnds)
  }
}

async function invoke(call: WorkerCall): Promise<void> {
  const { id } = call
  const running: Active = {
    chunks: new ChunkSender((text) => send({ type: 'chunk', id, text })),
    abort: new AbortController(),
  }
  active.set(id, running)
  const context = lambdaContext(setup.functionName, call.requestId, call.timeoutMs)
  let end: InvocationEnd
  try {
    const text = await runHandler(handler, call.event, context, (chunk) => running.chunks.send(chunk), {
      maxStreamBytes: setup.maxStreamBytes,
      signal: running.abort.signal,
    })
    end = { id, type: 'done', text }
  } catch (err) {
    end =
      err instanceof StreamTooLarge
        ? { id, type: 'too-large', message: err.message }
        : { id, type: 'error', ...describeError(err) }
  }
  if (!running.abort.signal.aborted) await running.chunks.flush() // the chunks before the end
  ended(end)
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'invoke':
      for (const call of message.calls) void invoke(call)
      return
    case 'credit':
      return active.get(message.id)?.chunks.credited()
    case 'cancel':
      for (const id of message.ids) {
        const running = active.get(id)
        active.delete(id)
        running?.abort.abort()
        running?.chunks.credited() // a stream waiting for credit wakes up, sees the abort and stops
      }
      if (active.size === 0) flushEnds()
      return send({ type: 'cancelled', ids: message.ids })
  }
})

/**
 * Inside a worker thread: one execution environment of one function, like a
 * Lambda sandbox. Module state persists between invocations; one invocation
 * runs at a time.
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
  /** Whether the function has a memorySize to hold its off-heap memory to: only then is it measured after each call. */
  measureOffHeap: boolean
}

export type ToWorker =
  | {
      type: 'invoke'
      requestId: string
      timeoutMs: number
      event: unknown
      /** The invocation span's W3C headers, when tracing is on: the handler's context.clientContext.Custom. */
      traceHeaders?: Readonly<Record<string, string>>
    }
  /** The main thread took one chunk message (chunk-credit.ts). */
  | { type: 'credit' }

type InvocationEnd =
  | { type: 'done'; text: string }
  | { type: 'error'; errorType: string; errorMessage: string }
  | { type: 'too-large'; message: string }

export type FromWorker =
  | { type: 'ready'; heapLimitBytes: number }
  | { type: 'load-error'; message: string }
  | { type: 'chunk'; text: string }
  /** How an invocation ended, with the Buffer/ArrayBuffer bytes the environment still holds after it. */
  | (InvocationEnd & { arrayBufferBytes: number })

const port = parentPort!
const setup = workerData as WorkerSetup
const send = (message: FromWorker) => port.postMessage(message)
const chunks = new ChunkSender((text) => send({ type: 'chunk', text }))

let handler: LambdaHandler
try {
  handler = await loadHandler(setup.baseDir, setup.handler)
  send({ type: 'ready', heapLimitBytes: getHeapStatistics().heap_size_limit })
} catch (err) {
  send({ type: 'load-error', message: messageOf(err) })
}

async function invoke(message: Extract<ToWorker, { type: 'invoke' }>): Promise<void> {
  const context = lambdaContext(setup.functionName, message.requestId, message.timeoutMs, message.traceHeaders)
  let ended: InvocationEnd
  try {
    const text = await runHandler(handler, message.event, context, (chunk) => chunks.send(chunk), {
      maxStreamBytes: setup.maxStreamBytes,
    })
    ended = { type: 'done', text }
  } catch (err) {
    ended =
      err instanceof StreamTooLarge
        ? { type: 'too-large', message: err.message }
        : { type: 'error', ...describeError(err) }
  }
  await chunks.flush()
  // Off-heap memory has no limit of its own in a worker: the main thread compares this with memorySize.
  // process.memoryUsage() costs several µs a call, so only a function with a limit pays for it.
  send({ ...ended, arrayBufferBytes: setup.measureOffHeap ? process.memoryUsage().arrayBuffers : 0 })
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'credit') chunks.credited()
  else void invoke(message)
})

/**
 * Inside a worker thread: one execution environment of one function, like a
 * Lambda sandbox. Module state persists between invocations. By default it
 * runs one invocation at a time, in the order the main thread (worker-thread-invoker.ts)
 * sent them; those sent while one runs wait in line, and the main thread
 * may take back any that has not started (line-claims.ts). With the
 * function's `invocationsPerWorker`, it runs whatever it is sent at once.
 * Messages: worker-messages.ts.
 */
import { existsSync } from 'node:fs'
import { getHeapStatistics } from 'node:v8'
import { parentPort, workerData } from 'node:worker_threads'
import { ChunkSender } from './chunk-credit.ts'
import { type FunctionLogLevel, withFunctionConsole } from '../function-console.ts'
import { LineClaims } from './line-claims.ts'
import { describeLoadError } from '../load-error.ts'
import { loadFromSources } from './pinned-sources.ts'
import {
  describeError,
  lambdaContext,
  loadHandler,
  runHandler,
  StreamTooLarge,
  type LambdaHandler,
} from '../run-handler.ts'
import {
  post,
  read,
  type FromWorker,
  type InvocationEnd,
  type Posted,
  type ToWorker,
  type WorkerCall,
  type WorkerSetup,
} from './worker-messages.ts'

const port = parentPort!
const setup = workerData as WorkerSetup
const send = (message: FromWorker) => port.postMessage(post(message))

let handler: LambdaHandler
try {
  const sources = setup.sources
  if (sources) loadFromSources(sources)
  handler = await loadHandler(
    setup.baseDir,
    setup.handler,
    sources && ((file) => Object.hasOwn(sources, file) || existsSync(file)),
  )
  send({ type: 'ready', heapLimitBytes: getHeapStatistics().heap_size_limit })
} catch (err) {
  send({ type: 'load-error', message: describeLoadError(err) })
}

interface Active {
  chunks: ChunkSender
  /** Aborted when the main thread gave the invocation up (timeout): its stream is closed at the next chunk. */
  abort: AbortController
}
const active = new Map<number, Active>()

/**
 * Buffer and ArrayBuffer bytes this environment holds, for the main thread to compare with memorySize
 * (off-heap memory has no limit of its own in a worker); 0 when under it, or without a memorySize.
 * process.memoryUsage() reads /proc/self/stat for the RSS it also gives (~6 µs and three system calls
 * a batch, measured), so V8's count of external memory, which includes those bytes and costs ~0.8 µs,
 * is read first: only an environment over its limit by that count pays for the exact one.
 */
function offHeapBytes(): number {
  const limit = setup.offHeapLimitBytes
  if (limit === undefined || getHeapStatistics().external_memory <= limit) return 0
  return process.memoryUsage().arrayBuffers
}

/** Present when it runs invocations one at a time, in order. */
const claims = setup.claims && new LineClaims(setup.claims)
/** Invocations waiting in line, oldest first; in `active` already, so that a caller's abort reaches them. */
const line: WorkerCall[] = []
let runningInOrder = false
/** It kept more Buffer memory than its memorySize: it starts nothing more and waits to be ended. */
let halted = false

function inLine(calls: WorkerCall[]): void {
  for (const call of calls) {
    line.push(call)
    track(call.id)
  }
  if (!runningInOrder && !halted) startNext()
}

function startNext(): void {
  for (let call = line.shift(); call; call = line.shift()) {
    if (!claims!.start(call.id)) {
      active.delete(call.id) // taken back by the main thread, for another worker
      continue
    }
    runningInOrder = true
    return void invoke(call)
  }
  runningInOrder = false
}

/** Ends waiting to be sent: those that finish in one turn of the event loop go in one message. */
let ends: InvocationEnd[] = []
let flushing = false

function flushEnds(): void {
  flushing = false
  if (ends.length === 0) return
  send({ type: 'ended', ends, arrayBufferBytes: offHeapBytes() })
  ends = []
}

function ended(end: InvocationEnd): void {
  if (!active.delete(end.id)) return // given up by the main thread: it has answered already
  if (claims) {
    // Posted before the next starts: should that one kill the worker, the main thread knows this one had ended.
    const arrayBufferBytes = offHeapBytes()
    send({ type: 'ended', ends: [end], arrayBufferBytes })
    halted = arrayBufferBytes > (setup.offHeapLimitBytes ?? Number.POSITIVE_INFINITY)
    return halted ? undefined : startNext()
  }
  ends.push(end)
  if (active.size === 0)
    flushEnds() // nothing else can end in this turn: no reason to wait
  else if (!flushing) {
    flushing = true
    setImmediate(flushEnds)
  }
}

function track(id: number): Active {
  const running: Active = {
    chunks: new ChunkSender((text) => send({ type: 'chunk', id, text })),
    abort: new AbortController(),
  }
  active.set(id, running)
  return running
}

async function invoke(call: WorkerCall): Promise<void> {
  const { id } = call
  const running = active.get(id) ?? track(id)
  // Aborted when the caller cancels, and when the main thread gives the invocation up.
  const context = lambdaContext(
    setup.functionName,
    call.requestId,
    call.timeoutMs,
    running.abort.signal,
    call.traceHeaders,
  )
  let end: InvocationEnd
  const started = performance.now()
  const us = () => Math.round((performance.now() - started) * 1000)
  try {
    const onLog = call.logs
      ? (level: FunctionLogLevel, text: string) => send({ type: 'log', id, level, text })
      : undefined
    const text = await withFunctionConsole(onLog, () =>
      runHandler(handler, call.event, context, (chunk) => running.chunks.send(chunk), {
        maxStreamBytes: setup.maxStreamBytes,
        signal: running.abort.signal,
      }),
    )
    end = { id, us: us(), type: 'done', text }
  } catch (err) {
    end =
      err instanceof StreamTooLarge
        ? { id, us: us(), type: 'too-large', message: err.message }
        : { id, us: us(), type: 'error', ...describeError(err) }
  }
  if (!running.abort.signal.aborted) await running.chunks.flush() // the chunks before the end
  ended(end)
}

port.on('message', (posted: Posted<ToWorker>) => {
  const message = read(posted)
  switch (message.type) {
    case 'invoke':
      if (claims) return inLine(message.calls)
      for (const call of message.calls) void invoke(call)
      return
    case 'credit':
      return active.get(message.id)?.chunks.credited()
    case 'abort': {
      const running = active.get(message.id)
      running?.abort.abort()
      return running?.chunks.credited() // a stream waiting for credit wakes up and sees the abort
    }
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

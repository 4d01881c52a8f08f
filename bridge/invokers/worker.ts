/**
 * Inside a worker thread: one execution environment of one function, like a
 * Lambda sandbox. Module state persists between invocations; one invocation
 * runs at a time.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { describeError, lambdaContext, loadHandler, type LambdaHandler } from './run-handler.ts'
import { runHandler } from './run-handler.ts'
import { messageOf } from '../../shared/errors.ts'

export interface WorkerSetup {
  baseDir: string
  handler: string
  functionName: string
}

export type ToWorker = { type: 'invoke'; requestId: string; timeoutMs: number; event: unknown }

export type FromWorker =
  | { type: 'ready' }
  | { type: 'load-error'; message: string }
  | { type: 'chunk'; text: string }
  | { type: 'done'; text: string }
  | { type: 'error'; errorType: string; errorMessage: string }

const port = parentPort!
const setup = workerData as WorkerSetup
const send = (message: FromWorker) => port.postMessage(message)

let handler: LambdaHandler
try {
  handler = await loadHandler(setup.baseDir, setup.handler)
  send({ type: 'ready' })
} catch (err) {
  send({ type: 'load-error', message: messageOf(err) })
}

port.on('message', async (message: ToWorker) => {
  const context = lambdaContext(setup.functionName, message.requestId, message.timeoutMs)
  try {
    const text = await runHandler(handler, message.event, context, (chunk) => send({ type: 'chunk', text: chunk }))
    send({ type: 'done', text })
  } catch (err) {
    send({ type: 'error', ...describeError(err) })
  }
})

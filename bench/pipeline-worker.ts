/**
 * One worker thread of the `pipeline-in-workers` setup (pipeline-workers.ts):
 * a whole bridge runtime on a connection of its own, serving one service
 * with the function in process, until the main thread says `stop`.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { startRuntime } from '../bridge/runtime.ts'
import type { FromPipelineWorker, PipelineWorkerSetup } from './pipeline-workers.ts'

const port = parentPort!
const send = (message: FromPipelineWorker) => port.postMessage(message)
const { project, spec, settings } = workerData as PipelineWorkerSetup

try {
  const runtime = await startRuntime({ ...project, services: [spec] }, settings)
  port.on('message', async () => {
    await runtime.stop()
    send({ type: 'stopped' })
  })
  send({ type: 'started' })
} catch (err) {
  send({ type: 'failed', message: (err as Error).message })
}

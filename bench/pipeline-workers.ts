/**
 * The `pipeline-in-workers` setup of the broker benches, a prototype of a
 * design for running functions off the main thread: the whole bridge inside
 * each of a few worker threads (bench/pipeline-worker.ts), each with its
 * own broker connection consuming the same request queue and running the
 * function in process, so that no request crosses a thread. The main
 * thread only starts and stops them. One worker per core at most
 * (BENCH_PIPELINE_WORKERS), and no more than the requests in flight; the in-flight level is split between
 * them as their services' concurrency.
 *
 * It measures what the design would cost, not the design: nothing here
 * watches a worker's calls for a timeout, holds a function to its
 * memorySize or answers the request a killed worker held.
 */
import { Worker } from 'node:worker_threads'
import { CORES } from '../bridge/invokers/worker-threads/worker-pool.ts'
import type { Settings } from '../bridge/project/settings.ts'
import type { Project } from '../bridge/project/project.ts'
import type { ToolServiceSpec } from '../bridge/project/tool-services.ts'
import { numberEnv } from './env-settings.ts'

/** BENCH_PIPELINE_WORKERS: how many workers at most (default: one per core). */
const WORKERS = Math.floor(numberEnv('BENCH_PIPELINE_WORKERS', CORES, 1))

export interface PipelineWorkerSetup {
  project: Project
  spec: ToolServiceSpec
  settings: Settings
}

export type FromPipelineWorker = { type: 'started' } | { type: 'stopped' } | { type: 'failed'; message: string }

/** Starts the workers for `inFlight` requests at once; resolves to their stop once every one serves. */
export async function startPipelineWorkers(
  project: Project,
  spec: ToolServiceSpec,
  settings: Settings,
  inFlight: number,
): Promise<() => Promise<void>> {
  const count = Math.max(1, Math.min(WORKERS, inFlight))
  const workers = Array.from({ length: count }, (_, i) => {
    const concurrency = Math.floor(inFlight / count) + (i < inFlight % count ? 1 : 0)
    const setup: PipelineWorkerSetup = { project, spec: { ...spec, concurrency }, settings }
    return new Worker(new URL('./pipeline-worker.ts', import.meta.url), { workerData: setup })
  })
  const said = (worker: Worker, type: FromPipelineWorker['type']) =>
    new Promise<void>((resolve, reject) => {
      worker.on('message', (message: FromPipelineWorker) => {
        if (message.type === 'failed') reject(new Error(`a pipeline worker failed: ${message.message}`))
        else if (message.type === type) resolve()
      })
      worker.once('error', reject)
      worker.once('exit', (code) => reject(new Error(`a pipeline worker exited (${code}) before it said ${type}`)))
    })
  await Promise.all(workers.map((worker) => said(worker, 'started')))
  return async () => {
    const stopped = workers.map((worker) => said(worker, 'stopped'))
    for (const worker of workers) worker.postMessage('stop')
    await Promise.all(stopped)
    await Promise.all(workers.map((worker) => worker.terminate()))
  }
}

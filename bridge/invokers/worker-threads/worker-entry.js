// The script a worker thread starts with (local.ts); it runs worker.ts. Plain
// JavaScript so that Node's compile cache is on before the first TypeScript
// module: with the bridge's cache directory, a worker neither loads the type
// stripper nor strips worker.ts and the handler again, which halves what a
// worker costs in memory and start-up time.
import { enableCompileCache } from 'node:module'
import { workerData } from 'node:worker_threads'

if (workerData.compileCacheDir) enableCompileCache(workerData.compileCacheDir)
await import('./worker.ts')

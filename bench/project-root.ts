/**
 * Where the project is, for the benches: serverless.yml, the results and the
 * commands they start are found from here. Every bench that runs the bridge
 * or its invokers loads this file, so it is also where node's compile cache
 * is turned on, as the toolbridge bin does.
 */
import { enableCompileCache } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

// As the toolbridge bin does (bridge/cli/toolbridge.js): worker threads then start from the compile cache.
enableCompileCache()

/** The project's root directory. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

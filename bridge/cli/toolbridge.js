#!/usr/bin/env node
// The `toolbridge` command. Plain JavaScript so that Node's compile cache is on
// before the first TypeScript file is read: with it, the type-stripped source of
// every module is kept on disk (in the OS temp directory, or NODE_COMPILE_CACHE)
// and later runs skip loading the type stripper and stripping again.
import { enableCompileCache } from 'node:module'

/**
 * `toolbridge start` runs for days: it is started again in the same process
 * (execve: same pid, no second process) with a small young generation and
 * two malloc arenas, both fixed when a process starts. V8's default young
 * generation (up to 64 MB on the main thread) and glibc's arena per thread
 * (worker threads) are what made its RSS grow by 100 MB under load, for no
 * gain in throughput on a service that keeps little alive between
 * requests. A user's own --max-semi-space-size (in the command line or
 * NODE_OPTIONS) or MALLOC_ARENA_MAX is kept; other commands exit within a
 * second and start as they are.
 */
const SEMI_SPACE_MB = 1
const userSetsYoung = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) =>
  a.includes('--max-semi-space-size'),
)
if (process.argv.slice(2).includes('start') && !userSetsYoung && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, `--max-semi-space-size=${SEMI_SPACE_MB}`, ...process.execArgv, ...process.argv.slice(1)],
    { MALLOC_ARENA_MAX: '2', ...process.env },
  )
}

enableCompileCache()
const { run } = await import('./main.ts')
await run()

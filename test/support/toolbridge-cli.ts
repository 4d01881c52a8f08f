/** `toolbridge ...args` from this checkout's sources as a child process, for tests of a whole command. */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { cleanEnv } from './clean-env.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs from the checkout without TOOLBRIDGE_* settings; `timeoutMs` is a fail-safe against a hung child. */
export function runToolbridge(args: string[], timeoutMs: number): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bridge/cli/main.ts', ...args],
      { cwd: ROOT, env: cleanEnv(), timeout: timeoutMs },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

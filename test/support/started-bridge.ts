/**
 * `toolbridge start` in a child process, for the tests that need the whole
 * command as a user runs it: its output kept as it comes, a line awaited
 * once printed, and an end that waits for the process to be gone.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Kills a child a test forgot or that hangs: a fail-safe, not a limit on how fast it must be. */
const FAIL_SAFE_MS = 120_000
/** The line `start` prints once it serves HTTP, with the address in the first group. */
const SERVING_HTTP = /^ {2}HTTP: (http:\/\/[^/\s]+)\/tools\b/m

export interface StartedBridgeOptions {
  /** The command's file (default bridge/cli/main.ts; bridge/cli/toolbridge.js is the launcher users run). */
  entry?: string
  /** Options for node before the file. */
  nodeArgs?: string[]
  /** Variables on top of this process's, which reach the child without its TOOLBRIDGE_* ones. */
  env?: Record<string, string>
  /** More of this process's variables kept from the child. */
  unset?: string[]
}

export class StartedBridge {
  readonly child: ChildProcessByStdio<null, Readable, Readable>
  stdout = ''
  stderr = ''
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  private gone = false

  /** `args` follow the command's file: global options, `start`, its options. */
  constructor(args: string[], options: StartedBridgeOptions = {}) {
    const { entry = 'bridge/cli/main.ts', nodeArgs = [], env = {}, unset = [] } = options
    const inherited = Object.entries(process.env).filter(
      ([key]) => !key.startsWith('TOOLBRIDGE_') && !unset.includes(key),
    )
    this.child = spawn(process.execPath, [...nodeArgs, entry, ...args], {
      cwd: ROOT,
      env: { ...Object.fromEntries(inherited), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: FAIL_SAFE_MS,
    })
    this.child.stdout.setEncoding('utf8').on('data', (text: string) => (this.stdout += text))
    this.child.stderr.setEncoding('utf8').on('data', (text: string) => (this.stderr += text))
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.gone = true
        resolve({ code, signal })
      }),
    )
  }

  get running(): boolean {
    return !this.gone
  }

  /** The first match of `pattern` in what it printed on stdout, once there; rejects if it exits first. */
  printed(pattern: RegExp): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const match = pattern.exec(this.stdout)
        if (!match) return false
        this.child.stdout.off('data', look)
        resolve(match)
        return true
      }
      if (look()) return
      this.child.stdout.on('data', look)
      void this.exited.then(({ code, signal }) =>
        reject(
          new Error(
            `toolbridge start exited (${code ?? signal}) before printing ${pattern}:\n${this.stdout}${this.stderr}`,
          ),
        ),
      )
    })
  }

  /** Its HTTP address (http://127.0.0.1:port), once it prints that it serves. */
  async url(): Promise<string> {
    return (await this.printed(SERVING_HTTP))[1]!
  }

  /** Ends it (SIGKILL unless told otherwise) and waits until it is gone. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.running) this.child.kill(signal)
    await this.exited
  }
}

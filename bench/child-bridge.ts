/**
 * `toolbridge start` in a child process, started as users start it, for the
 * benches that measure the command itself (its memory, its CPU, a soak)
 * rather than a runtime inside the bench's own process.
 */
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { envWithoutToolbridgeSettings } from './child-processes.ts'
import { ROOT } from './project-root.ts'

/** A `toolbridge start` in a child process, serving HTTP. */
export interface ChildBridge {
  pid: number
  /** Its HTTP address, as it printed it. */
  url: string
  /** SIGTERM, then the serverless.yml written for it is removed. */
  stop(): Promise<void>
}

/**
 * Runs `toolbridge start` as users run it (through the command, with the
 * settings it starts with) on `yml`, HTTP on a free port, in the repository,
 * without the TOOLBRIDGE_* variables of this shell; resolves once it prints
 * where it serves HTTP. `yml` is removed when it stops.
 */
export async function startChildBridge(options: {
  yml: string
  invoker: string
  /** Default: the embedded broker. */
  broker?: string
  /** Options for node before the command. */
  nodeArgs?: string[]
  /** More options of `toolbridge start`. */
  startArgs?: string[]
}): Promise<ChildBridge> {
  const { yml, invoker, broker, nodeArgs = [], startArgs = [] } = options
  const args = [
    ...nodeArgs,
    'bridge/cli/toolbridge.js',
    '-c',
    yml,
    'start',
    ...(broker === undefined ? [] : ['--broker', broker]),
    '--invoker',
    invoker,
    '--port',
    '0',
    '--log-level',
    'warn',
    ...startArgs,
  ]
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: envWithoutToolbridgeSettings(),
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString()
      const match = /HTTP: (http:\/\/[^/\s]+)\/tools/.exec(out)
      if (match) resolveUrl(match[1]!)
    })
    child.once('exit', (code) => reject(new Error(`toolbridge start exited (${code}):\n${out}`)))
  })
  return {
    pid: child.pid!,
    url,
    stop: () =>
      new Promise<void>((done) => {
        child.once('exit', () => done())
        child.kill('SIGTERM')
      }).finally(() => rmSync(yml, { force: true })),
  }
}

/**
 * What the benches do with the processes they start beside their own: give
 * them this shell's environment without its TOOLBRIDGE_* settings, so that a
 * bridge in one starts as users start it, and stop a forked one by asking,
 * killing it when it does not go in time.
 */
import type { ChildProcess, Serializable } from 'node:child_process'

/** This process's environment without its TOOLBRIDGE_* variables. */
export function envWithoutToolbridgeSettings(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))
}

/**
 * Sends `stop` to a forked child and resolves once it has exited; one still
 * there after `killAfterMs` (a connection it cannot close) is killed.
 */
export async function stopForkedChild(child: ChildProcess, stop: Serializable, killAfterMs: number): Promise<void> {
  if (child.exitCode !== null) return
  const gone = new Promise<void>((done) => child.once('exit', () => done()))
  child.send(stop)
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs)
  await gone.finally(() => clearTimeout(killer))
}

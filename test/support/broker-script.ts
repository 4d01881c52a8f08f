/**
 * What the Kafka and Pulsar test brokers share: each is run by a script of
 * the project (scripts/kafka.sh, scripts/pulsar.sh) that can say whether
 * one is running, start one and stop it. The tests reuse a running broker
 * (CI starts them first) and stop only one they started.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
/** Resolving the jars the first time, then starting: generous. */
const SCRIPT_TIMEOUT_MS = 300_000

export function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, command)))
}

/** Runs scripts/<name>.sh with a command; rejects with its output when it fails. */
export function brokerScript<C extends string>(name: string) {
  const script = fileURLToPath(new URL(`../../scripts/${name}.sh`, import.meta.url))
  return async (command: C, env: Record<string, string> = {}): Promise<string> => {
    try {
      const { stdout } = await run(script, [command], {
        timeout: SCRIPT_TIMEOUT_MS,
        env: { ...process.env, ...env },
      })
      return stdout
    } catch (err) {
      const e = err as Error & { stdout?: string; stderr?: string }
      throw new Error(`scripts/${name}.sh ${command} failed: ${(e.stderr || e.stdout || e.message).trim()}`)
    }
  }
}

export interface ScriptBroker {
  /** Whether these tests started it (and so stop it). */
  startedHere: boolean
  stop(): Promise<void>
}

/** The broker the tests use: the running one (`status` succeeds), or one started now. */
export async function runningOrStarted(
  script: (command: 'status' | 'start' | 'stop') => Promise<string>,
): Promise<ScriptBroker> {
  const running = await script('status').then(
    () => true,
    () => false,
  )
  if (!running) await script('start')
  return {
    startedHere: !running,
    async stop() {
      if (!running) await script('stop')
    },
  }
}

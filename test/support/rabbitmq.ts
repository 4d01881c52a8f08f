/**
 * A RabbitMQ for the integration tests: Debian's rabbitmq-server on this
 * machine. One already running is reused (CI starts it with
 * `scripts/rabbitmq.sh start`); otherwise the tests start it
 * (`rabbitmq-server -detached`, then `rabbitmqctl await_startup` retried
 * until it answers, ~7-10 s) and stop it when they are done. Without
 * rabbitmq-server the tests skip, saying so in one line.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { connect as netConnect } from 'node:net'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export const RABBITMQ_URL = 'amqp://guest:guest@127.0.0.1:5672/'
export const RABBITMQ_INSTALL = 'apt-get install -y rabbitmq-server'
const PORT = 5672
const STARTUP_TIMEOUT_MS = 90_000

/** Debian puts the commands in /usr/sbin, which a non-root PATH may lack. */
const SEARCH_PATH = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin']

function which(command: string): string | undefined {
  for (const dir of SEARCH_PATH) {
    if (dir && existsSync(join(dir, command))) return join(dir, command)
  }
  return undefined
}

let announced = false

/** Whether rabbitmq-server is installed; if not, says once how to get it. */
export function rabbitmqInstalled(): boolean {
  const installed = which('rabbitmq-server') !== undefined && which('rabbitmqctl') !== undefined
  if (!installed && !announced) {
    announced = true
    console.warn(
      `skipping the RabbitMQ tests: rabbitmq-server is not installed (${RABBITMQ_INSTALL}, or scripts/rabbitmq.sh start)`,
    )
  }
  return installed
}

/** Runs rabbitmqctl; rejects with its output when it fails. */
export async function rabbitmqctl(...args: string[]): Promise<string> {
  const ctl = which('rabbitmqctl')
  if (!ctl) throw new Error(`rabbitmqctl is not installed (${RABBITMQ_INSTALL})`)
  try {
    const { stdout } = await run(ctl, args, { timeout: STARTUP_TIMEOUT_MS })
    return stdout
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string }
    throw new Error(`rabbitmqctl ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`)
  }
}

function portOpen(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port: PORT })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function awaitStartup(): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS
  for (;;) {
    try {
      await rabbitmqctl('await_startup', '--timeout', '10')
      return
    } catch (err) {
      if (Date.now() > deadline) throw err
      await sleep(500)
    }
  }
}

export interface RabbitBroker {
  url: string
  /** Whether these tests started it (and so stop it). */
  startedHere: boolean
  stop(): Promise<void>
}

/** The broker the tests use: the running one, or one started now. */
export async function startRabbitmq(): Promise<RabbitBroker> {
  let startedHere = false
  if (!(await portOpen())) {
    // A node left with its app stopped (an interrupted restart test) only needs start_app.
    const nodeUp = await rabbitmqctl('start_app').then(
      () => true,
      () => false,
    )
    if (!nodeUp) {
      const server = which('rabbitmq-server')!
      await run(server, ['-detached'], { timeout: STARTUP_TIMEOUT_MS })
      startedHere = true
    }
  }
  await awaitStartup()
  return {
    url: RABBITMQ_URL,
    startedHere,
    async stop() {
      if (startedHere) await rabbitmqctl('stop')
    },
  }
}

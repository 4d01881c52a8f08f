/**
 * TrustGraph's own Python packages for interop tests: the virtual
 * environment made by scripts/trustgraph-venv.sh, and runners for the
 * scripts in test/interop/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const TRUSTGRAPH_VENV = process.env.TOOLBRIDGE_TRUSTGRAPH_VENV ?? join(homedir(), '.cache/toolbridge/tg-venv')
const PYTHON = join(TRUSTGRAPH_VENV, 'bin/python')
const INTEROP = fileURLToPath(new URL('../interop/', import.meta.url))

export const trustgraphInstalled = (): boolean => existsSync(PYTHON)
export const TRUSTGRAPH_INSTALL = 'scripts/trustgraph-venv.sh'

export interface TgCall {
  config?: Record<string, unknown>
  arguments?: Record<string, unknown>
  stream?: boolean
}

export interface TgResult {
  response: string
  error: { type: string; message: string } | null
  messages: number
}

/** Which of TrustGraph's backends its client uses, and where the broker is. */
export type TgBackend =
  | { backend: 'rabbitmq'; host: string }
  | { backend: 'kafka'; bootstrapServers: string }
  | { backend: 'pulsar'; serviceUrl: string; adminUrl: string }

const RABBITMQ_BACKEND: TgBackend = { backend: 'rabbitmq', host: '127.0.0.1' }

/** Runs the calls through TrustGraph's RequestResponseClient (all at once) and returns its results in order. */
export function trustgraphClientCalls(
  queues: { requestQueue: string; responseQueue: string },
  calls: TgCall[],
  broker: TgBackend = RABBITMQ_BACKEND,
): Promise<TgResult[]> {
  const backendArgs =
    broker.backend === 'kafka'
      ? ['--backend', 'kafka', '--kafka-bootstrap-servers', broker.bootstrapServers]
      : broker.backend === 'pulsar'
        ? ['--backend', 'pulsar', '--pulsar-host', broker.serviceUrl, '--pulsar-admin-url', broker.adminUrl]
        : ['--backend', 'rabbitmq', '--rabbitmq-host', broker.host]
  return interopScriptLines<TgResult>(
    'tg_client.py',
    [...backendArgs, '--request-queue', queues.requestQueue, '--response-queue', queues.responseQueue],
    calls,
  )
}

/** Starts TrustGraph's own joke service on RabbitMQ; resolves once it consumes its request queue. */
export function startTrustgraphJokeService(): Promise<ChildProcess> {
  return startInteropProcess(
    'joke service',
    [
      PYTHON,
      join(INTEROP, 'tg_joke_service.py'),
      '--pubsub-backend',
      'rabbitmq',
      '--rabbitmq-host',
      '127.0.0.1',
      '--no-metrics',
      '--no-loki-enabled',
    ],
    (log) => log.includes('Added consumer: request:tg:joke'),
  )
}

/**
 * Runs one of test/interop's scripts with TrustGraph's Python: `inputs` as
 * JSON lines on its stdin, one JSON result a line on its stdout; a failed
 * run rejects with the end of what it wrote to stderr.
 */
export function interopScriptLines<R>(script: string, args: string[], inputs: unknown[]): Promise<R[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [join(INTEROP, script), ...args])
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`${script} exited ${code ?? `on ${signal}`}: ${stderr.slice(-2000)}`))
      resolve(
        stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as R),
      )
    })
    child.stdin.end(inputs.map((input) => JSON.stringify(input)).join('\n') + '\n')
  })
}

/**
 * Starts a long-running TrustGraph process (`command`: the program and its
 * arguments); resolves once its log (stdout and stderr) shows it is
 * `ready`, rejects with the log's end if it exits first.
 */
export function startInteropProcess(
  name: string,
  [program, ...args]: string[],
  ready: (log: string) => boolean,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(program!, args)
    let log = ''
    const onData = (d: Buffer) => {
      log += d
      if (ready(log)) resolve(child)
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('error', reject)
    child.on('exit', (code) => reject(new Error(`${name} exited ${code}: ${log.slice(-2000)}`)))
  })
}

/** `toolbridge invoke tell-joke --arg topic=programming` on a broker (from the source, 20 s to answer); resolves with what it prints. */
export async function invokeJokeOn(brokerUrl: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      'bridge/cli/main.ts',
      'invoke',
      'tell-joke',
      '--arg',
      'topic=programming',
      '--broker',
      brokerUrl,
      '--timeout',
      '20',
    ],
    { timeout: 30_000 },
  )
  return stdout
}

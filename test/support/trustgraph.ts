/**
 * TrustGraph's own Python packages for interop tests: the virtual
 * environment made by scripts/trustgraph-venv.sh, and runners for the
 * scripts in test/interop/.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

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
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [
      join(INTEROP, 'tg_client.py'),
      ...backendArgs,
      '--request-queue',
      queues.requestQueue,
      '--response-queue',
      queues.responseQueue,
    ])
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`tg_client.py exited ${code ?? `on ${signal}`}: ${stderr.slice(-2000)}`))
      resolve(
        stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as TgResult),
      )
    })
    child.stdin.end(calls.map((c) => JSON.stringify(c)).join('\n') + '\n')
  })
}

/** Starts TrustGraph's own joke service on RabbitMQ; resolves once it consumes its request queue. */
export function startTrustgraphJokeService(): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [
      join(INTEROP, 'tg_joke_service.py'),
      '--pubsub-backend',
      'rabbitmq',
      '--rabbitmq-host',
      '127.0.0.1',
      '--no-metrics',
      '--no-loki-enabled',
    ])
    let log = ''
    const onData = (d: Buffer) => {
      log += d
      if (log.includes('Added consumer: request:tg:joke')) resolve(child)
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('error', reject)
    child.on('exit', (code) => reject(new Error(`joke service exited ${code}: ${log.slice(-2000)}`)))
  })
}

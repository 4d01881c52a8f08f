/**
 * Redis for the tests of the shared answered-once store: Debian's
 * redis-server. The one on 6379 (CI starts it with `scripts/redis.sh start`)
 * is used, or started with that script; servers of a test's own (a full one,
 * a slow one) run on ports of their own and are stopped by the test. Without
 * redis-server the tests skip, saying so in one line.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'

export const REDIS_URL = 'redis://127.0.0.1:6379'
const ROOT = join(import.meta.dirname, '..', '..')

let announced = false

/** Whether redis-server is installed; if not, says once how to get it. */
export function redisInstalled(): boolean {
  const installed = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some((path) => existsSync(path))
  if (!installed && !announced) {
    announced = true
    console.warn('skipping the Redis tests: redis-server is not installed (apt-get install -y redis-server)')
  }
  return installed
}

/** The shared server on 6379: the running one, or one started now (left running). */
export async function startRedis(): Promise<void> {
  await promisify(execFile)(join(ROOT, 'scripts', 'redis.sh'), ['start'])
}

/** A client of the test's own, for reading and writing records directly. */
export function redisClient(url = REDIS_URL): Redis {
  const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 })
  client.on('error', () => {}) // a server of the test's own may be stopped under it
  return client
}

/** A redis-server of the test's own on `port`, with `args`; resolves once it answers. */
export async function ownRedis(port: number, args: string[] = []): Promise<{ url: string; stop(): Promise<void> }> {
  const server: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    { stdio: 'ignore' },
  )
  const url = `redis://127.0.0.1:${port}`
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {}) // refused until the server listens
  for (let attempt = 0; ; attempt++) {
    try {
      await probe.connect()
      break
    } catch (err) {
      if (attempt > 50) throw err
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  probe.disconnect()
  return {
    url,
    async stop() {
      if (server.exitCode !== null) return
      const exited = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGKILL')
      await exited
    },
  }
}

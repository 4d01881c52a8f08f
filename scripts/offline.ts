/**
 * serverless-offline and `sls package` as child processes, for the tests and
 * benchmarks: the real ones of node_modules (npm ci installs them, so nothing
 * skips), run as `npm run offline` / `npm run package` run them (sls.ts: same
 * environment, nothing reaches the network), each in a build folder of its
 * own. serverless-offline is ready when it logs that the Lambda API listens
 * and is stopped by killing its process group; if it cannot start, the error
 * carries its output.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { rm } from 'node:fs/promises'
import { createServer, connect as netConnect, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { type BuildDirs, cleanBuildOutputs, commandBuild, isolatedBuild, ROOT, SLS_BIN, slsEnvironment } from './sls.ts'

const run = promisify(execFile)
const HOST = '127.0.0.1'
/** A fail-safe for a hung start, not a limit on how fast it must be (it takes a few seconds). */
const STARTUP_TIMEOUT_MS = 90_000
const STOP_TIMEOUT_MS = 10_000

export interface Offline {
  /** The Lambda API: `${endpoint}/2015-03-31/functions/<name>/invocations`. */
  endpoint: string
  /** From spawning `sls` until the Lambda API listened (bundling included). */
  startupMs: number
  /** Everything it printed so far. */
  output(): string
  stop(): Promise<void>
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: HOST, port })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // already gone
  }
}

/** A port nothing listens on now: the OS picks it. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

let builds = 0
/** A build folder of this process's own: test files run side by side, each with its own sls. */
const nextBuild = (purpose: string) => isolatedBuild(`${purpose}-${process.pid}-${++builds}`)

/**
 * Starts `sls offline start` for the service in `serviceDir` (default: this
 * project) with the Lambda API on `port` (default: a free one, so that test
 * files and a running `npm run offline` do not collide); rejects with its
 * output if it cannot.
 */
export async function startOffline(
  options: { port?: number; serviceDir?: string; build?: BuildDirs } = {},
): Promise<Offline> {
  const { port, serviceDir = ROOT } = options
  if (port !== undefined && (await portAnswers(port))) {
    throw new Error(`cannot start serverless-offline: port ${port} is already in use (is \`npm run offline\` running?)`)
  }
  const lambdaPort = port ?? (await freePort())
  const base = options.build ?? nextBuild('offline')
  const build = commandBuild('offline', base)
  // A run folder made here goes as a whole; in a given one, only this command's folder.
  const leftovers = join(serviceDir, options.build ? build.workFolder : join(base.workFolder, '..'))
  await cleanBuildOutputs('offline', build, serviceDir)
  const started = performance.now()
  // httpPort and websocketPort too: serverless-offline binds them whether or not a function has such events.
  const ports = ['--lambdaPort', lambdaPort, '--httpPort', await freePort(), '--websocketPort', await freePort()].map(
    String,
  )
  const child = spawn(SLS_BIN, ['offline', 'start', ...ports, '--host', HOST], {
    cwd: serviceDir,
    env: slsEnvironment(process.env, build),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: sls, its worker threads and esbuild's service go together
  })
  let output = ''
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not run ${SLS_BIN}: ${err.message}`))
    child.once('exit', (code, signal) => resolve(`exited with ${signal ?? `code ${code}`}`))
  })
  const listening = `listening on http://${HOST}:${lambdaPort}`
  const ready = new Promise<void>((resolve) => {
    const onData = (data: Buffer) => {
      output += data.toString()
      if (output.includes(listening)) resolve()
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
  })
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`did not listen within ${STARTUP_TIMEOUT_MS} ms`), STARTUP_TIMEOUT_MS)
  })
  const failure = await Promise.race([ready.then(() => undefined), exited, timedOut])
  clearTimeout(timer)
  if (failure !== undefined) {
    killGroup(child, 'SIGKILL')
    throw new Error(`serverless-offline ${failure}; its output:\n${output || '(none)'}`)
  }
  const startupMs = performance.now() - started

  return {
    endpoint: `http://${HOST}:${lambdaPort}`,
    startupMs,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      // SIGTERM ends it at once (SIGINT takes ~2 s and leaves .esbuild/ all the same).
      killGroup(child, 'SIGTERM')
      const kill = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(kill)
      await rm(leftovers, { recursive: true, force: true })
    },
  }
}

export interface Packaged {
  /** One zip per function, and the CloudFormation template. */
  dir: string
  remove(): Promise<void>
}

/** `sls package` into a folder of its own, as `npm run package` does into .serverless/. */
export async function packageFunctions(options: { build?: BuildDirs } = {}): Promise<Packaged> {
  const base = options.build ?? nextBuild('package')
  const build = commandBuild('package', base)
  await cleanBuildOutputs('package', build)
  const dir = join(ROOT, build.packageDir)
  await run(SLS_BIN, ['package', '--package', dir], {
    cwd: ROOT,
    env: slsEnvironment(process.env, build),
    timeout: 120_000,
  })
  const leftovers = options.build ? [dir, join(ROOT, build.workFolder)] : [join(dir, '..')]
  return {
    dir,
    remove: async () => void (await Promise.all(leftovers.map((path) => rm(path, { recursive: true, force: true })))),
  }
}

/**
 * How long the command takes to start and finish, against bare `node -e 0`.
 *
 *   npm run bench:startup
 *
 * Each command runs as its own process, one after another, STARTUP_RUNS
 * times in rounds (node, then every command, then node again ...) so that
 * other work on the machine weighs on all of them alike. Reported: median,
 * minimum and maximum wall-clock seconds from spawn to exit, and the median
 * minus node's own median (what toolbridge adds).
 *
 * `invoke --url` calls tell-joke through a `toolbridge start` on the
 * embedded broker that this bench starts first (and stops at the end); the
 * call itself takes about a millisecond of that.
 *
 * Environment:
 *   STARTUP_RUNS   runs of each command (default 11)
 *   STARTUP_OUT    where to write the JSON (default bench/results/startup.json)
 */
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { numberEnv } from './env-settings.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeResults } from './results-file.ts'
import { median } from './statistics.ts'
import { type Column, fmt, printHeader, printRow } from './tables.ts'

const RUNS = Math.floor(numberEnv('STARTUP_RUNS', 11, 1))
const OUT = resolve(ROOT, process.env.STARTUP_OUT || 'bench/results/startup.json')
/** What `toolbridge` runs (package.json `bin`). */
const MAIN = resolve(ROOT, 'bridge/cli/toolbridge.js')
const TARGET_SECONDS = 0.35

/** A free TCP port on the loopback interface. */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer()
    server.once('error', fail)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => done(port))
    })
  })
}

/** `toolbridge start` on the embedded broker; resolves once its HTTP gateway is listening. */
async function startBridge(port: number) {
  const child = spawn(process.execPath, [MAIN, 'start', '--port', String(port), '--host', '127.0.0.1'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TOOLBRIDGE_LOG_LEVEL: 'warn' },
  })
  await new Promise<void>((ready, fail) => {
    let out = ''
    child.stdout.on('data', (bytes: Buffer) => {
      out += bytes.toString()
      if (out.includes('HTTP: ')) ready()
    })
    child.once('exit', (code) => fail(new Error(`toolbridge start exited with code ${code} before serving:\n${out}`)))
  })
  return child
}

interface Command {
  name: string
  args: string[]
}

/** Wall-clock seconds of one run; throws if the command fails. */
function timeRun(command: Command): number {
  const t0 = performance.now()
  const run = spawnSync(process.execPath, command.args, { cwd: ROOT, encoding: 'utf8' })
  const seconds = (performance.now() - t0) / 1000
  if (run.status !== 0) throw new Error(`${command.name} exited with ${run.status}:\n${run.stderr}`)
  return seconds
}

const port = await freePort()
const url = `http://127.0.0.1:${port}`
const commands: Command[] = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'toolbridge --help', args: [MAIN, '--help'] },
  { name: 'toolbridge descriptors', args: [MAIN, 'descriptors'] },
  { name: 'toolbridge invoke --url', args: [MAIN, 'invoke', 'tell-joke', '-a', 'topic=programming', '--url', url] },
]

const machine = machineInfo({})
console.log(describeMachine(machine))
console.log(`load average before: ${loadAverage().join(' ')}`)
console.log(`${RUNS} runs of each, in rounds; seconds from spawn to exit\n`)

const bridge = await startBridge(port)
const times = new Map<string, number[]>(commands.map((c) => [c.name, []]))
try {
  for (let round = 0; round < RUNS; round++) {
    for (const command of commands) times.get(command.name)!.push(timeRun(command))
  }
} finally {
  bridge.kill('SIGTERM')
}

interface Row {
  name: string
  median: number
  min: number
  max: number
  added: number
}
const nodeMedian = median(times.get('node -e 0')!)
const rows: Row[] = commands.map(({ name }) => {
  const runs = times.get(name)!
  return {
    name,
    median: median(runs),
    min: Math.min(...runs),
    max: Math.max(...runs),
    added: median(runs) - nodeMedian,
  }
})
const columns: Column<Row>[] = [
  { title: 'command', width: 24, align: 'left', cell: (r) => r.name },
  { title: 'median s', width: 8, cell: (r) => fmt(r.median, 3) },
  { title: 'min s', width: 6, cell: (r) => fmt(r.min, 3) },
  { title: 'max s', width: 6, cell: (r) => fmt(r.max, 3) },
  { title: '- node s', width: 8, cell: (r) => fmt(r.added, 3) },
  {
    title: `<= ${TARGET_SECONDS} s`,
    width: 8,
    cell: (r) => (r.name.startsWith('node') ? '' : r.median <= TARGET_SECONDS ? 'yes' : 'NO'),
  },
]
console.log()
printHeader(columns)
for (const row of rows) printRow(columns, row)
console.log(`\nload average after: ${loadAverage().join(' ')}`)
writeResults(OUT, {
  date: new Date().toISOString(),
  machine,
  runs: RUNS,
  targetSeconds: TARGET_SECONDS,
  rows,
  times: Object.fromEntries(times),
})

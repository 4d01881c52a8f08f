/**
 * Memory of `toolbridge start` as users run it: the repository's
 * serverless.yml (the three examples) on the embedded broker, worker threads,
 * in a process of its own. RSS from /proc/<pid>/status, with the process's
 * thread count (each worker thread adds one):
 * - idle 3 s after it serves, while start-up's garbage and the thread that
 *   checked the handlers load are still being given back, and idle once it
 *   has settled (BENCH_IDLE_SECONDS after it serves);
 * - right after BENCH_REQUESTS HTTP calls at BENCH_INFLIGHT in flight spread
 *   over the three tools (8 in 10 tell-joke, 1 calculate, 1 tell-story), and
 *   BENCH_LATER_SECONDS later: past the 60 s after which idle worker threads
 *   end, so the reading shows the process once the pool has shrunk.
 * And the process's CPU per call during the calls (all its threads), so that
 * a setting that saves memory shows what it costs.
 *
 *   node bench/memory.bench.ts
 *
 * Targets: idle (settled) <= 90 MiB, right after the calls <= 160 MiB.
 *
 * Environment:
 *   BENCH_REQUESTS    calls in all (default 10000)
 *   BENCH_INFLIGHT    calls at once (default 16)
 *   BENCH_IDLE_SECONDS   when the settled idle reading is taken, after it serves (default 30)
 *   BENCH_LATER_SECONDS  when the last reading is taken, after the calls (default 75)
 *   BENCH_PER_WORKER  invocationsPerWorker for every example (default: as serverless.yml says)
 *   BENCH_INVOKER     the invoker (default worker-threads; in-process shows the main thread alone)
 *   BENCH_NODE_ARGS   options for node before the command (say --max-semi-space-size=1), to measure one
 *   BENCH_START_ARGS  more options of toolbridge start (say --answered-memory-size 0), to measure one
 *   BENCH_OUT         JSON path (default bench/results/memory.json)
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { type ChildBridge, startChildBridge } from './child-bridge.ts'
import { processCpuUsOf, rssMiB } from './cpu-and-memory.ts'
import { numberEnv } from './env-settings.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { writeResults } from './results-file.ts'
import { fmt, fmtInt } from './tables.ts'

const TOTAL = Math.floor(numberEnv('BENCH_REQUESTS', 10_000, 1))
const IN_FLIGHT = Math.floor(numberEnv('BENCH_INFLIGHT', 16, 1))
const PER_WORKER = process.env.BENCH_PER_WORKER ? Math.floor(numberEnv('BENCH_PER_WORKER', 1, 1)) : undefined
const IDLE_SECONDS = numberEnv('BENCH_IDLE_SECONDS', 30, 3)
const LATER_SECONDS = numberEnv('BENCH_LATER_SECONDS', 75, 0)
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/memory.json')
const INVOKER = process.env.BENCH_INVOKER || 'worker-threads'
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
const START_ARGS = (process.env.BENCH_START_ARGS ?? '').split(' ').filter(Boolean)
const TARGETS = { idleMiB: 90, afterMiB: 160 }
const YML = resolve(ROOT, `.memory-${process.pid}.serverless.yml`)

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

function memory(pid: number): { rssMiB: number; threads: number } {
  return {
    rssMiB: rssMiB(pid),
    threads: readdirSync(`/proc/${pid}/task`).length,
  }
}

/** serverless.yml beside the original (handler paths resolve), with invocationsPerWorker under every topic if asked. */
function writeYml(): void {
  const yml = readFileSync(resolve(ROOT, 'serverless.yml'), 'utf8')
  writeFileSync(
    YML,
    PER_WORKER === undefined
      ? yml
      : yml.replace(
          /^( +)(topic: \S+)$/gm,
          (_, indent: string, line: string) => `${indent}${line}\n${indent}invocationsPerWorker: ${PER_WORKER}`,
        ),
  )
}

function startBridge(): Promise<ChildBridge> {
  writeYml()
  return startChildBridge({ yml: YML, invoker: INVOKER, nodeArgs: NODE_ARGS, startArgs: START_ARGS })
}

async function callTool(url: string, n: number): Promise<boolean> {
  const [tool, args] =
    n % 10 === 8
      ? ['calculate', { expression: `${n % 977} * 3` }]
      : n % 10 === 9
        ? ['tell-story', { hero: 'Ada', sentences: 3 }]
        : ['tell-joke', { topic: 'programming' }]
  const response = await fetch(`${url}/tools/${tool}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: args }),
  })
  await response.text()
  return response.ok
}

const machine = machineInfo({})
console.log(describeMachine(machine))
const loadBefore = loadAverage()
console.log(
  `toolbridge start, the three examples, embedded broker, ${INVOKER} invoker${PER_WORKER === undefined ? '' : `, invocationsPerWorker ${PER_WORKER}`}${[...NODE_ARGS, ...START_ARGS].map((a) => ` ${a}`).join('')}; ${fmtInt(TOTAL)} HTTP calls at ${IN_FLIGHT} in flight; load average ${loadBefore.join(' / ')}`,
)
const bridge = await startBridge()
try {
  await sleep(3000)
  const idleEarly = memory(bridge.pid)
  await sleep((IDLE_SECONDS - 3) * 1000)
  const idle = memory(bridge.pid)
  let issued = 0
  let failed = 0
  const cpuBefore = processCpuUsOf(bridge.pid)
  const started = performance.now()
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < TOTAL) if (!(await callTool(bridge.url, issued++))) failed++
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const cpuUsPerCall = (processCpuUsOf(bridge.pid) - cpuBefore) / TOTAL
  const after = memory(bridge.pid)
  await sleep(LATER_SECONDS * 1000)
  const later = memory(bridge.pid)
  const loadAfter = loadAverage()
  const line = (name: string, m: { rssMiB: number; threads: number }) =>
    `${name}: ${fmt(m.rssMiB, 1)} MiB, ${m.threads} threads`
  console.log(line('idle, 3 s after it serves', idleEarly))
  console.log(line(`idle, ${IDLE_SECONDS} s after it serves`, idle))
  console.log(
    `${line('right after the calls', after)} (${fmt(seconds, 1)} s, ${fmt(cpuUsPerCall, 0)} µs CPU per call, ${failed} failed)`,
  )
  console.log(line(`${LATER_SECONDS} s after the calls`, later))
  console.log(
    `targets: idle after ${IDLE_SECONDS} s <= ${TARGETS.idleMiB} MiB: ${idle.rssMiB <= TARGETS.idleMiB ? 'met' : 'MISSED'}; ` +
      `right after the calls <= ${TARGETS.afterMiB} MiB: ${after.rssMiB <= TARGETS.afterMiB ? 'met' : 'MISSED'}; load average after ${loadAfter.join(' / ')}`,
  )
  writeResults(OUT, {
    bench: 'memory of toolbridge start',
    settings: {
      requests: TOTAL,
      inFlight: IN_FLIGHT,
      invoker: INVOKER,
      nodeArgs: NODE_ARGS,
      startArgs: START_ARGS,
      invocationsPerWorker: PER_WORKER ?? 'as serverless.yml says',
      idleSeconds: IDLE_SECONDS,
      laterSeconds: LATER_SECONDS,
    },
    machine: { ...machine, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
    targets: TARGETS,
    result: { idleEarly, idle, after, later, seconds, cpuUsPerCall, failed },
  })
  if (failed > 0) process.exitCode = 1
} finally {
  await bridge.stop()
}

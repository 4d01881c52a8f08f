/**
 * Where a request's CPU goes in `toolbridge start`, by function and by
 * where the code lives: the command as users run it on a broker, under
 * `node --cpu-prof` (every thread: the main thread and the worker threads),
 * driven by the broker benches' load client in a process of its own
 * (bench/command-on-broker.ts); only the samples of the measured loop count.
 *
 *   npm run bench:profile
 *
 * For each invoker it prints the CPU per request of each area (toolbridge,
 * the function, the broker's client, node, V8's collector, and what V8 does
 * not attribute to JavaScript), then the functions that spent the most
 * themselves. The profiles stay in BENCH_OUT for a closer look (Chrome's
 * DevTools, or any viewer of .cpuprofile files), with a flame graph of the
 * main thread over the measured loop (main-thread.svg, flame-graph.ts). Profiling slows the process
 * down: compare areas and functions with each other, not with other benches.
 *
 * Environment:
 *   BENCH_BROKER     broker URL (default TOOLBRIDGE_BROKER, else amqp://guest:guest@127.0.0.1:5672/)
 *   BENCH_INVOKERS   invokers, comma separated (default in-process,worker-threads)
 *   BENCH_INFLIGHT   requests in flight (default 16)
 *   BENCH_SECONDS    measured seconds (default 5)
 *   BENCH_TOP        functions listed per invoker (default 20)
 *   BENCH_OUT        folder for the profiles (default bench/results/profiles)
 */
import { redact } from '../bridge/transports/redact.ts'
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { startCommandOnBroker } from './command-on-broker.ts'
import { processCpuUsOf } from './cpu-and-memory.ts'
import { IDLE, readWindow, selfTimes } from './cpu-profile.ts'
import { brokerEnv, invokersEnv, LOCAL_RABBITMQ, numberEnv } from './env-settings.ts'
import { flameGraphSvg } from './flame-graph.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { ROOT } from './project-root.ts'
import { runBench } from './run-bench.ts'
import { fmt, fmtInt } from './tables.ts'

const BROKER = brokerEnv(LOCAL_RABBITMQ)
const INVOKERS = invokersEnv('BENCH_INVOKERS', 'in-process,worker-threads')
const IN_FLIGHT = Math.floor(numberEnv('BENCH_INFLIGHT', 16, 1))
const SECONDS = numberEnv('BENCH_SECONDS', 5, 1)
const TOP = Math.floor(numberEnv('BENCH_TOP', 20, 1))
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/profiles')
const brokerKind = new URL(BROKER).protocol.replace(/:$/, '')

const hrtimeUs = () => Number(process.hrtime.bigint() / 1000n)

await runBench(async () => {
  console.log(describeMachine(machineInfo({})))
  console.log(
    `broker ${redact(BROKER)}; ${IN_FLIGHT} in flight, ${SECONDS} s measured; load average ${loadAverage().join(' / ')}`,
  )
  for (const invoker of INVOKERS) {
    const dir = resolve(OUT, `${brokerKind}-${invoker}`)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    const command = await startCommandOnBroker({
      broker: BROKER,
      invoker,
      topic: `profile-${invoker}`,
      inFlight: IN_FLIGHT,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    })
    // Read as each message of the client arrives: the measured loop's marks are the last two before `measured`.
    const clock: number[] = []
    const m = await command.client.measure(IN_FLIGHT, {
      seconds: SECONDS,
      warmupSeconds: 1,
      probes: {
        bridge: () => processCpuUsOf(command.bridge.pid),
        clock: () => clock[clock.push(hrtimeUs()) - 1]!,
      },
    })
    await command.stop() // the profiles are written as the command exits
    const [from, to] = clock.slice(-3, -1) as [number, number]
    const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
    const byArea = new Map<string, number>()
    const byFunction = new Map<string, number>()
    const byThread: string[] = []
    for (const file of files) {
      const window = readWindow(resolve(dir, file), from, to)
      const times = selfTimes(window)
      const threadBusyUs = times.totalUs - (times.byArea.get(IDLE) ?? 0)
      // Named CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile; thread 0 is the main thread.
      const threadId = file.split('.')[4]
      const thread = threadId === '0' ? 'main thread' : `thread ${threadId}`
      if (threadBusyUs > 0) byThread.push(`${thread} ${fmt(threadBusyUs / m.requests, 0)}`)
      if (threadId === '0') {
        const title = `toolbridge start, ${invoker}, ${brokerKind}, ${IN_FLIGHT} in flight: the main thread`
        writeFileSync(resolve(dir, 'main-thread.svg'), flameGraphSvg(window, m.requests, title))
      }
      for (const [k, us] of times.byArea) byArea.set(k, (byArea.get(k) ?? 0) + us)
      for (const [k, us] of times.byFunction) byFunction.set(k, (byFunction.get(k) ?? 0) + us)
    }
    const perRequest = (us: number) => us / m.requests
    const busy = [...byArea].filter(([area]) => area !== IDLE)
    const busyUs = busy.reduce((sum, [, us]) => sum + us, 0)
    console.log(
      `\n${invoker}: ${fmtInt(m.reqPerSec)} req/s under the profiler, the process's CPU ${fmt(perRequest(m.used.bridge), 0)} µs/request; ` +
        `${files.length} thread profile(s), ${fmt(perRequest(busyUs), 0)} µs/request of samples not idle`,
    )
    console.log(`  by thread, µs/request: ${byThread.join(', ')}`)
    console.log('\n  µs/req  share  area')
    for (const [area, us] of busy.sort((a, b) => b[1] - a[1]))
      console.log(`  ${fmt(perRequest(us), 1).padStart(6)}  ${fmt((100 * us) / busyUs, 1).padStart(4)}%  ${area}`)
    console.log(`\n  µs/req  share  function (self time; top ${TOP})`)
    for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      console.log(`  ${fmt(perRequest(us), 1).padStart(6)}  ${fmt((100 * us) / busyUs, 1).padStart(4)}%  ${name}`)
    console.log(`\n  profiles and the main thread's flame graph: ${dir}`)
  }
})

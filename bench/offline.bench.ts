/**
 * The bridge in front of serverless-offline against calling serverless-offline
 * directly, measured in the same run on the same serverless-offline.
 *
 *   npm run bench:offline
 *
 * Setups:
 * - `direct`: the AWS SDK's `Invoke` on serverless-offline's Lambda API for
 *   toolbridge-joke, with the event the bridge would send (a LambdaClient
 *   configured as the lambda invoker configures its own: keep-alive, no
 *   socket cap, no SDK retries).
 * - `bridge`: a TrustGraph request on the embedded broker (RequestClient),
 *   the bridge with `--invoker lambda --lambda-endpoint <serverless-offline>`,
 *   the answer back on the response queue.
 * What the bridge adds is the difference: broker hops, decoding, checks and
 * encoding. Target: ≤ 1 ms p50 added at every in-flight level.
 *
 * Cells alternate (direct, bridge, then bridge, direct, ...) for BENCH_ROUNDS
 * rounds per in-flight level; the table reports the median over rounds. A
 * cell is a closed loop (bench/closed-loop.ts): a warm-up, then a fixed duration.
 * serverless-offline, the bridge and the client share this machine's cores;
 * serverless-offline's own cost per call (it runs the handler in its process,
 * through hapi) bounds throughput for both setups.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 3)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 0.5)
 *   BENCH_ROUNDS           rounds per in-flight level (default 3)
 *   BENCH_INFLIGHT         in-flight levels, comma separated (default 1,16,64)
 *   BENCH_OUT              where to write the JSON (default bench/results/offline.json, git-ignored)
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { startOffline } from '../scripts/offline.ts'
import { type Call, measure } from './closed-loop.ts'
import { processCpuUs } from './cpu-and-memory.ts'
import { roundsSettings } from './env-settings.ts'
import { loadJokeTool } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import { writeResults } from './results-file.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtSigned, printHeader, printRow, throughputColumns, type ThroughputRow } from './tables.ts'

const RUN = roundsSettings('offline', { seconds: 3, warmupSeconds: 0.5, rounds: 3, inFlight: '1,16,64' })
const TARGET_P50_ADDED_MS = 1
const CALL_TIMEOUT_MS = 10_000

type Setup = 'direct' | 'bridge'

interface Row extends ThroughputRow {
  setup: Setup
  errors: number
  /** Median p50 minus the direct setup's median p50. */
  p50AddedMs: number
  throughputRatio: number
  p50Met: boolean | null
}

const COLUMNS: Column<Row>[] = [
  ...throughputColumns<Row>(6),
  { title: 'x direct', width: 8, cell: (r) => (r.setup === 'direct' ? '1' : fmt(r.throughputRatio, 2)) },
  { title: 'p50 added ms', width: 12, cell: (r) => (r.setup === 'direct' ? '0' : fmtSigned(r.p50AddedMs, 3)) },
  { title: '<= 1 ms', width: 7, cell: (r) => (r.p50Met === null ? '' : r.p50Met ? 'yes' : 'NO') },
  { title: 'errors', width: 6, cell: (r) => String(r.errors) },
]

async function main(): Promise<void> {
  const { project, spec, request, event } = loadJokeTool()
  if (spec.location.kind !== 'handler') throw new Error(`"${spec.functionName}" must be a function of serverless.yml`)
  const { lambdaName } = spec.location
  const offline = await startOffline()
  console.log(`serverless-offline ready in ${Math.round(offline.startupMs)} ms at ${offline.endpoint}`)
  const machine = machineInfo({ serverlessOffline: '14' })
  console.log(describeMachine(machine))

  const lambda = new LambdaClient({
    endpoint: offline.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
    maxAttempts: 1,
    requestHandler: { httpAgent: { keepAlive: true, maxSockets: Infinity } },
  })
  const payload = Buffer.from(JSON.stringify(event))
  const utf8 = new TextDecoder()
  const direct: Call = async () => {
    const out = await lambda.send(new InvokeCommand({ FunctionName: lambdaName, Payload: payload }), {
      abortSignal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    })
    if (out.FunctionError) throw new Error(`function error: ${utf8.decode(out.Payload)}`)
    return JSON.parse(utf8.decode(out.Payload)) as unknown
  }
  const expected = await direct()

  const rows: Row[] = []
  const cells: object[] = []
  printHeader(COLUMNS)
  try {
    for (const inFlight of RUN.inFlight) {
      const settings = resolveSettings(
        { invoker: 'lambda', lambdaEndpoint: offline.endpoint, port: 'off', drainTimeout: '1' },
        {},
      )
      const runtime = await startRuntime({ ...project, services: [{ ...spec, concurrency: inFlight }] }, settings)
      const client = new RequestClient(await runtime.connectClient(), spec)
      await client.start()
      const viaBridge: Call = () => client.call(request, { timeoutMs: CALL_TIMEOUT_MS })
      const answer = await viaBridge()
      if (answer !== expected)
        throw new Error(`the bridge answered ${JSON.stringify(answer)}, Invoke ${JSON.stringify(expected)}`)

      const results: Record<Setup, { reqPerSec: number; p50Ms: number; p99Ms: number; errors: number }[]> = {
        direct: [],
        bridge: [],
      }
      for (let round = 0; round < RUN.rounds; round++) {
        const order: Setup[] = round % 2 === 0 ? ['direct', 'bridge'] : ['bridge', 'direct']
        for (const setup of order) {
          const stats = await measure(setup === 'direct' ? direct : viaBridge, inFlight, {
            seconds: RUN.seconds,
            warmupSeconds: RUN.warmupSeconds,
            probes: { node: processCpuUs },
          })
          results[setup].push(stats)
          cells.push({ setup, inFlight, round, ...stats })
        }
      }
      await client.close()
      await runtime.stop()

      const summary = (setup: Setup) => {
        const r = results[setup]
        return {
          reqPerSec: median(r.map((c) => c.reqPerSec)),
          reqPerSecMin: Math.min(...r.map((c) => c.reqPerSec)),
          reqPerSecMax: Math.max(...r.map((c) => c.reqPerSec)),
          p50Ms: median(r.map((c) => c.p50Ms)),
          p99Ms: median(r.map((c) => c.p99Ms)),
          errors: r.reduce((n, c) => n + c.errors, 0),
        }
      }
      const base = summary('direct')
      for (const setup of ['direct', 'bridge'] as const) {
        const s = summary(setup)
        const added = s.p50Ms - base.p50Ms
        const row: Row = {
          setup,
          inFlight,
          ...s,
          p50AddedMs: added,
          throughputRatio: s.reqPerSec / base.reqPerSec,
          p50Met: setup === 'direct' ? null : added <= TARGET_P50_ADDED_MS,
        }
        rows.push(row)
        printRow(COLUMNS, row)
      }
    }
  } finally {
    lambda.destroy()
    await offline.stop()
  }
  console.log(`\nload average after the run: ${loadAverage().join(' ')}`)
  writeResults(RUN.out, {
    bench: 'bridge -> serverless-offline vs Invoke on serverless-offline',
    target: { p50AddedMs: TARGET_P50_ADDED_MS },
    settings: { seconds: RUN.seconds, warmupSeconds: RUN.warmupSeconds, rounds: RUN.rounds, inFlight: RUN.inFlight },
    machine,
    rows,
    cells,
  })
  const missed = rows.filter((r) => r.p50Met === false)
  if (missed.length > 0) console.log(`target missed at in-flight ${missed.map((r) => r.inFlight).join(', ')}`)
}

await main()

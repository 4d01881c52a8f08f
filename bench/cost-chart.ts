/**
 * A chart of what the bridge costs on one broker: CPU time of the bench
 * process per request against the requests in flight, one line per setup
 * (raw echo, in process, worker threads one invocation per worker, worker
 * threads several per worker). It reads the results of a broker bench
 * (bench/rabbitmq.bench.ts, kafka.bench.ts, pulsar.bench.ts) or of the
 * embedded broker's (bench/bridge.bench.ts); given several runs' results, it
 * draws each cell's median over them.
 *
 *   node bench/cost-chart.ts bench/results/rabbitmq.json docs/bench-rabbitmq.svg
 *   node bench/cost-chart.ts run1.json run2.json run3.json docs/bench-embedded.svg
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { lineChartSvg, type Series } from './svg-chart.ts'

/** A row of a broker bench (setup, nodeCpuUsPerReq) or of the embedded one (invoker, cpuUsPerRequest). */
interface ResultRow {
  setup?: string
  invoker?: string
  inFlight: number
  nodeCpuUsPerReq?: number
  cpuUsPerRequest?: number
  /** Present when the load's client ran in a process of its own: nodeCpuUsPerReq is then the service's alone. */
  clientCpuUsPerReq?: number
}

interface Cell {
  setup: string
  inFlight: number
  cpuUs: number
}

/** Setups as the broker benches name them; the embedded bench calls the raw echo `echo`. */
const NAMES: Record<string, string> = {
  baseline: 'raw echo',
  'in-process': 'in-process',
  'worker-threads': 'workers, 1 per worker',
  'worker-threads-shared': 'workers, several per worker',
}
const COLORS = ['#7f8c8d', '#27ae60', '#c0392b', '#2471a3']
/** The embedded broker's bench calls itself `bridge`. */
const brokerName = (bench: string) => (bench === 'bridge' ? 'the embedded broker' : bench)

function cellOf(row: ResultRow): Cell | undefined {
  const setup = row.setup ?? (row.invoker === 'echo' ? 'baseline' : row.invoker)
  const cpuUs = row.nodeCpuUsPerReq ?? row.cpuUsPerRequest
  if (setup === undefined || cpuUs === undefined || !(setup in NAMES)) return undefined
  return { setup, inFlight: row.inFlight, cpuUs }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** One line per setup present, each point the median of that setup's cells at that level. */
function seriesOf(cells: Cell[]): Series[] {
  return Object.keys(NAMES)
    .filter((setup) => cells.some((c) => c.setup === setup))
    .map((setup, i) => {
      const levels = [...new Set(cells.filter((c) => c.setup === setup).map((c) => c.inFlight))].sort((a, b) => a - b)
      return {
        name: NAMES[setup]!,
        color: COLORS[i]!,
        axis: 'left' as const,
        points: levels.map((inFlight): [number, number] => [
          inFlight,
          median(cells.filter((c) => c.setup === setup && c.inFlight === inFlight).map((c) => c.cpuUs)),
        ]),
      }
    })
}

const args = process.argv.slice(2)
const output = args.pop()
if (!output || args.length === 0) throw new Error('usage: node bench/cost-chart.ts <results.json>... <chart.svg>')
const runs = args.map((path) => JSON.parse(readFileSync(path, 'utf8')) as { bench: string; rows: ResultRow[] })
const cells = runs.flatMap((run) => run.rows.map(cellOf).filter((c) => c !== undefined))
const runsSaid = runs.length > 1 ? `, median of ${runs.length} runs` : ''
const whose = runs.every((run) => run.rows.every((row) => row.clientCpuUsPerReq !== undefined))
  ? "the service's process alone"
  : 'client + service, one process'
writeFileSync(
  output,
  lineChartSvg({
    title: `toolbridge on ${brokerName(runs[0]!.bench)}: CPU per request (${whose}${runsSaid})`,
    xLabel: 'requests in flight',
    leftLabel: 'CPU µs per request',
    rightLabel: '',
    series: seriesOf(cells),
  }),
)
console.log(`wrote ${output}`)

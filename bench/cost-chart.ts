/**
 * A chart of what the bridge costs on one broker, from a broker bench's
 * results (bench/rabbitmq.bench.ts, kafka.bench.ts, pulsar.bench.ts): CPU
 * time of the bench process per request against the requests in flight, one
 * line per setup (raw echo, in process, worker threads one invocation per
 * worker, worker threads several per worker).
 *
 *   node bench/cost-chart.ts bench/results/rabbitmq.json docs/bench-rabbitmq.svg
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { lineChartSvg, type Series } from './svg-chart.ts'

interface Row {
  setup: string
  inFlight: number
  nodeCpuUsPerReq: number
}

const [input, output] = process.argv.slice(2)
if (!input || !output) throw new Error('usage: node bench/cost-chart.ts <results.json> <chart.svg>')
const results = JSON.parse(readFileSync(input, 'utf8')) as { bench: string; rows: Row[] }

const NAMES: Record<string, string> = {
  baseline: 'raw echo',
  'in-process': 'in-process',
  local: 'workers, 1 per worker',
  'local-shared': 'workers, several per worker',
}
const COLORS = ['#7f8c8d', '#27ae60', '#c0392b', '#2471a3']
const series: Series[] = Object.keys(NAMES)
  .filter((setup) => results.rows.some((r) => r.setup === setup))
  .map((setup, i) => ({
    name: NAMES[setup]!,
    color: COLORS[i]!,
    axis: 'left',
    points: results.rows
      .filter((r) => r.setup === setup)
      .sort((a, b) => a.inFlight - b.inFlight)
      .map((r): [number, number] => [r.inFlight, r.nodeCpuUsPerReq]),
  }))
writeFileSync(
  output,
  lineChartSvg({
    title: `toolbridge on ${results.bench}: CPU per request (client + service, one process)`,
    xLabel: 'requests in flight',
    leftLabel: 'CPU µs per request',
    rightLabel: '',
    series,
  }),
)
console.log(`wrote ${output}`)

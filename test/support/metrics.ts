/** Reading a running bridge's own metrics in tests. */
import type { Runtime } from '../../bridge/runtime.ts'

/** A sample's value from the runtime's Prometheus text, by its name and labels as written; 0 when absent. */
export async function metricValue(runtime: Runtime, series: string): Promise<number> {
  const { body } = await runtime.metrics.render()
  const line = body.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

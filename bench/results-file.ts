/**
 * A bench's results file: the JSON it writes under bench/results/ (or where
 * it is told), saying where, with the bench's name, the date, the machine and
 * the load average before and after the run for the numbers' context.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, relative } from 'node:path'
import { loadAverage, type Machine } from './machine.ts'

/** Writes the results as JSON and says where. */
export function writeResults(path: string, result: object): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, JSON.stringify(result, null, 2) + '\n')
  console.log(`\nwrote ${relative(process.cwd(), path) || path}`)
}

/**
 * Says the load average after the run (`note` after it), then writes the
 * results: the bench's name, the date, the machine with the load average
 * before and after (other work on the machine skews every number), and `body`.
 */
export function writeBenchResults(
  path: string,
  bench: string,
  machine: Machine,
  loadBefore: number[],
  body: object,
  note = '',
): void {
  const loadAfter = loadAverage()
  console.log(`load average after: ${loadAfter.join(' / ')}${note}`)
  writeResults(path, {
    bench,
    date: new Date().toISOString(),
    machine: { ...machine, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
    ...body,
  })
}

/** The console's calls waiting for the bridge's report of their request (bridge/http/console/assets/awaited-reports.js). */
import { describe, expect, it } from 'vitest'

interface Report {
  id: string
  ms: number
}
interface AwaitedReportsClass {
  new (
    max: number,
  ): {
    await(id: string, known: readonly Report[], show: (report: Report) => void): void
    reported(report: Report): void
    readonly size: number
  }
}
// The browser's own script, as it is served: plain JavaScript without declarations.
const MODULE = '../../bridge/http/console/assets/awaited-reports.js'
const { AwaitedReports } = (await import(MODULE)) as { AwaitedReports: AwaitedReportsClass }

describe('AwaitedReports', () => {
  it('shows a report the log already has at once, the latest of that id', () => {
    const reports = new AwaitedReports(10)
    const shown: Report[] = []
    const log = [
      { id: 'a', ms: 1 },
      { id: 'b', ms: 2 },
      { id: 'a', ms: 3 },
    ]
    reports.await('a', log, (r) => shown.push(r))
    expect(shown).toEqual([{ id: 'a', ms: 3 }])
    expect(reports.size).toBe(0)
  })

  it('shows a report that arrives after the answer to its call only, once', () => {
    const reports = new AwaitedReports(10)
    const shown: string[] = []
    reports.await('a', [{ id: 'b', ms: 1 }], (r) => shown.push(`a:${r.ms}`))
    reports.await('c', [], (r) => shown.push(`c:${r.ms}`))
    expect(shown).toEqual([])
    expect(reports.size).toBe(2)
    reports.reported({ id: 'x', ms: 9 })
    reports.reported({ id: 'a', ms: 5 })
    reports.reported({ id: 'a', ms: 6 })
    expect(shown).toEqual(['a:5'])
    expect(reports.size).toBe(1)
  })

  it('keeps only the last `max` waits: a report that never comes does not hold its call for ever', () => {
    const reports = new AwaitedReports(2)
    const shown: string[] = []
    for (const id of ['a', 'b', 'c']) reports.await(id, [], () => shown.push(id))
    expect(reports.size).toBe(2)
    for (const id of ['a', 'b', 'c']) reports.reported({ id, ms: 0 })
    expect(shown).toEqual(['b', 'c'])
    expect(reports.size).toBe(0)
  })
})

// Calls waiting for the bridge's report of their request. The report comes
// by the live log, and may reach the page before the call's answer or after
// it; one that never comes (the bridge restarted) must not hold its call for
// ever, so only the last `max` waits are kept.

export class AwaitedReports {
  #waiting = new Map()
  #max

  constructor(max) {
    this.#max = max
  }

  /** Calls `show` with the report of request `id`: now, if `known` (the log, oldest first) has it, else when it arrives. */
  await(id, known, show) {
    const report = known.findLast((entry) => entry.id === id)
    if (report) return show(report)
    this.#waiting.set(id, show)
    if (this.#waiting.size > this.#max) this.#waiting.delete(this.#waiting.keys().next().value)
  }

  /** A report arrived: shown to the call waiting for it, if one is. */
  reported(report) {
    const show = this.#waiting.get(report.id)
    if (!show) return
    this.#waiting.delete(report.id)
    show(report)
  }

  /** Calls still waiting. */
  get size() {
    return this.#waiting.size
  }
}

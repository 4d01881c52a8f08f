/**
 * How the benches print their numbers: fixed-decimal formatting with '-' for
 * a number that is not one, and tables of padded columns, including the
 * throughput columns every throughput table opens with.
 */

/** `digits` decimals; '-' for NaN and infinities. */
export const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
/** Rounded, with thousands separators; '-' for NaN and infinities. */
export const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-')
/** Like fmt, with a '+' before positive numbers and zero. */
export const fmtSigned = (n: number, digits: number) =>
  Number.isFinite(n) ? (n >= 0 ? '+' : '') + n.toFixed(digits) : '-'

export interface Column<R> {
  title: string
  /** Width the title and every cell are padded to. */
  width: number
  /** Default: right. */
  align?: 'left' | 'right'
  cell: (row: R) => string
}

function tableLine<R>(columns: Column<R>[], texts: string[]): string {
  return texts
    .map((text, i) =>
      columns[i]!.align === 'left' ? text.padEnd(columns[i]!.width) : text.padStart(columns[i]!.width),
    )
    .join('  ')
}

/** The column titles and a rule under them. */
export function printHeader<R>(columns: Column<R>[]): void {
  const head = tableLine(
    columns,
    columns.map((c) => c.title),
  )
  console.log(head)
  console.log('-'.repeat(head.length))
}

export function printRow<R>(columns: Column<R>[], row: R): void {
  console.log(
    tableLine(
      columns,
      columns.map((c) => c.cell(row)),
    ),
  )
}

/** The header and rows, a blank line between in-flight levels. */
export function printTableByInFlight<R extends { inFlight: number }>(columns: Column<R>[], rows: R[]): void {
  printHeader(columns)
  let last: number | undefined
  for (const row of rows) {
    if (last !== undefined && row.inFlight !== last) console.log('')
    last = row.inFlight
    printRow(columns, row)
  }
}

/** What a throughput table's row shows first: its setup and in-flight level, req/s (median and range over rounds), p50 and p99. */
export interface ThroughputRow {
  setup: string
  inFlight: number
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  p50Ms: number
  p99Ms: number
}

/** The columns a throughput table opens with; `msDigits` decimals for the latencies. */
export function throughputColumns<R extends ThroughputRow>(setupWidth = 10, msDigits = 3): Column<R>[] {
  return [
    { title: 'setup', width: setupWidth, align: 'left', cell: (r) => r.setup },
    { title: 'in-flight', width: 9, cell: (r) => String(r.inFlight) },
    { title: 'req/s', width: 7, cell: (r) => fmtInt(r.reqPerSec) },
    { title: 'min-max req/s', width: 13, cell: (r) => `${fmtInt(r.reqPerSecMin)}-${fmtInt(r.reqPerSecMax)}` },
    { title: 'p50 ms', width: 7, cell: (r) => fmt(r.p50Ms, msDigits) },
    { title: 'p99 ms', width: 7, cell: (r) => fmt(r.p99Ms, msDigits) },
  ]
}

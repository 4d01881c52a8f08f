/**
 * A small line chart as SVG, two y axes: enough to show how a long run went
 * (memory and throughput over time) without a plotting dependency.
 */

export interface Series {
  name: string
  color: string
  /** [x, y] in data units. */
  points: [number, number][]
  /** Which y axis it is read against. */
  axis: 'left' | 'right'
}

export interface Chart {
  title: string
  xLabel: string
  leftLabel: string
  rightLabel: string
  series: Series[]
}

const WIDTH = 720
const HEIGHT = 360
const MARGIN = { top: 40, right: 70, bottom: 45, left: 70 }
const TICKS = 5

export const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** A "nice" upper bound for an axis that starts at 0. */
function niceMax(value: number): number {
  if (!(value > 0)) return 1
  const magnitude = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude
  return 10 * magnitude
}

const label = (n: number) => (Math.abs(n) >= 1000 ? `${Math.round(n / 100) / 10}k` : String(Math.round(n * 10) / 10))

export function lineChartSvg(chart: Chart): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom
  const all = chart.series.flatMap((s) => s.points)
  const xMax = niceMax(Math.max(...all.map(([x]) => x)))
  const yMax = {
    left: niceMax(
      Math.max(0, ...chart.series.filter((s) => s.axis === 'left').flatMap((s) => s.points.map(([, y]) => y))),
    ),
    right: niceMax(
      Math.max(0, ...chart.series.filter((s) => s.axis === 'right').flatMap((s) => s.points.map(([, y]) => y))),
    ),
  }
  const px = (x: number) => MARGIN.left + (x / xMax) * plotW
  const py = (y: number, axis: 'left' | 'right') => MARGIN.top + plotH - (y / yMax[axis]) * plotH

  const parts: string[] = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="11">`,
  )
  parts.push(`<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`)
  parts.push(`<text x="${WIDTH / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(chart.title)}</text>`)
  for (let i = 0; i <= TICKS; i++) {
    const y = MARGIN.top + plotH - (i / TICKS) * plotH
    const x = MARGIN.left + (i / TICKS) * plotW
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`)
    parts.push(`<text x="${MARGIN.left - 6}" y="${y + 4}" text-anchor="end">${label((i / TICKS) * yMax.left)}</text>`)
    parts.push(`<text x="${MARGIN.left + plotW + 6}" y="${y + 4}">${label((i / TICKS) * yMax.right)}</text>`)
    parts.push(`<text x="${x}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${label((i / TICKS) * xMax)}</text>`)
  }
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  )
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 8}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
  )
  parts.push(
    `<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(chart.leftLabel)}</text>`,
    `<text transform="translate(${WIDTH - 14} ${MARGIN.top + plotH / 2}) rotate(90)" text-anchor="middle">${escapeXml(chart.rightLabel)}</text>`,
  )
  chart.series.forEach((series, i) => {
    const d = series.points
      .map(([x, y], j) => `${j === 0 ? 'M' : 'L'}${px(x).toFixed(1)},${py(y, series.axis).toFixed(1)}`)
      .join(' ')
    parts.push(`<path d="${d}" fill="none" stroke="${series.color}" stroke-width="1.5"/>`)
    const lx = MARGIN.left + 10 + i * Math.min(200, plotW / chart.series.length)
    parts.push(
      `<line x1="${lx}" x2="${lx + 18}" y1="${MARGIN.top - 8}" y2="${MARGIN.top - 8}" stroke="${series.color}" stroke-width="2"/>`,
    )
    parts.push(`<text x="${lx + 22}" y="${MARGIN.top - 4}">${escapeXml(`${series.name} (${series.axis})`)}</text>`)
  })
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

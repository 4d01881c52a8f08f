/**
 * A flame graph of one thread's CPU profile over a window, as SVG, with no
 * dependency: each box is a function on the stack, as wide as the time
 * spent in it and in what it called, its callers below it. Boxes are
 * coloured by where the code lives (cpu-profile.ts areaOf), and each has a
 * tooltip with its name, its time per request and its share. Idle time is
 * left out, and boxes narrower than a pixel are dropped.
 */
import { areaOf, frameName, IDLE, type ProfileNode, type WindowedProfile } from './cpu-profile.ts'
import { escapeXml } from './svg-chart.ts'

const WIDTH = 1200
const ROW = 16
const TOP = 44
const FONT = 11
/** About how wide one character of FONT is, to cut a label to its box. */
const CHAR = 6.2

const COLORS: [RegExp, string][] = [
  [/^toolbridge/, '#6b9bd1'],
  [/^the function$/, '#c77dd1'],
  [/^V8 collector$/, '#e06c5f'],
  [/^V8 /, '#d9a05b'],
  [/^native calls$/, '#e39a7b'],
  [/^node$/, '#e8c95a'],
]
const PACKAGE_COLOR = '#7cc47f'

/** The flame graph of a profile's window, in which `requests` were answered. */
export function flameGraphSvg({ nodes, rootId, selfUs }: WindowedProfile, requests: number, title: string): string {
  const total = new Map<number, number>()
  const totalOf = (id: number): number => {
    const node = nodes.get(id)!
    if (areaOf(node.callFrame.url, node.callFrame.functionName) === IDLE) return 0
    let sum = selfUs.get(id) ?? 0
    for (const child of node.children ?? []) sum += totalOf(child)
    total.set(id, sum)
    return sum
  }
  const rootUs = totalOf(rootId)
  const scale = rootUs > 0 ? WIDTH / rootUs : 0
  interface Box {
    x: number
    depth: number
    width: number
    name: string
    area: string
    totalUs: number
  }
  const boxes: Box[] = []
  const place = (node: ProfileNode, x: number, depth: number) => {
    const totalUs = total.get(node.id) ?? 0
    const width = totalUs * scale
    if (width < 1) return
    const area = areaOf(node.callFrame.url, node.callFrame.functionName)
    boxes.push({ x, depth, width, name: depth === 0 ? 'all' : frameName(node.callFrame), area, totalUs })
    let childX = x
    for (const child of node.children ?? []) {
      place(nodes.get(child)!, childX, depth + 1)
      childX += (total.get(child) ?? 0) * scale
    }
  }
  place(nodes.get(rootId)!, 0, 0)
  const depthMax = Math.max(0, ...boxes.map((box) => box.depth))
  const height = TOP + (depthMax + 1) * ROW + 8
  // Callers below, what they called above.
  const rowY = (depth: number) => height - 8 - (depth + 1) * ROW
  const placed = boxes.map(({ x, depth, width, name, area, totalUs }) => {
    const color = COLORS.find(([pattern]) => pattern.test(area))?.[1] ?? PACKAGE_COLOR
    const tip = `${name}\n${area}: ${(totalUs / requests).toFixed(1)} µs per request, ${((100 * totalUs) / rootUs).toFixed(1)} %`
    const fits = Math.floor((width - 4) / CHAR)
    const label = fits < 3 ? '' : name.length <= fits ? name : `${name.slice(0, fits - 1)}…`
    return (
      `<g><title>${escapeXml(tip)}</title>` +
      `<rect x="${x.toFixed(1)}" y="${rowY(depth)}" width="${width.toFixed(1)}" height="${ROW - 1}" fill="${color}"/>` +
      (label ? `<text x="${(x + 2).toFixed(1)}" y="${rowY(depth) + ROW - 4}">${escapeXml(label)}</text>` : '') +
      '</g>'
    )
  })
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="${FONT}">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="4" y="16" font-size="14">${escapeXml(title)}</text>`,
    `<text x="4" y="34" fill="#555">${escapeXml(`${(rootUs / requests).toFixed(0)} µs per request not idle; width: time in a function and what it called; hover for numbers`)}</text>`,
    ...placed,
    '</svg>',
    '',
  ].join('\n')
}

/**
 * Reading a V8 CPU profile (`node --cpu-prof`): the time each function
 * spent itself over a window, grouped by function and by where its code
 * lives (toolbridge, the function, the broker's client, node, V8's
 * collector), so that a bench can say where a request's CPU goes; and the
 * profile's call tree over the window, for a flame graph (flame-graph.ts).
 */
import { readFileSync } from 'node:fs'

export interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  /** Microseconds, on the clock of process.hrtime(). */
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Microseconds each function spent itself, and each area, over the window. */
export interface SelfTimes {
  /** "name file:line" → µs; idle time is no function's. */
  byFunction: Map<string, number>
  byArea: Map<string, number>
  /** All the samples in the window, idle included. */
  totalUs: number
}

/** The area of the samples taken while the thread waited. */
export const IDLE = 'idle'

/** Where code lives, by its URL: the project's own folders, a package by name, node, or V8's own entries. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') {
    // V8's own entries are in parentheses; any other function without a URL is node's or V8's C++ (writev, postMessage...).
    if (functionName === '(garbage collector)') return 'V8 collector'
    if (functionName === '(idle)') return IDLE
    return functionName.startsWith('(') ? `V8 ${functionName}` : 'native calls'
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pkg) return pkg[1]!
  if (url.startsWith('node:')) return 'node'
  const own = /\/(bridge|shared|lib|functions|bench)\//.exec(url)
  return own ? (own[1] === 'functions' ? 'the function' : `toolbridge ${own[1]}/`) : url
}

const shortUrl = (url: string) =>
  url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(bridge|shared|lib|functions)\//, '$1/')

/** A profile's call tree and the time each node spent itself between `fromUs` and `toUs` (hrtime µs). */
export interface WindowedProfile {
  nodes: Map<number, ProfileNode>
  /** The tree's root (V8's `(root)`). */
  rootId: number
  /** Node id → µs spent in the node itself within the window. */
  selfUs: Map<number, number>
}

export function readWindow(path: string, fromUs: number, toUs: number): WindowedProfile {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile
  const selfUs = new Map<number, number>()
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!
    const spent = profile.timeDeltas[i + 1] ?? 0
    if (at < fromUs || at >= toUs) continue
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + spent)
  }
  return { nodes: new Map(profile.nodes.map((node) => [node.id, node])), rootId: profile.nodes[0]!.id, selfUs }
}

/** How a node is named in the reports: "function file:line". */
export function frameName({ functionName, url, lineNumber }: ProfileNode['callFrame']): string {
  return `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`
}

/** Self time per function and per area of a profile's window. */
export function selfTimes({ nodes, selfUs }: WindowedProfile): SelfTimes {
  const byFunction = new Map<string, number>()
  const byArea = new Map<string, number>()
  let totalUs = 0
  for (const [id, spent] of selfUs) {
    const { callFrame } = nodes.get(id)!
    const area = areaOf(callFrame.url, callFrame.functionName)
    byArea.set(area, (byArea.get(area) ?? 0) + spent)
    if (area !== IDLE) {
      const key = frameName(callFrame)
      byFunction.set(key, (byFunction.get(key) ?? 0) + spent)
    }
    totalUs += spent
  }
  return { byFunction, byArea, totalUs }
}

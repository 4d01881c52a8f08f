/**
 * The dependency rule of docs/architecture.md, checked on every source file:
 *
 *   cli -> dev -> runtime -> http -> {core, trustgraph} -> tracing -> {invokers, transports, stores} -> project -> support -> shared
 *
 * A file may import from its own folder and from any folder of a lower
 * layer; folders on the same layer do not import each other. `shared/` and
 * `lib/` import nothing of the project beyond themselves; the example
 * functions and the serverless plugin import only `shared/`. And no files
 * import each other in a loop, type-only imports included.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')

/** Layer of each place; higher may import lower. */
const LAYERS: [place: string, layer: number][] = [
  ['package.json', 0], // read for the version `toolbridge --version` prints
  ['shared', 0],
  ['bridge/support', 1],
  ['bridge/project', 2],
  ['bridge/invokers', 3],
  ['bridge/transports', 3],
  ['bridge/stores', 3], // where answered-once records live: this process's memory, or Redis
  ['bridge/tracing', 3.5], // uses invokers' and transports' types; the core uses it
  ['bridge/core', 4],
  ['bridge/trustgraph', 4],
  ['bridge/http', 5],
  ['bridge/runtime.ts', 6],
  ['bridge/dev', 7],
  ['bridge/cli', 8],
]

/** Places that stand apart: they may import themselves and the places listed, nothing else of the project. */
const APART: [place: string, mayImport: string[]][] = [
  ['lib/pulsar-client', []],
  ['functions', ['shared']],
  ['serverless-plugin', ['shared']],
]

/** bridge/transports may use the Pulsar client. */
const ALSO_ALLOWED: [from: string, to: string][] = [['bridge/transports', 'lib/pulsar-client']]

const within = (file: string, place: string) => file === place || file.startsWith(`${place}/`)
const placeOf = (file: string, places: string[]) =>
  places.filter((place) => within(file, place)).sort((a, b) => b.length - a.length)[0]

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.(ts|mts|mjs|js)$/.test(entry.name) ? [path] : []
  })
}

/** Every project file a source file reaches by a relative specifier: static, dynamic, re-exports, worker URLs. */
function relativeImports(file: string, text: string): string[] {
  const specifiers = [
    ...text.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g),
    ...text.matchAll(/new URL\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*,\s*import\.meta\.url/g),
  ].map((match) => match[1] as string)
  return specifiers.map((specifier) => normalize(join(dirname(file), specifier)))
}

/** The rule's verdict on one import; undefined when it is allowed. */
function violation(from: string, to: string): string | undefined {
  for (const [from2, to2] of ALSO_ALLOWED) if (within(from, from2) && within(to, to2)) return undefined
  const apart = APART.find(([place]) => within(from, place))
  if (apart) {
    const [place, mayImport] = apart
    if (within(to, place) || mayImport.some((allowed) => within(to, allowed))) return undefined
    return `${place} imports only ${[place, ...mayImport].join(', ')}`
  }
  if (APART.some(([place]) => within(to, place))) return `${to} is imported only by the places the rule names`
  const places = LAYERS.map(([place]) => place)
  const fromPlace = placeOf(from, places)
  const toPlace = placeOf(to, places)
  if (fromPlace === undefined || toPlace === undefined) return `${from} or ${to} is in no layer`
  if (fromPlace === toPlace) return undefined
  const layer = new Map(LAYERS)
  const fromLayer = layer.get(fromPlace) as number
  const toLayer = layer.get(toPlace) as number
  if (toLayer < fromLayer) return undefined
  return toLayer === fromLayer ? `${fromPlace} and ${toPlace} are on one layer` : `${toPlace} is above ${fromPlace}`
}

/** Each group of files that import each other in a loop (Tarjan's strongly connected components), sorted. */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const visit = (file: string) => {
    index.set(file, index.size)
    low.set(file, index.get(file)!)
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const group: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      group.push(member)
    } while (member !== file)
    if (group.length > 1 || graph.get(file)?.includes(file)) cycles.push(group.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return cycles
}

describe('the dependency rule', () => {
  const files = ['shared', 'lib', 'bridge', 'functions', 'serverless-plugin'].flatMap(sourceFiles)

  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(50)
    const edges = files.flatMap((file) => relativeImports(file, readFileSync(join(ROOT, file), 'utf8')))
    expect(edges.length).toBeGreaterThan(150)
  })

  it('has no import that points backward or sideways', () => {
    const broken = files.flatMap((file) =>
      relativeImports(file, readFileSync(join(ROOT, file), 'utf8')).flatMap((target) => {
        const why = violation(file, relative(ROOT, join(ROOT, target)))
        return why ? [`${file} -> ${target}: ${why}`] : []
      }),
    )
    expect(broken).toEqual([])
  })

  it('has no import cycle', () => {
    const graph = new Map(
      files.map((file) => [file, relativeImports(file, readFileSync(join(ROOT, file), 'utf8'))] as const),
    )
    expect(importCycles(graph)).toEqual([])
  })

  it('finds a cycle however long, and only cycles', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
      ['f', ['d']],
    ])
    expect(importCycles(graph)).toEqual([['a', 'b', 'c'], ['e']])
  })

  it('refuses the imports the rule forbids', () => {
    expect(violation('bridge/project/settings.ts', 'bridge/invokers/worker-threads/worker-thread-invoker.ts')).toBe(
      'bridge/invokers is above bridge/project',
    )
    expect(violation('bridge/invokers/http-function/http-function-invoker.ts', 'bridge/transports/transport.ts')).toBe(
      'bridge/invokers and bridge/transports are on one layer',
    )
    expect(violation('bridge/support/metrics.ts', 'bridge/core/bridge.ts')).toBe('bridge/core is above bridge/support')
    expect(violation('shared/protocol.ts', 'bridge/support/logger.ts')).toBe('bridge/support is above shared')
    expect(violation('lib/pulsar-client/client.ts', 'shared/errors.ts')).toBe(
      'lib/pulsar-client imports only lib/pulsar-client',
    )
    expect(violation('functions/joke/handler.ts', 'bridge/runtime.ts')).toBe('functions imports only functions, shared')
    expect(violation('bridge/core/bridge.ts', 'lib/pulsar-client/index.ts')).toBe(
      'lib/pulsar-client/index.ts is imported only by the places the rule names',
    )
  })

  it('allows imports downward and within a place', () => {
    expect(violation('bridge/cli/main.ts', 'bridge/runtime.ts')).toBeUndefined()
    expect(violation('bridge/http/mcp.ts', 'bridge/trustgraph/tool-caller.ts')).toBeUndefined()
    expect(violation('bridge/transports/pulsar/pulsar-transport.ts', 'lib/pulsar-client/index.ts')).toBeUndefined()
    expect(violation('bridge/core/bridge.ts', 'bridge/core/responders.ts')).toBeUndefined()
    expect(violation('bridge/project/settings.ts', 'shared/errors.ts')).toBeUndefined()
  })

  it('reads static, dynamic and worker imports', () => {
    const text = [
      "import { a } from './a.ts'",
      "export { b } from '../b.ts'",
      "const c = await import('./c.ts')",
      "new Worker(new URL('./worker.ts', import.meta.url))",
      "import { d } from 'node:fs'",
    ].join('\n')
    expect(relativeImports('bridge/invokers/x.ts', text)).toEqual([
      'bridge/invokers/a.ts',
      'bridge/b.ts',
      'bridge/invokers/c.ts',
      'bridge/invokers/worker.ts',
    ])
  })
})

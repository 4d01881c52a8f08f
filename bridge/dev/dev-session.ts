/**
 * `toolbridge dev`: the bridge on the embedded broker with the web console,
 * reloading on change. When a file a function is made of changes
 * (module-graph.ts), a worker of the new code loads first; if it loads, new
 * requests go to new workers and the old ones finish what they took; if not,
 * the error (file and line) is shown in the terminal and the console and the
 * last good code serves on. A changed serverless.yml that reads well
 * restarts the bridge (its requests in flight drain first); one that does not
 * is shown the same way.
 *
 * Files are watched with one node:fs.watch per folder (project-watcher.ts),
 * which sees every save an editor or a tool makes; docs/dev-loop.md has how
 * it compares with Node's recursive watch, chokidar and @parcel/watcher.
 */
import { readFileSync, statSync } from 'node:fs'
import { isAbsolute, relative, resolve } from 'node:path'
import { messageOf } from '../../shared/errors.ts'
import { ConsoleFeed, type CodeStatus } from '../http/console/console-feed.ts'
import { resolveHandler } from '../invokers/run-handler.ts'
import { splitLoadError } from '../invokers/load-error.ts'
import { loadProject, type Project } from '../project/project.ts'
import type { Settings } from '../project/settings.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import type { Sources } from '../invokers/invoker.ts'
import type { Logger } from '../support/logger.ts'
import { startRuntime, type Runtime } from '../runtime.ts'
import { ChangeBatches } from './change-batches.ts'
import { syntaxPlace } from './syntax-place.ts'
import { affectedFunctions, moduleFiles } from './module-graph.ts'
import { watchProject, type WatchOptions } from './project-watcher.ts'

/** An editor's save is over within this; a person does not save twice as fast. */
export const QUIET_MS = 100

export interface DevSession {
  readonly feed: ConsoleFeed
  /** The gateway's URL (the console's). */
  readonly url: string
  readonly runtime: Runtime
  /** The project being served: the last good serverless.yml. */
  readonly project: Project
  /** Resolves once the changes seen so far are handled. */
  settled(): Promise<void>
  stop(): Promise<void>
}

/** Larger than any module a person writes: a bigger file is not read for its imports. */
const MAX_SOURCE_BYTES = 4 * 1024 * 1024

/** A source file's text; undefined for what is not a regular file (a FIFO would block the read) or too large. */
const readText = (file: string) => {
  try {
    const stats = statSync(file)
    if (!stats.isFile() || stats.size > MAX_SOURCE_BYTES) return undefined
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

export async function startDev(
  configFile: string,
  settings: Settings,
  options: { logger: Logger; say: (line: string) => void; quietMs?: number; watch?: WatchOptions },
): Promise<DevSession> {
  const { logger, say } = options
  const configPath = resolve(configFile)
  const feed = new ConsoleFeed()
  let project = loadProject(configPath)
  const baseDir = project.baseDir
  const shown = (file: string) => (isAbsolute(file) ? relative(baseDir, file) || file : file)
  let runtime = await startRuntime(project, settings, { logger, console: feed })
  // A restart keeps the port the console is open on, even one the system chose.
  const port = Number(new URL(runtime.gateway!.url).port)
  let filesByFunction = new Map<string, Set<string>>()

  /**
   * Puts each function's code as it is now in service, its files' texts given to its workers: one
   * started later loads this code, whatever the disk holds then. Resolves with the load errors.
   */
  async function pinCode(specs: readonly ToolServiceSpec[]): Promise<Map<ToolServiceSpec, string>> {
    const failures = new Map<ToolServiceSpec, string>()
    for (const spec of specs) {
      if (spec.location.kind !== 'handler') continue
      const code = codeOf(project.baseDir, spec.location.handler)
      // A handler that is not a file to read is not loaded: a worker would wait on a FIFO forever.
      const error = code.unreadable ?? (await runtime.reload(spec, code.sources))
      if (error !== undefined) failures.set(spec, error)
    }
    filesByFunction = functionFiles(project, filesByFunction)
    return failures
  }
  await pinCode(project.services)

  const report = (status: CodeStatus) => {
    feed.setStatus(status)
    const where =
      status.file === undefined ? '' : `${status.file}${status.line === undefined ? '' : `:${status.line}`}: `
    say(status.state === 'ok' ? `toolbridge: ${status.message}` : `toolbridge: ${where}${status.message}`)
  }

  async function reloadConfig(): Promise<void> {
    let next: Project
    try {
      next = loadProject(configPath)
    } catch (err) {
      const message = messageOf(err)
      const line = /\bline (\d+)/.exec(message)?.[1]
      return report({
        state: 'broken',
        at: Date.now(),
        message: `${message}; still serving the last good serverless.yml`,
        file: shown(configPath),
        line: line === undefined ? undefined : Number(line),
      })
    }
    await runtime.stop()
    try {
      runtime = await startRuntime(next, { ...settings, port }, { logger, console: feed })
      project = next
    } catch (err) {
      runtime = await startRuntime(project, { ...settings, port }, { logger, console: feed })
      return report({
        state: 'broken',
        at: Date.now(),
        message: `${messageOf(err)}; still serving the last good serverless.yml`,
        file: shown(configPath),
      })
    }
    await pinCode(project.services)
    report({ state: 'ok', at: Date.now(), message: `serverless.yml changed: restarted with ${toolCount(project)}` })
  }

  async function reloadFunctions(changed: Set<string>): Promise<void> {
    const names = affectedFunctions(changed, filesByFunction)
    if (names.length === 0) return
    const specs = names.map((name) => project.services.find((s) => s.functionName === name)!)
    const failures: CodeStatus[] = []
    for (const [spec, error] of await pinCode(specs)) {
      const { message, place: reported } = splitLoadError(error)
      const place = reported ?? (await syntaxPlace(changed))
      failures.push({
        state: 'broken',
        at: Date.now(),
        message: `${message}; ${spec.functionName} serves on with its last good code`,
        file: shown(place?.file ?? [...changed][0]!),
        line: place?.line,
      })
    }
    const changedNames = [...changed].map(shown).join(', ')
    if (failures.length > 0) for (const failure of failures) report(failure)
    else report({ state: 'ok', at: Date.now(), message: `reloaded ${names.join(', ')} (${changedNames} changed)` })
  }

  const batches = new ChangeBatches(options.quietMs ?? QUIET_MS, async (files) => {
    try {
      if (files.has(configPath)) await reloadConfig()
      else await reloadFunctions(files)
    } catch (err) {
      logger.error({ err: messageOf(err) }, 'reload failed')
    }
  })
  const watcher = watchProject(
    baseDir,
    (file) => batches.add(file),
    (message) => report({ state: 'broken', at: Date.now(), message }),
    options.watch,
  )
  report({ state: 'ok', at: Date.now(), message: `watching ${baseDir} for changes` })

  return {
    feed,
    get url() {
      return runtime.gateway!.url
    },
    get runtime() {
      return runtime
    },
    get project() {
      return project
    },
    settled: () => batches.idle(),
    async stop() {
      watcher.close()
      batches.stop()
      await batches.idle()
      await runtime.stop()
    },
  }
}

const toolCount = (project: Project) => {
  const n = project.services.reduce((sum, s) => sum + s.tools.length, 0)
  return `${n} tool${n === 1 ? '' : 's'}`
}

/**
 * For each function run from this project's files: the files its code is made of. A function
 * whose handler file is not there now (deleted before its new one is written) keeps those it had,
 * so that the new one is seen.
 */
function functionFiles(project: Project, before: ReadonlyMap<string, Set<string>>): Map<string, Set<string>> {
  const files = new Map<string, Set<string>>()
  for (const spec of project.services) {
    if (spec.location.kind !== 'handler') continue
    const code = codeOf(project.baseDir, spec.location.handler)
    const kept = before.get(spec.functionName)
    if (code.files.size > 0) files.set(spec.functionName, code.files)
    else if (kept !== undefined) files.set(spec.functionName, kept)
  }
  return files
}

/**
 * A function's files (its handler's path even when unreadable now) and the texts of those that
 * read; `unreadable` says why its handler cannot be loaded as it is on disk.
 */
function codeOf(baseDir: string, handler: string): { files: Set<string>; sources: Sources; unreadable?: string } {
  let entry: string
  try {
    entry = resolveHandler(baseDir, handler).file
  } catch (err) {
    return { files: new Set(), sources: {}, unreadable: messageOf(err) }
  }
  const texts = new Map<string, string>()
  const read = (file: string) => {
    const text = readText(file)
    if (text !== undefined) texts.set(file, text)
    return text
  }
  const files = moduleFiles(entry, read)
  files.add(entry)
  const unreadable = texts.has(entry)
    ? undefined
    : `${relative(baseDir, entry)} is not a file that can be read (a folder, a FIFO, or over ${MAX_SOURCE_BYTES / 1024 / 1024} MB)`
  return { files, sources: Object.fromEntries(texts), unreadable }
}

/**
 * A worker's modules loaded from texts it was given instead of from disk:
 * `toolbridge dev` hands each worker the files of the code it last loaded
 * well, so a worker started later (a burst, or after the warm ones idled
 * out) runs that code even while the file on disk is broken, half-saved or
 * gone. Files not given (packages, Node's own) load as usual.
 */
import { registerHooks } from 'node:module'
import { extname } from 'node:path'
import { pathToFileURL } from 'node:url'

/** What a module is, by its name, for a file no longer on disk to ask. */
const FORMATS: Record<string, string> = {
  '.ts': 'module-typescript',
  '.mts': 'module-typescript',
  '.cts': 'commonjs-typescript',
  '.cjs': 'commonjs',
}

/** Sources by absolute file path. */
export function loadFromSources(sources: Readonly<Record<string, string>>): void {
  const byUrl = new Map(Object.entries(sources).map(([file, text]) => [pathToFileURL(file).href, { file, text }]))
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context)
      } catch (err) {
        // Gone from disk, or a folder now: still there as it was.
        const url = context.parentURL === undefined ? undefined : new URL(specifier, context.parentURL).href
        if (url !== undefined && byUrl.has(url)) return { url, shortCircuit: true }
        throw err
      }
    },
    load(url, context, nextLoad) {
      const pinned = byUrl.get(url)
      if (pinned === undefined) return nextLoad(url, context)
      let format: string | null | undefined
      try {
        format = nextLoad(url, context).format
      } catch {
        format = FORMATS[extname(pinned.file)] ?? 'module'
      }
      return { format: format as 'module', source: pinned.text, shortCircuit: true }
    },
  })
}

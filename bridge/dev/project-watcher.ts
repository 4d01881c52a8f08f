/**
 * Watches a project's files with node:fs.watch: its top folder, and each
 * folder in it recursively except node_modules and dot folders (.git,
 * .serverless, .esbuild, ...). Watching the top folder recursively would
 * also walk node_modules, where Linux needs one inotify watch per folder:
 * thousands, for files no edit changes. A folder made later at the top is
 * watched from when it appears.
 */
import { type FSWatcher, readdirSync, statSync, watch } from 'node:fs'
import { join, sep } from 'node:path'

/** Folders whose files are no function's source: dependencies, VCS, build output. */
export const isIgnored = (relativePath: string) =>
  relativePath.split(sep).some((part) => part === 'node_modules' || part.startsWith('.'))

export function watchProject(
  dir: string,
  onChange: (file: string) => void,
  onError: (err: Error) => void,
): { close(): void } {
  const watchers = new Map<string, FSWatcher>()
  const add = (key: string, path: string, recursive: boolean, prefix: string) => {
    const watcher = watch(path, { recursive }, (_event, name) => {
      if (name === null) return
      const relativePath = prefix + name
      if (!isIgnored(relativePath)) onChange(join(dir, relativePath))
      if (!recursive) watchFolder(name)
    })
    watcher.on('error', onError)
    watchers.set(key, watcher)
  }
  const watchFolder = (name: string) => {
    if (watchers.has(name) || isIgnored(name)) return
    try {
      if (!statSync(join(dir, name)).isDirectory()) return
    } catch {
      return // gone already
    }
    add(name, join(dir, name), true, `${name}${sep}`)
  }
  add('', dir, false, '')
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) watchFolder(entry.name)
  return {
    close() {
      for (const watcher of watchers.values()) watcher.close()
    },
  }
}

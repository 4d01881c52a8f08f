/**
 * Watches a project's files: one node:fs.watch per folder, never recursive,
 * kept in step with the tree by this module. Node's recursive watch on Linux
 * loses a file once an editor has saved it by renaming a temporary file over
 * it, and a path that went from file to folder and back; a watch on the
 * folder sees every name in it come and go, whatever the inode behind it.
 *
 * node_modules and dot folders (.git, .serverless, .esbuild, ...) are not
 * watched: Linux needs one inotify watch per folder, thousands of them there,
 * for files no edit changes. Symbolic links to folders are not followed
 * unless asked (`followLinks`), and never beyond `maxFolders` folders in all.
 * A folder that goes has its watches closed with it. A folder that appears is
 * watched, and each file already in it counts as changed (a `git checkout`
 * writes them before the watch can be set).
 */
import {
  type Dirent,
  type FSWatcher,
  lstatSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  watch,
} from 'node:fs'
import { basename, join, relative, sep } from 'node:path'

/** Folders whose files are no function's source: dependencies, VCS, build output. */
export const isIgnored = (relativePath: string) =>
  relativePath.split(sep).some((part) => part === 'node_modules' || part.startsWith('.'))

/** Folders watched at most, unless told otherwise: far more than a project's own, far fewer than a system's limit. */
export const DEFAULT_MAX_FOLDERS = 10_000

export interface WatchOptions {
  /** Follow symbolic links to folders (default false): each folder reached counts against maxFolders. */
  followLinks?: boolean
  /** Folders watched at most (default DEFAULT_MAX_FOLDERS); beyond it, one problem is reported. */
  maxFolders?: number
}

export interface ProjectWatcher {
  /** Folders watched now: one inotify watch each on Linux. */
  readonly folders: number
  close(): void
}

/** The fix for a full inotify table, named in the message that reports it. */
const INOTIFY_FIX =
  'raise the limit with `sudo sysctl fs.inotify.max_user_watches=524288` ' +
  '(and the same line, without sudo, in /etc/sysctl.d/40-inotify.conf to keep it)'

/** The limit that was reached, read only then: the user namespace's own (Linux 5.11+), else the system's. */
const inotifyLimit = () => {
  for (const file of ['/proc/sys/user/max_inotify_watches', '/proc/sys/fs/inotify/max_user_watches']) {
    try {
      return readFileSync(file, 'utf8').trim()
    } catch {}
  }
  return undefined
}

export function watchProject(
  dir: string,
  onChange: (file: string) => void,
  onProblem: (message: string) => void,
  options: WatchOptions = {},
): ProjectWatcher {
  const tree = new WatchedTree(dir, onChange, onProblem, options)
  tree.watchTree(dir, false)
  return tree
}

/** The watches of one project's folders, kept in step with the tree as names in it change. */
class WatchedTree implements ProjectWatcher {
  /**
   * Watched folders by their path in the project (links followed keep the link's path), with the
   * inode watched: a folder deleted and made again at the same path is another folder to watch.
   */
  private readonly watchers = new Map<string, { watcher: FSWatcher; ino: number }>()
  /** Real paths of the folders watched when links are followed, so a link back up the tree is not walked twice. */
  private readonly realOf = new Map<string, string>()
  private readonly reals = new Set<string>()
  private readonly reported = new Set<string>()
  private readonly maxFolders: number
  private readonly followLinks: boolean
  private closed = false
  private readonly dir: string
  private readonly onChange: (file: string) => void
  private readonly onProblem: (message: string) => void

  constructor(
    dir: string,
    onChange: (file: string) => void,
    onProblem: (message: string) => void,
    options: WatchOptions,
  ) {
    this.dir = dir
    this.onChange = onChange
    this.onProblem = onProblem
    this.maxFolders = options.maxFolders ?? DEFAULT_MAX_FOLDERS
    this.followLinks = options.followLinks ?? false
  }

  get folders(): number {
    return this.watchers.size
  }

  close(): void {
    this.closed = true
    for (const { watcher } of this.watchers.values()) watcher.close()
    this.watchers.clear()
    this.realOf.clear()
    this.reals.clear()
  }

  /**
   * Watches `folder` and the folders under it. `announce`: each file found counts as changed
   * (the folder is new, so they were written before its watch was set).
   */
  watchTree(folder: string, announce: boolean): void {
    const pending = [folder]
    for (let next = pending.pop(); next !== undefined && !this.closed; next = pending.pop()) {
      if (this.watchers.has(next)) continue
      if (this.watchers.size >= this.maxFolders) {
        this.problem(
          'max-folders',
          `watching stopped at ${this.maxFolders} folders: files in ${relative(this.dir, next) || next} and further are not ` +
            'watched (a symbolic link to a large folder, or a project this big, is not watched whole)',
        )
        return
      }
      if (this.followLinks && !this.firstVisit(next)) continue
      if (!this.watchFolder(next)) continue
      let entries: Dirent[]
      try {
        entries = readdirSync(next, { withFileTypes: true })
      } catch {
        this.unwatch(next)
        continue
      }
      for (const entry of entries) {
        const path = join(next, entry.name)
        if (isIgnored(entry.name)) continue
        const isFolder =
          entry.isDirectory() || (entry.isSymbolicLink() && this.followLinks && this.kindOf(path) === 'folder')
        if (isFolder) pending.push(path)
        else if (announce) this.onChange(path)
      }
    }
  }

  /** With links followed: whether the real folder behind `path` is not watched yet (a link back up the tree is). */
  private firstVisit(path: string): boolean {
    let real: string
    try {
      real = realpathSync(path)
    } catch {
      return false
    }
    if (this.reals.has(real)) return false
    this.realOf.set(path, real)
    this.reals.add(real)
    return true
  }

  private problem(key: string, message: string): void {
    if (this.reported.has(key)) return
    this.reported.add(key)
    this.onProblem(message)
  }

  /** Closes the watches of a folder and of every folder under it. */
  private unwatch(folder: string): void {
    for (const [path, { watcher }] of this.watchers) {
      if (path !== folder && !path.startsWith(folder + sep)) continue
      watcher.close()
      this.watchers.delete(path)
      this.reals.delete(this.realOf.get(path)!)
      this.realOf.delete(path)
    }
  }

  /** What the entry at `path` is, symbolic links followed only when asked; undefined once gone. */
  private kindOf(path: string): 'folder' | 'file' | undefined {
    try {
      const stats = lstatSync(path)
      if (stats.isDirectory()) return 'folder'
      if (stats.isSymbolicLink() && this.followLinks && statSync(path).isDirectory()) return 'folder'
      return 'file'
    } catch {
      return undefined
    }
  }

  /** Sets the watch of one folder; false when it could not be set (gone, or the system's limit reached). */
  private watchFolder(folder: string): boolean {
    let watcher: FSWatcher
    let ino: number
    try {
      ino = statSync(folder).ino
      watcher = watch(folder, { persistent: true }, (_event, name) => {
        if (name === null) return
        const path = join(folder, name)
        if (name !== basename(folder) || this.kindOf(path) !== undefined) return this.changed(path)
        // The folder's own deletion or move, told under its own name before its parent tells of it
        // (a new folder at the same path may have the old one's inode): watched again if there.
        this.unwatch(folder)
        this.changed(folder)
      })
    } catch (err) {
      this.watchRefused(folder, err as NodeJS.ErrnoException)
      return false
    }
    // The folder itself went: its parent's watch has seen the name go and closes this one.
    watcher.on('error', () => this.unwatch(folder))
    this.watchers.set(folder, { watcher, ino })
    return true
  }

  private watchRefused(folder: string, err: NodeJS.ErrnoException): void {
    const where = relative(this.dir, folder) || '.'
    if (err.code === 'ENOSPC') {
      const limit = inotifyLimit()
      this.problem(
        'ENOSPC',
        `the system's limit of inotify watches${limit === undefined ? '' : ` (${limit})`} ` +
          `is reached: files in ${where} and further are not watched, so their edits are not ` +
          `reloaded; ${INOTIFY_FIX}, then restart toolbridge dev`,
      )
    } else if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') {
      this.problem(`watch ${folder}`, `${where} is not watched: ${err.message}`)
    }
  }

  /** A name in a watched folder changed: it may be a file, a new folder, or gone. */
  private changed(path: string): void {
    if (this.closed || isIgnored(relative(this.dir, path))) return
    const kind = this.kindOf(path)
    if (kind !== 'folder' || this.watchers.get(path)?.ino !== inodeOf(path)) this.unwatch(path) // gone, or replaced
    if (kind === 'folder' && !this.watchers.has(path)) this.watchTree(path, true)
    if (kind === undefined && path === this.dir) return this.projectGone()
    if (kind !== 'folder') this.onChange(path)
  }

  private projectGone(): void {
    this.problem(
      'gone',
      `the project folder ${this.dir} was moved or deleted: its files are no longer watched; ` +
        'the code loaded last serves on until toolbridge dev is started again where the project is',
    )
    this.close()
  }
}

const inodeOf = (path: string) => {
  try {
    return statSync(path).ino
  } catch {
    return undefined
  }
}

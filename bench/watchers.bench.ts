/**
 * Which file watcher `toolbridge dev` should use: the editors' and tools'
 * ways of changing a file, played on real files in a function's subfolder
 * (functions/fn/handler.ts), each followed by a plain in-place write that
 * the watcher must report. Backends:
 *
 *   fs.watch recursive   node:fs.watch(dir, { recursive: true })
 *   per-folder fs.watch  bridge/dev/project-watcher.ts (what dev uses)
 *   chokidar             as installed in WATCH_MODULES's node_modules (e.g. a scratch folder
 *   @parcel/watcher      where `npm install chokidar@6 @parcel/watcher` ran); skipped when absent
 *
 *   node bench/watchers.bench.ts
 *
 * Reported per backend: the cases whose in-place write after them was seen
 * (each case is played twice, as an editor saves more than once), the
 * median and range of milliseconds from that write to its report, the
 * inotify watches held with node_modules of 2,000 folders and a link to
 * /usr in the project, and the reports made while 10,000 files in
 * node_modules are touched.
 *
 * Environment: WATCH_ROUNDS   in-place writes timed per backend (default 21)
 *              WATCH_MODULES  where chokidar and @parcel/watcher are installed (default: this clone)
 */
import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { isIgnored, watchProject } from '../bridge/dev/project-watcher.ts'
import { numberEnv } from './env-settings.ts'
import { median } from './statistics.ts'
import { fmt } from './tables.ts'

const ROUNDS = Math.floor(numberEnv('WATCH_ROUNDS', 21, 1))

type Stop = () => Promise<void> | void
interface Backend {
  name: string
  start(dir: string, onChange: (file: string) => void): Promise<Stop>
}

/** The parts of chokidar and @parcel/watcher used here; neither is a dependency of the project. */
interface Chokidar {
  watch(
    dir: string,
    options: object,
  ): {
    on(event: string, listener: (...args: string[]) => void): void
    close(): Promise<void>
  }
}
interface ParcelWatcher {
  subscribe(
    dir: string,
    onEvents: (err: unknown, events: { path: string }[]) => void,
    options: object,
  ): Promise<{ unsubscribe(): Promise<void> }>
}

/** WATCH_MODULES: a folder whose node_modules hold them, when this clone's do not (its chokidar is another's, 3.x). */
const optional = async <T>(specifier: string): Promise<T | undefined> => {
  try {
    const from = createRequire(join(resolve(process.env.WATCH_MODULES ?? '.'), 'package.json'))
    return (await import(pathToFileURL(from.resolve(specifier)).href)) as T
  } catch {
    return undefined
  }
}

const versionOf = (name: string): string => {
  const file = join(resolve(process.env.WATCH_MODULES ?? '.'), 'node_modules', name, 'package.json')
  return JSON.parse(readFileSync(file, 'utf8')).version
}

async function backends(): Promise<Backend[]> {
  const list: Backend[] = [
    {
      name: 'fs.watch recursive',
      async start(dir, onChange) {
        const { watch } = await import('node:fs')
        const watcher = watch(dir, { recursive: true }, (_e, name) => {
          if (name !== null && !isIgnored(name)) onChange(join(dir, name))
        })
        return () => watcher.close()
      },
    },
    {
      name: 'per-folder fs.watch',
      async start(dir, onChange) {
        const watcher = watchProject(dir, onChange, () => {})
        return () => watcher.close()
      },
    },
  ]
  const chokidar = await optional<Chokidar>('chokidar')
  if (chokidar)
    list.push({
      name: `chokidar ${versionOf('chokidar')}`,
      async start(dir, onChange) {
        const watcher = chokidar.watch(dir, {
          ignoreInitial: true,
          followSymlinks: false,
          ignored: (path: string) => path !== dir && isIgnored(relative(dir, path)),
        })
        watcher.on('all', (_event, path) => onChange(path!))
        await new Promise<void>((resolve) => watcher.on('ready', () => resolve()))
        return () => watcher.close()
      },
    })
  const parcel = await optional<ParcelWatcher>('@parcel/watcher')
  if (parcel)
    list.push({
      name: `@parcel/watcher ${versionOf('@parcel/watcher')}`,
      async start(dir, onChange) {
        const subscription = await parcel.subscribe(
          dir,
          (_err, events) => {
            for (const event of events ?? []) onChange(event.path)
          },
          { ignore: ['node_modules', '.git'] },
        )
        return () => subscription.unsubscribe()
      },
    })
  return list
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The cases of the matrix: each changes functions/fn/handler.ts (or its folder) some way. */
const CASES: Record<string, (root: string, file: string) => void> = {
  'in-place write': (_root, file) => writeFileSync(file, 'export const v = 1\n'),
  'temp + rename': (_root, file) => {
    writeFileSync(`${file}.tmp`, 'export const v = 2\n')
    renameSync(`${file}.tmp`, file)
  },
  'temp + rename, backup': (_root, file) => {
    renameSync(file, `${file}~`)
    writeFileSync(`${file}.tmp`, 'export const v = 3\n')
    renameSync(`${file}.tmp`, file)
    unlinkSync(`${file}~`)
  },
  'delete + create': (_root, file) => {
    unlinkSync(file)
    writeFileSync(file, 'export const v = 4\n')
  },
  'file -> folder -> file': (_root, file) => {
    unlinkSync(file)
    mkdirSync(file)
    writeFileSync(join(file, 'x.ts'), '')
    rmSync(file, { recursive: true })
    writeFileSync(file, 'export const v = 5\n')
  },
  'folder replaced': (root) => {
    const folder = join(root, 'functions', 'fn')
    rmSync(folder, { recursive: true })
    mkdirSync(folder)
    writeFileSync(join(folder, 'handler.ts'), 'export const v = 6\n')
  },
  'git checkout': (root) => {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'ignore' })
    const branch = readFileSync(join(root, '.git', 'HEAD'), 'utf8').includes('other') ? 'main' : 'other'
    git('checkout', '-qf', branch)
  },
}

async function main() {
  const rows: string[] = []
  for (const backend of await backends()) {
    const root = mkdtempSync(join(tmpdir(), 'toolbridge-watch-bench-'))
    const file = join(root, 'functions', 'fn', 'handler.ts')
    mkdirSync(join(root, 'functions', 'fn'), { recursive: true })
    for (let i = 0; i < 2000; i++) mkdirSync(join(root, 'node_modules', `p${i}`), { recursive: true })
    for (let i = 0; i < 10_000; i++) writeFileSync(join(root, 'node_modules', `p${i % 2000}`, `f${i}.js`), '')
    symlinkSync('/usr', join(root, 'usr-link'))
    writeFileSync(file, 'export const v = 0\n')
    gitRepo(root)

    let seen: string[] = []
    const watchFor = async () => {
      const stop = await backend.start(root, (path) => seen.push(path))
      await sleep(300)
      return stop
    }

    /** Writes the handler in place and waits for its report: ms, or undefined when not seen in 3 s. */
    const inPlace = async (): Promise<number | undefined> => {
      await sleep(150)
      seen = []
      const started = performance.now()
      writeFileSync(file, `export const v = ${Math.random()}\n`)
      for (let waited = 0; waited < 3000; waited += 5) {
        if (seen.includes(file)) return performance.now() - started
        await sleep(5)
      }
      return undefined
    }

    // Each case with a watcher of its own, so that one lost file does not count against the next case.
    const passed: string[] = []
    const failed: string[] = []
    for (const [name, change] of Object.entries(CASES)) {
      const stopCase = await watchFor()
      let ok = true
      for (let twice = 0; twice < 2; twice++) {
        change(root, file)
        await sleep(200)
        if ((await inPlace()) === undefined) ok = false
      }
      ;(ok ? passed : failed).push(name)
      await stopCase()
      if (!existsSync(file)) writeFileSync(file, '')
    }
    const stop = await watchFor()
    const watches = inotifyWatches()
    const times: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      const ms = await inPlace()
      if (ms !== undefined) times.push(ms)
    }
    seen = []
    for (let i = 0; i < 10_000; i++) writeFileSync(join(root, 'node_modules', `p${i % 2000}`, `f${i}.js`), 'x')
    await sleep(1000)
    const installReports = seen.length
    await stop()
    rmSync(root, { recursive: true, force: true })
    const sorted = [...times].sort((a, b) => a - b)
    rows.push(
      [
        backend.name.padEnd(20),
        `${passed.length}/${Object.keys(CASES).length}`.padStart(5),
        (times.length ? `${fmt(median(times), 1)} (${fmt(sorted[0]!, 1)}-${fmt(sorted.at(-1)!, 1)})` : '-').padStart(
          20,
        ),
        String(watches).padStart(8),
        String(installReports).padStart(10),
        failed.join(', ') || '-',
      ].join('  '),
    )
  }
  console.log(
    [
      'backend'.padEnd(20),
      'cases',
      'in-place ms'.padStart(20),
      'watches'.padStart(8),
      'npm i'.padStart(10),
      'lost in',
    ].join('  '),
  )
  for (const row of rows) console.log(row)
}

/** A repository with a branch `other` that changes, adds and removes files in functions/. */
function gitRepo(root: string) {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'ignore' })
  writeFileSync(join(root, '.gitignore'), 'node_modules\nusr-link\n')
  git('init', '-q', '-b', 'main')
  git('-c', 'user.email=b@b', '-c', 'user.name=b', 'add', '.')
  git('-c', 'user.email=b@b', '-c', 'user.name=b', 'commit', '-qm', 'main')
  git('checkout', '-qb', 'other')
  for (let i = 0; i < 50; i++) {
    mkdirSync(join(root, 'functions', `f${i}`), { recursive: true })
    writeFileSync(join(root, 'functions', `f${i}`, 'handler.ts'), `export const v = ${i}\n`)
  }
  writeFileSync(join(root, 'functions', 'fn', 'handler.ts'), 'export const v = "other"\n')
  git('-c', 'user.email=b@b', '-c', 'user.name=b', 'add', '.')
  git('-c', 'user.email=b@b', '-c', 'user.name=b', 'commit', '-qm', 'other')
  git('checkout', '-q', 'main')
}

/** inotify watches this process holds (Linux): one `inotify wd:` line each in its inotify descriptors' fdinfo. */
function inotifyWatches(): number {
  let count = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (!readlinkSync(`/proc/self/fd/${fd}`).includes('inotify')) continue
      count += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('inotify wd:')).length
    } catch {}
  }
  return count
}

await main()

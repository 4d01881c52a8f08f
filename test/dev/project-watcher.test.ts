/**
 * The project watcher on real folders: what it watches (links, node_modules),
 * that it lets go of what is gone, and what it says when it cannot watch
 * (the system's inotify limit, reached for real in a user namespace of its
 * own; the project folder moved away).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { watchProject, type ProjectWatcher } from '../../bridge/dev/project-watcher.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const roots: string[] = []
const watchers: ProjectWatcher[] = []

afterEach(() => {
  for (const watcher of watchers.splice(0)) watcher.close()
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

function project(): string {
  const root = mkdtempSync(join(tmpdir(), 'toolbridge-watcher-'))
  roots.push(root)
  mkdirSync(join(root, 'functions', 'echo'), { recursive: true })
  return root
}

/** A folder outside the project holding `count` folders, one file each. */
function bigFolder(count: number): string {
  const root = mkdtempSync(join(tmpdir(), 'toolbridge-linked-'))
  roots.push(root)
  for (let i = 0; i < count; i++) {
    mkdirSync(join(root, `d${i}`))
    writeFileSync(join(root, `d${i}`, 'x.ts'), '')
  }
  return root
}

function watch(root: string, options = {}) {
  const changes: string[] = []
  const problems: string[] = []
  const watcher = watchProject(
    root,
    (file) => changes.push(relative(root, file)),
    (message) => problems.push(message),
    options,
  )
  watchers.push(watcher)
  return { watcher, changes, problems }
}

describe('watchProject', () => {
  it('does not follow a link to a folder unless asked, and then stops at maxFolders with one message', async () => {
    const root = project()
    const linked = bigFolder(300)
    symlinkSync(linked, join(root, 'linked'))
    const plain = watch(root)
    expect(plain.watcher.folders).toBe(3) // the project, functions, functions/echo
    writeFileSync(join(linked, 'd1', 'x.ts'), 'changed')
    await sleep(200)
    expect(plain.changes).toEqual([])

    const following = watch(root, { followLinks: true, maxFolders: 100 })
    expect(following.watcher.folders).toBe(100)
    expect(following.problems).toHaveLength(1)
    expect(following.problems[0]).toMatch(/^watching stopped at 100 folders: files in linked/)

    const all = watch(root, { followLinks: true })
    expect(all.watcher.folders).toBe(3 + 1 + 300)
    writeFileSync(join(linked, 'd1', 'x.ts'), 'changed again')
    await sleep(200)
    expect(all.changes).toContain(join('linked', 'd1', 'x.ts'))
  })

  it('walks a link back up the tree once', () => {
    const root = project()
    symlinkSync('..', join(root, 'functions', 'echo', 'up'))
    const { watcher, problems } = watch(root, { followLinks: true })
    expect(watcher.folders).toBe(3)
    expect(problems).toEqual([])
  })

  it('lets go of the watches of a folder that goes, and watches one made again at its place', async () => {
    const root = project()
    const { watcher, changes } = watch(root)
    const tree = join(root, 'functions', 'tree')
    mkdirSync(tree)
    for (let i = 0; i < 50; i++) mkdirSync(join(tree, `d${i}`))
    writeFileSync(join(tree, 'd7', 'handler.ts'), '')
    await sleep(300)
    expect(watcher.folders).toBe(3 + 51)
    // Written before its folder's watch could be set: reported when the folder is found.
    expect(changes).toContain(join('functions', 'tree', 'd7', 'handler.ts'))
    rmSync(tree, { recursive: true })
    await sleep(300)
    expect(watcher.folders).toBe(3)
    mkdirSync(join(tree, 'd1'), { recursive: true })
    await sleep(300)
    changes.length = 0
    writeFileSync(join(tree, 'd1', 'handler.ts'), '')
    await sleep(300)
    expect(changes).toContain(join('functions', 'tree', 'd1', 'handler.ts'))
  })

  it('reports nothing of 10,000 files in node_modules touched by an install, and holds no watch there', async () => {
    const root = project()
    for (let i = 0; i < 100; i++) mkdirSync(join(root, 'node_modules', `p${i}`), { recursive: true })
    const { watcher, changes } = watch(root)
    expect(watcher.folders).toBe(3)
    for (let i = 0; i < 10_000; i++) writeFileSync(join(root, 'node_modules', `p${i % 100}`, `f${i}.js`), 'x')
    writeFileSync(join(root, 'package-lock.json'), '{}')
    await sleep(300)
    expect(new Set(changes)).toEqual(new Set(['package-lock.json']))
  })

  it('says so when the project folder is moved away, and lets go of every watch', async () => {
    const root = project()
    const { watcher, problems } = watch(root)
    renameSync(root, `${root}-moved`)
    roots.push(`${root}-moved`)
    await sleep(300)
    expect(problems).toEqual([
      `the project folder ${root} was moved or deleted: its files are no longer watched; ` +
        'the code loaded last serves on until toolbridge dev is started again where the project is',
    ])
    expect(watcher.folders).toBe(0)
  })
})

describe("the system's inotify limit", () => {
  // A user namespace of its own has a limit of its own, which its root may lower (Linux 5.11+).
  const probe = spawnSync('unshare', ['-Ur', 'sh', '-c', 'echo 5 > /proc/sys/user/max_inotify_watches'])
  const canLower = probe.status === 0

  it.skipIf(!canLower)('is reported once, naming the fix, and what could be watched still is', () => {
    if (!canLower) console.log('skipped: needs `unshare -Ur` and a writable /proc/sys/user/max_inotify_watches')
    const root = project()
    for (let i = 0; i < 20; i++) mkdirSync(join(root, 'functions', `f${i}`))
    const child = `
      import { writeFileSync } from 'node:fs'
      import { watchProject } from ${JSON.stringify(join(import.meta.dirname, '../../bridge/dev/project-watcher.ts'))}
      const changes = []
      const problems = []
      const root = ${JSON.stringify(root)}
      const watcher = watchProject(root, (f) => changes.push(f), (m) => problems.push(m))
      writeFileSync(root + '/serverless.yml', 'x')
      setTimeout(() => {
        console.log(JSON.stringify({ folders: watcher.folders, problems, changes }))
        watcher.close()
      }, 300)
    `
    const run = spawnSync(
      'unshare',
      [
        '-Ur',
        'sh',
        '-c',
        `echo 8 > /proc/sys/user/max_inotify_watches && exec "${process.execPath}" --input-type=module -e "$0"`,
        child,
      ],
      { encoding: 'utf8' },
    )
    expect(run.stderr).toBe('')
    const seen = JSON.parse(run.stdout)
    expect(seen.folders).toBe(8)
    expect(seen.problems).toHaveLength(1)
    expect(seen.problems[0]).toMatch(
      /^the system's limit of inotify watches \(8\) is reached: files in functions\/\S+ and further are not watched/,
    )
    expect(seen.problems[0]).toContain('sudo sysctl fs.inotify.max_user_watches=524288')
    expect(new Set(seen.changes)).toEqual(new Set([join(root, 'serverless.yml')]))
  })
})

/**
 * `toolbridge dev` against the ways editors and tools change a file, on real
 * files in a function's subfolder (functions/echo/handler.ts): each change
 * is followed by a plain in-place write, which the running session must
 * serve. While the file on disk is broken, every worker, even one started
 * after the break, answers with the last good code.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDev, type DevSession } from '../../bridge/dev/dev-session.ts'
import type { CodeStatus } from '../../bridge/http/console/console-feed.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { silentLogger } from '../../bridge/support/logger.ts'

const SERVERLESS_YML = `service: editor-saves
provider:
  name: aws
  runtime: nodejs24.x
functions:
  echo:
    handler: functions/echo/handler.handler
    toolService:
      id: echo-service
      topic: editor-saves-echo
      tools:
        - name: echo
          description: Echoes the text with the code's version
          arguments:
            - name: text
              type: string
              description: What to echo
              required: true
            - name: wait
              type: integer
              description: Milliseconds to wait first
`

/** The handler as a version of it: it answers `<word> <version>: <text>`. */
const handlerText = (version: string) => `import { word } from './word.ts'

export const handler = async (event: { arguments: { text: string; wait?: number } }): Promise<string> => {
  if (event.arguments.wait) await new Promise((resolve) => setTimeout(resolve, event.arguments.wait))
  return \`\${word} ${version}: \${event.arguments.text}\`
}
`

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let dir = ''
let file = ''
let session: DevSession
const statuses: CodeStatus[] = []

async function echo(args: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${session.url}/tools/echo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: { text: 'hi', ...args } }),
  })
  const last = JSON.parse((await res.text()).trim().split('\n').at(-1)!)
  return last.response ?? `error: ${last.error?.message}`
}

/** Calls until the answer is `expected` (the change was seen and loaded), or gives the last answer after 20 s. */
async function served(expected: string): Promise<string> {
  let answer = ''
  for (let tries = 0; tries < 200; tries++) {
    answer = await echo()
    if (answer === expected) return answer
    await sleep(100)
  }
  return answer
}

/** An ordinary save: the file written in place. */
async function editInPlace(version: string) {
  writeFileSync(file, handlerText(version))
  expect(await served(`hello ${version}: hi`)).toBe(`hello ${version}: hi`)
}

const git = (...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=dev@example.com', '-c', 'user.name=dev', ...args], {
    cwd: dir,
    stdio: 'ignore',
  })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'toolbridge-saves-'))
  file = join(dir, 'functions', 'echo', 'handler.ts')
  mkdirSync(join(dir, 'functions', 'echo'), { recursive: true })
  writeFileSync(join(dir, 'serverless.yml'), SERVERLESS_YML)
  writeFileSync(join(dir, 'functions', 'echo', 'word.ts'), "export const word = 'hello'\n")
  writeFileSync(file, handlerText('v0'))
  // A branch that changes the handler and its import and adds 40 files in new folders.
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n')
  git('init', '-q', '-b', 'main')
  git('add', '.')
  git('commit', '-qm', 'main')
  git('checkout', '-qb', 'other')
  writeFileSync(file, handlerText('checked-out'))
  writeFileSync(join(dir, 'functions', 'echo', 'word.ts'), "export const word = 'howdy'\n")
  for (let i = 0; i < 40; i++) {
    mkdirSync(join(dir, 'functions', `f${i}`, 'lib'), { recursive: true })
    writeFileSync(join(dir, 'functions', `f${i}`, 'lib', 'x.ts'), `export const x = ${i}\n`)
  }
  git('add', '.')
  git('commit', '-qm', 'other')
  git('checkout', '-q', 'main')

  const settings = { ...resolveSettings({ port: '0', invoker: 'worker-threads' }, {}), broker: undefined }
  session = await startDev(join(dir, 'serverless.yml'), settings, { logger: silentLogger, say: () => {} })
  session.feed.onStatus((status) => statuses.push(status))
  expect(await echo()).toBe('hello v0: hi')
})

afterAll(async () => {
  await session?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('toolbridge dev serves every save', () => {
  it('an in-place write', async () => {
    await editInPlace('v1')
    await editInPlace('v1b')
  })

  it('a temporary file renamed over it (vim, Emacs, JetBrains, sed -i), twice', async () => {
    for (const version of ['v2', 'v3']) {
      writeFileSync(`${file}.tmp`, handlerText(version))
      renameSync(`${file}.tmp`, file)
      expect(await served(`hello ${version}: hi`)).toBe(`hello ${version}: hi`)
      await editInPlace(`${version}-edit`)
    }
  })

  it('a temporary file renamed over it, the old one kept as a backup first (vim with backup)', async () => {
    renameSync(file, `${file}~`)
    writeFileSync(`${file}.swp`, handlerText('v4'))
    renameSync(`${file}.swp`, file)
    unlinkSync(`${file}~`)
    expect(await served('hello v4: hi')).toBe('hello v4: hi')
    await editInPlace('v4-edit')
  })

  it('deleted, then made again later', async () => {
    unlinkSync(file)
    await sleep(400) // long enough for dev to see the file gone on its own
    expect(await echo()).toBe('hello v4-edit: hi')
    writeFileSync(file, handlerText('v5'))
    expect(await served('hello v5: hi')).toBe('hello v5: hi')
    await editInPlace('v5-edit')
  })

  it('replaced by a folder, then by a file again; the last good code answers meanwhile', async () => {
    unlinkSync(file)
    mkdirSync(file)
    writeFileSync(join(file, 'index.ts'), '')
    await sleep(400)
    expect(await echo()).toBe('hello v5-edit: hi')
    rmSync(file, { recursive: true })
    writeFileSync(file, handlerText('v6'))
    expect(await served('hello v6: hi')).toBe('hello v6: hi')
    await editInPlace('v6-edit')
  })

  it('a git checkout of a branch that changes the handler, its import and adds 40 files in new folders', async () => {
    git('checkout', '-qf', 'other')
    expect(await served('howdy checked-out: hi')).toBe('howdy checked-out: hi')
    git('checkout', '-qf', 'main')
    expect(await served('hello v0: hi')).toBe('hello v0: hi')
    await editInPlace('v7')
  })

  it('a storm of broken saves is loaded once, and new workers meanwhile load the last good code', async () => {
    await session.settled()
    const before = statuses.length
    const broken = statuses.length
    for (let i = 0; i < 200; i++) writeFileSync(file, `export const handler = ( ${i}`)
    for (let tries = 0; tries < 200 && statuses.length === broken; tries++) await sleep(50)
    await session.settled()
    const seen = statuses.slice(before)
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.length).toBeLessThanOrEqual(3) // one batch for 200 writes, not one load each
    expect(seen.every((status) => status.state === 'broken')).toBe(true)
    // Eight calls at once, each waiting: they need workers beyond the warm one, started after the break.
    const answers = await Promise.all(Array.from({ length: 8 }, () => echo({ wait: 300 })))
    expect(answers).toEqual(Array(8).fill('hello v7: hi'))
    await editInPlace('v8')
  })

  it('a 50 MB file saved in the project is no reload; a FIFO at the handler path is reported, never read', async () => {
    writeFileSync(join(dir, 'functions', 'echo', 'big.bin'), Buffer.alloc(50 * 1024 * 1024))
    await sleep(400)
    await editInPlace('v9')
    await session.settled()
    const before = statuses.length
    unlinkSync(file)
    execFileSync('mkfifo', [file])
    for (let tries = 0; tries < 200 && !statuses.slice(before).some((s) => /FIFO/.test(s.message)); tries++)
      await sleep(50)
    expect(statuses.slice(before).at(-1)).toMatchObject({ state: 'broken', message: expect.stringMatching(/FIFO/) })
    expect(await echo({ wait: 10 })).toBe('hello v9: hi')
    unlinkSync(file)
    await editInPlace('v10')
  })
})

/**
 * The README and the pages of docs/, run: their code blocks marked runnable
 * are executed in each page's order, so that what a page promises and what
 * the command does cannot drift apart. Each page runs on its own: its own
 * scratch project, port and serving command, so a block may depend only on
 * the blocks before it on the same page (a page that needs a file or a
 * running bridge sets it up itself). A block is marked by an HTML comment on
 * the line before it (blank lines between are allowed):
 *
 *   <!-- run: exit=2 expect="expected key=value" -->
 *
 * Attribute values are quoted with " or ' (or bare, without spaces).
 *
 * - `exit=N`: every command of the block exits N (default 0).
 * - `expect="..."`: what the block's commands print (stdout and stderr)
 *   contains this (with the port written as in the commands, below); repeatable.
 * - `server`: the block runs while `npm start` (package.json's start script)
 *   serves, as in a second terminal.
 * - `background`: the block is one command that keeps serving (a
 *   `toolbridge start`); the blocks after it run while it does, until the
 *   next `server` or `background` block stops it. It counts as started once
 *   its /readyz answers 200, and once its output contains `expect`.
 * - `file=PATH`: the block is not run but written to PATH in the scratch
 *   project, a temporary directory whose `shared/` and `node_modules/` are
 *   this repository's, so a handler written there imports what the README
 *   says it imports.
 * - `in=scratch`: the commands run in the scratch project, not in the repository.
 * - `needs=rabbitmq`: run only when RabbitMQ answers on 127.0.0.1:5672;
 *   `@rabbitmq:5672` in the commands becomes `@127.0.0.1:5672`.
 *
 * Ports: the README says 8080. The runner sets TOOLBRIDGE_PORT to a free
 * port for every command (toolbridge start listens there, toolbridge invoke
 * looks for a bridge there) and writes that port wherever a command says
 * 8080, so whatever runs on this machine's 8080 is never called.
 * `npx toolbridge` runs this checkout's command (node_modules/.bin/toolbridge, which
 * `npm ci` links to it) through a
 * stand-in `npx` first on PATH; any other use of npx fails rather than reach
 * a registry. TOOLBRIDGE_* variables of the environment the tests run in are
 * left out.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DOC_PAGES } from '../support/doc-pages.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Fail-safes against a hung child, not limits on how fast anything must be. */
const COMMAND_TIMEOUT_MS = 60_000
const SERVER_START_TIMEOUT_MS = 60_000
const TEST_TIMEOUT_MS = 2 * COMMAND_TIMEOUT_MS

interface Block {
  /** 1-based line of the block's opening fence in its page. */
  line: number
  attributes: {
    exit: number
    expect: string[]
    server: boolean
    background: boolean
    file?: string
    inScratch: boolean
    needsRabbitmq: boolean
  }
  text: string
}

/** The marked code blocks of a Markdown page, in order. */
function runnableBlocks(markdown: string, page: string): Block[] {
  const lines = markdown.split('\n')
  const blocks: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    const marker = /^<!-- run:(.*)-->\s*$/.exec(lines[i]!)
    if (!marker) continue
    let fence = i + 1
    while (fence < lines.length && lines[fence]!.trim() === '') fence++
    if (!/^```/.test(lines[fence] ?? ''))
      throw new Error(`${page}:${i + 1}: a run marker must come right before a code block`)
    const end = lines.findIndex((line, at) => at > fence && /^```\s*$/.test(line))
    if (end < 0) throw new Error(`${page}:${fence + 1}: code block never closed`)
    blocks.push({
      line: fence + 1,
      attributes: parseAttributes(marker[1]!, `${page}:${i + 1}`),
      text: lines.slice(fence + 1, end).join('\n') + '\n',
    })
    i = end
  }
  return blocks
}

function parseAttributes(text: string, place: string): Block['attributes'] {
  const attributes: Block['attributes'] = {
    exit: 0,
    expect: [],
    server: false,
    background: false,
    inScratch: false,
    needsRabbitmq: false,
  }
  for (const [, name, doubleQuoted, singleQuoted, bare] of text.matchAll(/(\w+)(?:="([^"]*)"|='([^']*)'|=(\S+))?/g)) {
    const value = doubleQuoted ?? singleQuoted ?? bare
    if (name === 'exit' && value !== undefined && /^\d+$/.test(value)) attributes.exit = Number(value)
    else if (name === 'expect' && value !== undefined) attributes.expect.push(value)
    else if (name === 'server' && value === undefined) attributes.server = true
    else if (name === 'background' && value === undefined) attributes.background = true
    else if (name === 'file' && value !== undefined) attributes.file = value
    else if (name === 'in' && value === 'scratch') attributes.inScratch = true
    else if (name === 'needs' && value === 'rabbitmq') attributes.needsRabbitmq = true
    else throw new Error(`${place}: unknown run attribute "${name}${value === undefined ? '' : `=${value}`}"`)
  }
  return attributes
}

/** A block's commands: comments and blank lines out, `\` continuations joined. */
function commandsOf(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

async function rabbitmqAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(5672, '127.0.0.1')
    socket.setTimeout(1000)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })
}

/** README.md, then every Markdown page under docs/ (subfolders too), each with its marked blocks. */
const pages = DOC_PAGES.map((page) => ({ page, blocks: runnableBlocks(readFileSync(join(ROOT, page), 'utf8'), page) }))

describe('runnable blocks', () => {
  it('the README has some, and the pages together keep every one they had', () => {
    expect(pages[0]!.blocks.length).toBeGreaterThan(0)
    expect(pages.reduce((count, { blocks }) => count + blocks.length, 0)).toBeGreaterThanOrEqual(13)
  })
})

for (const { page, blocks } of pages.filter(({ blocks }) => blocks.length > 0)) describePage(page, blocks)

/** One page's blocks, in order, in a scratch project and on a port of the page's own. */
function describePage(page: string, blocks: Block[]): void {
  describe(`${page}, run`, () => {
    let port: number
    let scratch: string
    let env: NodeJS.ProcessEnv
    let rabbitmq: boolean
    let server: { child: ChildProcess; output: () => string; exited: Promise<number | null> } | undefined

    beforeAll(async () => {
      port = await freePort()
      rabbitmq = await rabbitmqAnswers()
      scratch = mkdtempSync(join(tmpdir(), 'toolbridge-readme-'))
      symlinkSync(join(ROOT, 'shared'), join(scratch, 'shared'))
      symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'))
      const bin = join(scratch, '.bin')
      mkdirSync(bin)
      writeFileSync(
        join(bin, 'npx'),
        `#!/bin/sh\nif [ "$1" = toolbridge ]; then shift; exec "${join(ROOT, 'node_modules/.bin/toolbridge')}" "$@"; fi\necho "the README runner runs only npx toolbridge, not npx $*" >&2\nexit 127\n`,
      )
      chmodSync(join(bin, 'npx'), 0o755)
      env = {
        ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_'))),
        TOOLBRIDGE_PORT: String(port),
        PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      }
    })

    afterAll(async () => {
      await stopServer()
      rmSync(scratch, { recursive: true, force: true })
    })

    const localize = (command: string) =>
      command.replace(/\b8080\b/g, String(port)).replaceAll('@rabbitmq:5672', '@127.0.0.1:5672')

    function run(command: string, cwd: string): Promise<{ code: number | null; output: string }> {
      return new Promise((resolve) => {
        execFile(
          'bash',
          ['-c', command],
          { cwd, env, timeout: COMMAND_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
            resolve({ code, output: stdout + stderr })
          },
        )
      })
    }

    /** Stops the serving command, as SIGTERM would in its terminal; it must drain and exit 0. */
    async function stopServer(): Promise<void> {
      if (!server) return
      const { child, exited, output } = server
      server = undefined
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      expect(await exited, `the serving command did not exit 0 on SIGTERM:\n${output()}`).toBe(0)
    }

    async function startServer(command: string, cwd: string, expected: string[]): Promise<void> {
      await stopServer()
      // exec: the signal goes to the command itself, not to a shell waiting for it.
      const child = spawn('bash', ['-c', `exec ${command}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      child.stdout.on('data', (data: Buffer) => (output += data))
      child.stderr.on('data', (data: Buffer) => (output += data))
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      server = { child, output: () => output, exited }
      const deadline = Date.now() + SERVER_START_TIMEOUT_MS
      let exitedEarly = false
      void exited.then(() => (exitedEarly = true))
      for (;;) {
        if (exitedEarly) throw new Error(`\`${command}\` exited before serving:\n${output}`)
        if (Date.now() > deadline) throw new Error(`\`${command}\` did not become ready:\n${output}`)
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (res) => res.ok,
          () => false,
        )
        if (ready && expected.every((fragment) => output.includes(fragment))) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }

    for (const block of blocks) {
      const { attributes } = block
      const title = `${page}:${block.line}: ${attributes.file ?? commandsOf(block.text)[0] ?? ''}`
      it(
        title,
        async ({ skip }) => {
          if (attributes.needsRabbitmq && !rabbitmq) skip('RabbitMQ does not answer on 127.0.0.1:5672')
          if (attributes.file !== undefined) {
            const path = join(scratch, attributes.file)
            mkdirSync(dirname(path), { recursive: true })
            writeFileSync(path, block.text)
            return
          }
          const cwd = attributes.inScratch ? scratch : ROOT
          if (attributes.server) {
            const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
              scripts: { start: string }
            }
            await startServer(scripts.start, ROOT, [])
          }
          const commands = commandsOf(block.text).map(localize)
          if (attributes.background) {
            expect(commands, 'a background block holds one command').toHaveLength(1)
            return startServer(commands[0]!, cwd, attributes.expect.map(localize))
          }
          let output = ''
          for (const command of commands) {
            const result = await run(command, cwd)
            output += result.output
            expect({ command, code: result.code, output: result.output }).toMatchObject({
              command,
              code: attributes.exit,
            })
          }
          for (const fragment of attributes.expect.map(localize)) expect(output).toContain(fragment)
        },
        TEST_TIMEOUT_MS,
      )
    }
  })
}

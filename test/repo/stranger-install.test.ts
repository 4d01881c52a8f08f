/**
 * The README's install, as a stranger follows it before toolbridge is on the npm registry: the
 * lines of its `<!-- install -->` block, exactly as written, run one after another by one shell
 * in a fresh clone of this repository inside an empty temporary folder. The clone is made here
 * (`git clone` of this checkout's committed HEAD), as the README's reader already has one.
 * Then `npm publish --dry-run` of this checkout, which must pass for the day it is published.
 *
 * Packages come from the npm registry this machine reaches (the npm cache preferred) and from
 * the tarball the block packs; nothing resolves to this checkout's node_modules.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stripVTControlCharacters } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { strangerEnv } from '../support/stranger-env.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** A fail-safe against a hung install on a busy machine, not a limit on how fast it must be. */
const INSTALL_TIMEOUT_MS = 600_000

/** The README's install block: the lines after `<!-- install -->`, inside its sh fence. */
function installLines(readme: string): string[] {
  const match = /^<!-- install -->\n```sh\n([\s\S]*?)\n```$/m.exec(readme)
  if (!match?.[1]) throw new Error('README.md has no <!-- install --> sh block')
  return match[1].split('\n').filter((line) => line.trim() !== '')
}

/** A stranger's shell; the npm cache first: the install is the same, only fewer trips to the registry. */
const STRANGER_ENV = strangerEnv({
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
})

function run(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env: STRANGER_ENV, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
        resolve({ code, output: stripVTControlCharacters(stdout + stderr) })
      },
    )
  })
}

const work = realpathSync(mkdtempSync(join(tmpdir(), 'toolbridge-stranger-')))
afterAll(() => rmSync(work, { recursive: true, force: true }))

describe("the README's install, before toolbridge is published", () => {
  const lines = installLines(readFileSync(join(ROOT, 'README.md'), 'utf8'))

  it(
    'packs the clone, installs the tarball in an empty folder, and the scaffold it makes installs and passes its test',
    async () => {
      const clone = join(work, 'toolbridge')
      const cloned = await run('git', ['clone', '--quiet', ROOT, clone], work)
      expect(cloned.output).toBe('')
      // One shell, as a reader pastes the block: `cd` carries over, the first failing line stops it.
      const script = ['set -e', ...lines.flatMap((line) => [`echo "+ ${line.replaceAll('"', '\\"')}"`, line])].join(
        '\n',
      )
      const followed = await run('sh', ['-c', script], clone)
      expect(followed.code, followed.output).toBe(0)
      expect(followed.output).toMatch(/toolbridge: created .*package\.json/)
      expect(followed.output).toMatch(/Tests\s+2 passed/)

      const project = join(work, 'my-tool')
      const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>
        scripts: Record<string, string>
      }
      // The scaffold's dependency is the tarball, which its own `npm install` just installed again.
      expect(pkg.dependencies.toolbridge).toMatch(/^file:\.\.\/toolbridge-\d+\.\d+\.\d+\.tgz$/)
      expect(pkg.scripts).toMatchObject({ test: 'vitest run', dev: 'toolbridge dev' })
      const installed = realpathSync(join(project, 'node_modules', 'toolbridge'))
      expect(installed.startsWith(realpathSync(ROOT))).toBe(false)
      expect(installed.startsWith(clone)).toBe(false)

      // From there, a project in a new folder depends on the same tarball, its path re-pointed.
      const made = await run(join(project, 'node_modules', '.bin', 'toolbridge'), ['init', 'second'], project)
      expect(made.code, made.output).toBe(0)
      const second = JSON.parse(readFileSync(join(project, 'second', 'package.json'), 'utf8')) as typeof pkg
      const spec = second.dependencies.toolbridge ?? ''
      expect(spec).toMatch(/^file:\.\.\/\.\.\/toolbridge-[\d.]+\.tgz$/)
      expect(existsSync(join(project, 'second', spec.slice('file:'.length)))).toBe(true)
    },
    INSTALL_TIMEOUT_MS,
  )
})

describe('npm publish --dry-run', () => {
  it(
    'passes for this checkout',
    async () => {
      const published = await run('npm', ['publish', '--dry-run'], ROOT)
      expect(published.code, published.output).toBe(0)
      expect(published.output).toMatch(/\+ toolbridge@\d+\.\d+\.\d+/)
    },
    INSTALL_TIMEOUT_MS,
  )
})

/**
 * What `toolbridge init` writes carries the project's name everywhere (no
 * placeholder left, none mangled by a formatter), has the `dev` script its
 * README names, and can be written where `npm init` and an install of
 * toolbridge have already been: the command from this clone, run in
 * temporary folders.
 */
import { execFile, execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEMPLATES } from '../../bridge/cli/template-names.ts'

const MAIN = fileURLToPath(new URL('../../bridge/cli/main.ts', import.meta.url))

function toolbridge(cwd: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, env, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    )
  })
}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'toolbridge-scaffold-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const read = (...path: string[]) => readFileSync(join(dir, ...path), 'utf8')

describe('toolbridge init', () => {
  for (const template of TEMPLATES) {
    it.concurrent(`${template}: the README, package.json and serverless.yml carry the project's name`, async () => {
      const name = `weather-${template}`
      const run = await toolbridge(dir, 'init', name, '--template', template)
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
      const files = run.stdout.match(/^ {2}\S+$/gm)?.map((line) => line.trim()) ?? []
      expect(read(name, 'README.md').split('\n')[0]).toBe(`# ${name}`)
      expect(JSON.parse(read(name, 'package.json')).name).toBe(name)
      expect(parseYaml(read(name, 'serverless.yml')).service).toBe(name)
      expect(JSON.parse(read(name, 'package.json')).scripts.dev).toBe('toolbridge dev')
      for (const file of ['README.md', 'package.json', 'serverless.yml', ...files]) {
        const text = read(name, file)
        expect(text, file).not.toMatch(/__[A-Z]+__|\*\*[A-Z]+\*\*/)
      }
    })
  }

  it('writes into a folder where npm init and an install of toolbridge have been, keeping what was installed', async () => {
    const project = join(dir, 'after-npm')
    mkdirSync(project)
    execFileSync('npm', ['init', '-y'], { cwd: project, stdio: 'ignore' })
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))
    pkg.dependencies = { toolbridge: 'file:../toolbridge-0.1.0.tgz' }
    writeFileSync(join(project, 'package.json'), JSON.stringify(pkg, null, 2))
    writeFileSync(join(project, 'package-lock.json'), '{}')
    mkdirSync(join(project, 'node_modules', 'toolbridge'), { recursive: true })

    const run = await toolbridge(dir, 'init', 'after-npm')
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).not.toMatch(/overwrote/)
    const written = JSON.parse(read('after-npm', 'package.json'))
    expect(written.name).toBe('after-npm')
    expect(written.type).toBe('module')
    expect(written.dependencies.toolbridge).toBe('file:../toolbridge-0.1.0.tgz')
    expect(written.scripts).toMatchObject({ test: 'vitest run', dev: 'toolbridge dev', start: 'toolbridge start' })
    expect(written.devDependencies.vitest).toMatch(/^\^?\d/)
    expect(read('after-npm', 'README.md').split('\n')[0]).toBe('# after-npm')
  })

  it('still refuses a folder holding anything else, naming it', async () => {
    const project = join(dir, 'after-npm-notes')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), '{"name":"x"}')
    writeFileSync(join(project, 'notes.txt'), 'keep')
    const run = await toolbridge(dir, 'init', 'after-npm-notes')
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/after-npm-notes is not empty \(notes\.txt\)/)
    expect(readFileSync(join(project, 'package.json'), 'utf8')).toBe('{"name":"x"}')
  })
})

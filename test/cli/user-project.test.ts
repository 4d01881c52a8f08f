/**
 * What a user's own project can get wrong, and `toolbridge init` / `add
 * function` on their folders: the command from this clone
 * (`node bridge/cli/main.ts`) run in temporary folders, checked by its output,
 * exit code and the files it leaves. test/repo/package.test.ts runs the same
 * commands from the packed package.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import ToolServicePlugin from '../../serverless-plugin/tool-service.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = join(ROOT, 'bridge/cli/main.ts')
/** A fail-safe against a hung child, not a limit on how fast it must be. */
const CHILD_TIMEOUT_MS = 30_000

const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function toolbridge(cwd: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd, env: cleanEnv(), timeout: CHILD_TIMEOUT_MS },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
      },
    )
  })
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '')

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'toolbridge-user-project-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function write(path: string, text: string): string {
  const file = join(dir, path)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
  return file
}

describe('toolbridge init', () => {
  it.concurrent('writes a TypeScript project by default, and prints what it wrote and what to run next', async ({
    expect,
  }) => {
    const run = await toolbridge(dir, 'init', 'fresh')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    const project = join(dir, 'fresh')
    for (const file of [
      'package.json',
      'serverless.yml',
      'tsconfig.json',
      '.gitignore',
      'README.md',
      'functions/hello/handler.ts',
      'test/hello.test.ts',
    ]) {
      expect(existsSync(join(project, file)), file).toBe(true)
    }
    expect(existsSync(join(project, 'functions/hello/handler.js'))).toBe(false)
    expect(run.stdout).toContain('functions/hello/handler.ts')
    expect(run.stdout).toContain('npm install')
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      name: string
      dependencies: Record<string, string>
      devDependencies: Record<string, string>
    }
    expect(pkg.name).toBe('fresh')
    expect(pkg.dependencies.toolbridge).toMatch(/^\^\d+\.\d+\.\d+/)
    expect(Object.keys(pkg.devDependencies)).toEqual(expect.arrayContaining(['typescript', 'vitest', 'osls']))
    const yml = parseYaml(readFileSync(join(project, 'serverless.yml'), 'utf8')) as {
      service: string
      plugins: string[]
    }
    expect(yml.service).toBe('fresh')
    expect(yml.plugins).toContain('toolbridge/serverless')
  })

  it.concurrent('serves the tool it wrote: descriptors of the new project name its service', async ({ expect }) => {
    expect((await toolbridge(dir, 'init', 'described', '--template', 'streaming')).code).toBe(0)
    const run = await toolbridge(join(dir, 'described'), 'descriptors')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    const descriptors = JSON.parse(run.stdout) as { tool: Record<string, unknown> }
    expect(Object.keys(descriptors.tool)).toEqual(['tell-story'])
  })

  it.concurrent('writes JavaScript and no tsconfig.json with --js', async ({ expect }) => {
    const run = await toolbridge(dir, 'init', 'plain', '--js')
    expect(run.code).toBe(0)
    expect(existsSync(join(dir, 'plain/functions/hello/handler.js'))).toBe(true)
    expect(existsSync(join(dir, 'plain/test/hello.test.js'))).toBe(true)
    expect(existsSync(join(dir, 'plain/functions/hello/handler.ts'))).toBe(false)
    expect(existsSync(join(dir, 'plain/tsconfig.json'))).toBe(false)
    const pkg = JSON.parse(readFileSync(join(dir, 'plain/package.json'), 'utf8')) as {
      devDependencies: Record<string, string>
    }
    expect(pkg.devDependencies.typescript).toBeUndefined()
  })

  it.concurrent('refuses a folder that is not empty, names what --force would overwrite, and writes nothing', async ({
    expect,
  }) => {
    const yml = write('busy/serverless.yml', 'service: mine\n')
    write('busy/notes.txt', 'keep\n')
    const run = await toolbridge(dir, 'init', 'busy')
    expect(run.code).toBe(1)
    expect(lines(run.stderr)).toEqual([
      expect.stringMatching(
        /busy is not empty \(notes\.txt, serverless\.yml\); --force would overwrite serverless\.yml$/,
      ),
    ])
    expect(readFileSync(yml, 'utf8')).toBe('service: mine\n')
    expect(existsSync(join(dir, 'busy/package.json'))).toBe(false)
  })

  it.concurrent('writes into a folder that is not empty with --force, and says what it overwrote', async ({
    expect,
  }) => {
    write('forced/serverless.yml', 'service: mine\n')
    write('forced/notes.txt', 'keep\n')
    const run = await toolbridge(dir, 'init', 'forced', '--force')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^toolbridge: overwrote serverless\.yml$/m)
    expect(readFileSync(join(dir, 'forced/serverless.yml'), 'utf8')).toContain('toolbridge/serverless')
    expect(readFileSync(join(dir, 'forced/notes.txt'), 'utf8')).toBe('keep\n')
  })

  it.concurrent('refuses an unknown template and lists the ones there are', async ({ expect }) => {
    const run = await toolbridge(dir, 'init', 'unknown', '--template', 'kitchen-sink')
    expect(run.code).toBe(1)
    expect(lines(run.stderr)).toEqual([
      'toolbridge: init: unknown template "kitchen-sink" (templates: minimal, streaming, existing-api, http-function)',
    ])
    expect(existsSync(join(dir, 'unknown'))).toBe(false)
  })
})

/** Runs a tool of this clone's node_modules (tsc, vitest) in a scaffolded project. */
function runIn(cwd: string, script: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'node_modules', script), ...args],
      { cwd, env: { ...cleanEnv(), NO_COLOR: '1', FORCE_COLOR: '' }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
      },
    )
  })
}

// These two templates import nothing from toolbridge, so this clone's node_modules (express,
// serverless-http, their types, vitest) can stand in for the project's install; the templates that
// import toolbridge are type-checked and tested against the packed package in test/repo/package.test.ts.
describe.each(['existing-api', 'http-function'])('the %s template', (template) => {
  for (const language of ['ts', 'js'] as const) {
    it(`type-checks and passes its own test (${language})`, async () => {
      const project = join(dir, `${template}-${language}`)
      const init = await toolbridge(
        dir,
        'init',
        project,
        '--template',
        template,
        ...(language === 'js' ? ['--js'] : []),
      )
      expect(init.code).toBe(0)
      symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
      if (language === 'ts') {
        const checked = await runIn(project, 'typescript/bin/tsc', '--noEmit')
        expect(checked.stdout + checked.stderr).toBe('')
        expect(checked.code).toBe(0)
      }
      const tested = await runIn(project, 'vitest/vitest.mjs', 'run')
      expect(tested.stdout).toMatch(/Tests\s+2 passed/)
      expect(tested.code).toBe(0)
      const described = await toolbridge(project, 'descriptors')
      expect(described.code).toBe(0)
      expect(Object.keys((JSON.parse(described.stdout) as { tool: Record<string, unknown> }).tool)).toEqual([
        template === 'existing-api' ? 'lookup-product' : 'greet',
      ])
    })
  }
})

describe('toolbridge add function', () => {
  it('adds a function, its tool service, a handler and a test, keeping the comments of serverless.yml', async () => {
    expect((await toolbridge(dir, 'init', 'growing')).code).toBe(0)
    const project = join(dir, 'growing')
    const run = await toolbridge(project, 'add', 'function', 'weather')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(existsSync(join(project, 'functions/weather/handler.ts'))).toBe(true)
    expect(existsSync(join(project, 'test/weather.test.ts'))).toBe(true)
    const text = readFileSync(join(project, 'serverless.yml'), 'utf8')
    expect(text).toContain('# declares and validates `toolService:`')
    const yml = parseYaml(text) as { functions: Record<string, { handler: string; toolService: { id: string } }> }
    expect(Object.keys(yml.functions)).toEqual(['hello', 'weather'])
    expect(yml.functions.weather).toMatchObject({
      handler: 'functions/weather/handler.handler',
      toolService: { id: 'weather-service' },
    })
  })

  it('refuses a name that is taken, a name that cannot be one, and a folder without serverless.yml', async () => {
    expect((await toolbridge(dir, 'init', 'taken')).code).toBe(0)
    const project = join(dir, 'taken')
    const before = readFileSync(join(project, 'serverless.yml'), 'utf8')
    const taken = await toolbridge(project, 'add', 'function', 'hello')
    expect(taken.code).toBe(1)
    expect(taken.stderr).toContain('already has a function "hello"')
    const bad = await toolbridge(project, 'add', 'function', 'Not_A_Name')
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('lower-case letters, digits and dashes')
    expect(readFileSync(join(project, 'serverless.yml'), 'utf8')).toBe(before)
    mkdirSync(join(dir, 'empty-for-add'))
    const none = await toolbridge(join(dir, 'empty-for-add'), 'add', 'function', 'weather')
    expect(none.code).toBe(1)
    expect(none.stderr).toContain('npx toolbridge init')
  })
})

describe('a project without serverless.yml', () => {
  it.concurrent('start says which file it looked for and how to create one', async ({ expect }) => {
    const empty = join(dir, 'no-project')
    mkdirSync(empty)
    const run = await toolbridge(empty, 'start', '--port', '0')
    expect(run.code).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `toolbridge: serverless.yml: cannot read: ENOENT (looked for ${join(empty, 'serverless.yml')}; pass -c <file>, or create a project here with: npx toolbridge init)`,
    ])
  })
})

describe('a handler that is TypeScript inside node_modules', () => {
  let project: string
  beforeAll(() => {
    project = join(dir, 'ts-in-deps')
    write('ts-in-deps/node_modules/ts-tools/package.json', '{"name": "ts-tools", "type": "module"}\n')
    write(
      'ts-in-deps/node_modules/ts-tools/handler.ts',
      "export const handler = async (): Promise<string> => 'from ts'\n",
    )
    write('ts-in-deps/node_modules/built-tools/package.json', '{"name": "built-tools", "type": "module"}\n')
    write(
      'ts-in-deps/node_modules/built-tools/handler.ts',
      "export const handler = async (): Promise<string> => 'from ts'\n",
    )
    write('ts-in-deps/node_modules/built-tools/handler.js', "export const handler = async () => 'from the built js'\n")
    write(
      'ts-in-deps/node_modules/ts-dep/package.json',
      '{"name": "ts-dep", "type": "module", "exports": "./index.ts"}\n',
    )
    write('ts-in-deps/node_modules/ts-dep/index.ts', "export const word: string = 'dep'\n")
    write(
      'ts-in-deps/functions/uses-dep.ts',
      "import { word } from 'ts-dep'\nexport const handler = async () => word\n",
    )
    const service = (name: string, handler: string) =>
      [
        `  ${name}:`,
        `    handler: ${handler}`,
        '    toolService:',
        `      id: ${name}-service`,
        `      topic: ${name}`,
        '      tools:',
        `        - name: ${name}`,
        '          description: d',
      ].join('\n')
    write(
      'ts-in-deps/serverless.yml',
      [
        'service: ts-in-deps',
        'functions:',
        service('packaged', 'node_modules/ts-tools/handler.handler'),
        service('built', 'node_modules/built-tools/handler.handler'),
        service('usesdep', 'functions/uses-dep.handler'),
        '',
      ].join('\n'),
    )
  })

  for (const invoker of ['in-process', 'worker-threads']) {
    it.concurrent(`is refused with Node's limit and the fix named (${invoker})`, async ({ expect }) => {
      const run = await toolbridge(project, 'invoke', 'packaged', '--invoker', invoker)
      expect(run.code).toBe(1)
      expect(lines(run.stderr)).toEqual([
        expect.stringMatching(/^toolbridge: via an embedded bridge in this process/),
        expect.stringContaining('node_modules/ts-tools/handler.ts is TypeScript inside node_modules'),
      ])
      expect(run.stderr).toContain('ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING')
      expect(run.stderr).toContain('ship JavaScript')
    })

    it.concurrent(`runs the built .js next to it when there is one (${invoker})`, async ({ expect }) => {
      const run = await toolbridge(project, 'invoke', 'built', '--invoker', invoker)
      expect(run).toMatchObject({ code: 0, stdout: 'from the built js\n' })
    })

    it.concurrent(`is named when the user's own handler imports it (${invoker})`, async ({ expect }) => {
      const run = await toolbridge(project, 'invoke', 'usesdep', '--invoker', invoker)
      expect(run.code).toBe(1)
      expect(lines(run.stderr)).toEqual([
        expect.stringMatching(/^toolbridge: via an embedded bridge in this process/),
        expect.stringContaining(
          'handler "functions/uses-dep.handler": node_modules/ts-dep/index.ts is TypeScript inside node_modules',
        ),
      ])
    })
  }

  it.concurrent('is reported by check', async ({ expect }) => {
    const run = await toolbridge(project, 'check')
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/^BAD {2}packaged-service .*TypeScript inside node_modules/m)
    expect(run.stdout).toMatch(/^ok {3}built-service .*handler\.js$/m)
  })
})

describe('toolbridge/serverless in a framework without a schema API', () => {
  it("throws the framework's own error class, naming its version and what to use instead", () => {
    class ServerlessError extends Error {}
    const load = () => new ToolServicePlugin({ version: '1.83.3', classes: { Error: ServerlessError } })
    expect(load).toThrow(ServerlessError)
    expect(load).toThrow(
      'toolbridge/serverless: Serverless Framework 1.83.3 cannot declare function properties; use osls 4',
    )
  })
})

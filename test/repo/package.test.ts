/**
 * toolbridge as a stranger gets it: `npm pack` of this clone, the tarball
 * installed into a fresh folder under the system temp folder (outside the
 * clone, so nothing resolves to the clone's sources or node_modules), a
 * project made with `toolbridge init`, then its own tools run against the
 * installed package: tsc, vitest, start + invoke, descriptors, `sls package`,
 * and, when RabbitMQ and TrustGraph's Python packages are here, the project
 * served on RabbitMQ by the package's `toolbridge start` and called by
 * TrustGraph's own client and by the package's `toolbridge invoke --broker`.
 *
 * The packing and the installs happen once, in beforeAll; the npm registry
 * is reached for the project's dependencies (the npm cache is preferred).
 */
import { execFile, spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import { strangerEnv } from '../support/stranger-env.ts'
import { TRUSTGRAPH_INSTALL, trustgraphClientCalls, trustgraphInstalled } from '../support/trustgraph.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** A fail-safe against a hung child (installs are slow on a busy machine), not a limit on how fast it must be. */
const INSTALL_TIMEOUT_MS = 300_000
const CHILD_TIMEOUT_MS = 120_000

/** What scripts/sls.ts sets for the clone: sls package needs no AWS and reaches no AWS. */
const STRANGER_ENV = strangerEnv({
  AWS_ACCESS_KEY_ID: 'toolbridge-offline',
  AWS_SECRET_ACCESS_KEY: 'toolbridge-offline',
  AWS_EC2_METADATA_DISABLED: 'true',
  SLS_TELEMETRY_DISABLED: '1',
  SLS_NOTIFICATIONS_MODE: 'off',
})

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function runCommand(command: string, args: string[], cwd: string, timeout = CHILD_TIMEOUT_MS): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env: STRANGER_ENV, timeout, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
      },
    )
  })
}

async function succeed(command: string, args: string[], cwd: string, timeout?: number): Promise<string> {
  const result = await runCommand(command, args, cwd, timeout)
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} in ${cwd} exited ${result.code}:\n${result.stdout}\n${result.stderr}`)
  return result.stdout
}

/** A running `toolbridge start`, and what its output said once it was serving. */
interface Serving<T> {
  ready: T
  output: () => string
  stop(): Promise<void>
}

/** Runs the project's `toolbridge start` until `ready` finds what it waits for in its output (stdout and stderr). */
async function serve<T>(
  project: string,
  args: string[],
  ready: (output: string) => T | undefined,
): Promise<Serving<T>> {
  const child = spawn(bin(project, 'toolbridge'), ['start', ...args], {
    cwd: project,
    env: STRANGER_ENV,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const stop = async () => {
    child.kill('SIGTERM')
    await exited
  }
  try {
    const found = await new Promise<T>((resolve, reject) => {
      const read = (text: Buffer) => {
        output += text.toString()
        const value = ready(output)
        if (value !== undefined) resolve(value)
      }
      child.stdout.on('data', read)
      child.stderr.on('data', read)
      void exited.then((code) => reject(new Error(`toolbridge start exited (${code}) before serving:\n${output}`)))
    })
    return { ready: found, output: () => output, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

const bin = (project: string, name: string) => join(project, 'node_modules', '.bin', name)
const npmInstall = (project: string, ...specs: string[]) =>
  succeed(
    'npm',
    ['install', ...specs, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel', 'error'],
    project,
    INSTALL_TIMEOUT_MS,
  )

let work: string
let tarball: string
/** A TypeScript project from `toolbridge init`, its dependencies installed with the tarball. */
let project: string
/** An Express app on API Gateway that was there before toolbridge. */
let shop: string

/** The shop's one function, an HTTP API route, in its serverless.yml before and after toolbridge. */
const SHOP_FUNCTION = [
  'functions:',
  '  api:',
  '    handler: handler.handler',
  '    events:',
  '      - httpApi:',
  '          method: GET',
  '          path: /products/{sku}',
]

/** The shop as it was before toolbridge: an Express app, wrapped for Lambda by serverless-http, on an HTTP API. */
function writeShop(folder: string): void {
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'shop', private: true, type: 'module' }, null, 2),
    'app.js': [
      "import express from 'express'",
      "const PRODUCTS = { 'SKU-1': { sku: 'SKU-1', name: 'Kettle', price: 30 } }",
      'export const app = express()',
      "app.get('/products/:sku', (req, res) => {",
      '  const product = PRODUCTS[req.params.sku]',
      '  if (!product) return res.status(404).json({ error: `no product ${req.params.sku}` })',
      "  res.json({ ...product, currency: req.query.currency ?? 'EUR' })",
      '})',
      '',
    ].join('\n'),
    'handler.js':
      "import serverless from 'serverless-http'\nimport { app } from './app.js'\nexport const handler = serverless(app)\n",
    'serverless.yml': [
      'service: shop',
      "frameworkVersion: '4'",
      'configValidationMode: error',
      'provider:',
      '  name: aws',
      '  runtime: nodejs24.x',
      ...SHOP_FUNCTION,
      '',
    ].join('\n'),
  }
  mkdirSync(folder)
  for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), text)
}

/** What docs/writing-tools.md's "Use it in your project" adds to it: the plugin line and a toolService: block. */
const SHOP_TOOL_SERVICE = [
  'plugins:',
  '  - toolbridge/serverless',
  ...SHOP_FUNCTION,
  '    toolService:',
  '      id: product-service',
  '      topic: product',
  '      event: apigw-v2',
  '      route:',
  '        method: GET',
  '        path: /products/{sku}',
  '      answer: json',
  '      tools:',
  '        - name: lookup-product',
  '          description: Look up a product by SKU',
  '          arguments:',
  '            - { name: sku, type: string, description: The SKU, required: true }',
  '            - { name: currency, type: string, description: EUR or USD }',
  '',
].join('\n')

beforeAll(async () => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'toolbridge-package-')))
  const packed = JSON.parse(
    await succeed('npm', ['pack', '--json', '--pack-destination', work], ROOT, INSTALL_TIMEOUT_MS),
  ) as { filename: string; size: number }[]
  const [{ filename, size }] = packed as [{ filename: string; size: number }]
  tarball = join(work, filename)
  console.log(`npm pack: ${filename}, ${(size / 1024).toFixed(1)} kB`)

  // An existing project (an Express app on API Gateway) adds toolbridge to its dependencies. Its
  // local bin then stands in for `npx toolbridge init`, which would fetch and install the same package.
  shop = join(work, 'shop')
  writeShop(shop)
  const repoPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>
  }
  const pinned = (name: string) => `${name}@${repoPackage.devDependencies[name]}`
  await npmInstall(shop, tarball, pinned('express'), pinned('serverless-http'))
  project = join(work, 'my-tool')
  await succeed(bin(shop, 'toolbridge'), ['init', project], work)
  await npmInstall(project, tarball)
}, 2 * INSTALL_TIMEOUT_MS)

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('the package', () => {
  it('holds built JavaScript, the public declarations and the templates, and no TypeScript sources', async () => {
    const files = (await succeed('tar', ['tzf', tarball], work))
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''))
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/bridge/cli/main.js',
        'dist/bridge/invokers/worker-threads/worker.js',
        'dist/bridge/http/console/assets/index.html',
        'dist/shared/index.js',
        'dist/shared/index.d.ts',
        'dist/serverless-plugin/tool-service.js',
        'LICENSE',
        'README.md',
        'CHANGELOG.md',
        'templates/minimal/functions.yml',
      ]),
    )
    const sources = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('templates/'))
    expect(sources).toEqual([])
    expect(files.filter((f) => /^(test|functions|scripts|bench|docs)\//.test(f))).toEqual([])
    // Small: a few hundred kB, not the clone.
    expect(statSync(tarball).size).toBeLessThan(1024 * 1024)
  })

  it("says the package's version from its installed command", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    expect(await succeed(bin(project, 'toolbridge'), ['--version'], project)).toBe(`${version}\n`)
  })

  it('is installed from the tarball, not linked to this clone', () => {
    const installed = realpathSync(join(project, 'node_modules', 'toolbridge'))
    expect(installed.startsWith(realpathSync(ROOT))).toBe(false)
    expect(existsSync(join(installed, 'dist', 'bridge', 'cli', 'main.js'))).toBe(true)
  })
})

describe('a project made with toolbridge init', () => {
  it('depends on toolbridge and has start, test and offline scripts', () => {
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>
      scripts: Record<string, string>
    }
    expect(Object.keys(pkg.dependencies)).toEqual(['toolbridge'])
    expect(pkg.scripts).toMatchObject({ start: 'toolbridge start', test: 'vitest run', offline: expect.any(String) })
  })

  it('type-checks its function against the published types, which catch a wrong type', async () => {
    // The project's own typescript (a devDependency of the scaffold), as its user runs it.
    await succeed(bin(project, 'tsc'), ['--noEmit'], project)
    const probe = join(project, 'functions', 'hello', 'probe.ts')
    writeFileSync(
      probe,
      [
        "import { defineToolService } from 'toolbridge'",
        'export const handler = defineToolService({',
        "  arguments: { count: { type: 'integer', required: true } },",
        '  async handler({ arguments: args }) {',
        '    const text: string = args.count',
        '    return text',
        '  },',
        '})',
        '',
      ].join('\n'),
    )
    try {
      const checked = await runCommand(bin(project, 'tsc'), ['--noEmit'], project)
      expect(checked.code).not.toBe(0)
      expect(checked.stdout).toMatch(
        /probe\.ts\(5,11\): error TS2322: Type 'number' is not assignable to type 'string'/,
      )
    } finally {
      rmSync(probe)
    }
  })

  it('passes its own vitest test', async () => {
    const output = await succeed(bin(project, 'vitest'), ['run'], project)
    expect(output).toMatch(/Tests\s+2 passed/)
  })

  it('serves its tool with toolbridge start (worker threads), registers it, and answers toolbridge invoke --url', async () => {
    const serving = await serve(project, ['--port', '0', '--log-level', 'warn', '--register'], (output) => {
      const match = /^ {2}HTTP: (http:\/\/127\.0\.0\.1:\d+)\/tools\b/m.exec(output)
      // --register: with the embedded configuration service, once the tools are registered.
      return match?.[1] && output.includes('registered') ? match[1] : undefined
    })
    const url = serving.ready
    const output = serving.output()
    try {
      expect(output).toContain('hello-service')
      expect(output).toMatch(
        /registered \d+ config items in workspace "default": .*tool-service\/hello-service.*tool\/say-hello/,
      )
      const answer = await succeed(
        bin(project, 'toolbridge'),
        ['invoke', 'say-hello', '--arg', 'name=Ada', '--url', url],
        project,
      )
      expect(answer).toBe('Hello, Ada!\n')
      const refused = await runCommand(bin(project, 'toolbridge'), ['invoke', 'say-hello', '--url', url], project)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/^error: invalid-arguments: .*"name"/m)
    } finally {
      await serving.stop()
    }
  })

  it('answers toolbridge invoke in process, with no server running', async () => {
    const answer = await succeed(
      bin(project, 'toolbridge'),
      ['invoke', 'say-hello', '--arg', 'name=Grace', '--invoker', 'in-process'],
      project,
    )
    expect(answer).toBe('Hello, Grace!\n')
  })

  it('passes toolbridge check', async () => {
    const checked = await succeed(bin(project, 'toolbridge'), ['check'], project)
    expect(checked).toMatch(/^ok {3}hello-service {2}functions\/hello\/handler\.handler: found .*handler\.ts$/m)
  })

  it('prints its TrustGraph descriptors', async () => {
    const descriptors = JSON.parse(await succeed(bin(project, 'toolbridge'), ['descriptors'], project)) as Record<
      string,
      Record<string, unknown>
    >
    expect(descriptors['tool-service']?.['hello-service']).toMatchObject({
      'request-queue': 'request:tg:hello',
      'response-queue': 'response:tg:hello',
    })
    expect(descriptors.tool?.['say-hello']).toMatchObject({ type: 'tool-service', service: 'hello-service' })
  })

  it('is packaged by sls (osls) with toolbridge/serverless validating toolService:', async () => {
    // configValidationMode: error refuses `toolService:` unless the plugin from the package declared it.
    await succeed(bin(project, 'sls'), ['package'], project)
    const zip = join(project, '.serverless', 'hello.zip')
    expect(statSync(zip).size).toBeGreaterThan(0)
    const listing = await succeed('unzip', ['-l', zip], project)
    expect(listing).toContain('functions/hello/handler.mjs')
  })

  it('gets one more tool with toolbridge add function, served at once', async () => {
    await succeed(bin(project, 'toolbridge'), ['add', 'function', 'weather'], project)
    await succeed(bin(project, 'tsc'), ['--noEmit'], project)
    const answer = await succeed(
      bin(project, 'toolbridge'),
      ['invoke', 'weather', '--arg', 'input=Oslo', '--invoker', 'worker-threads'],
      project,
    )
    expect(answer).toBe('weather got: Oslo\n')
  })
})

const interopReady = rabbitmqInstalled() && trustgraphInstalled()
if (!interopReady)
  console.log(
    `skipping the package on RabbitMQ: needs rabbitmq-server (${RABBITMQ_INSTALL}) and TrustGraph's packages (${TRUSTGRAPH_INSTALL})`,
  )

describe.skipIf(!interopReady)("a project made with toolbridge init, on RabbitMQ with TrustGraph's own client", () => {
  let broker: RabbitBroker
  /** The scaffolded serverless.yml with a topic of this run's own, so no other test's requests reach it. */
  let config: string
  const topic = `package-hello-${process.pid}`
  let serving: Serving<{ requestQueue: string; responseQueue: string }>

  beforeAll(async () => {
    broker = await startRabbitmq()
    config = join(project, 'serverless.rabbitmq.yml')
    const scaffolded = readFileSync(join(project, 'serverless.yml'), 'utf8')
    expect(scaffolded).toContain('      topic: hello\n')
    writeFileSync(config, scaffolded.replace('      topic: hello\n', `      topic: ${topic}\n`))
    serving = await serve(
      project,
      ['-c', config, '--broker', broker.url, '--port', 'off', '--log-level', 'warn'],
      (output) => {
        // Printed once the request queues are bound.
        const match = /^ {2}hello-service \(.*\): (\S+) -> (\S+) {2}tools: say-hello/m.exec(output)
        return match?.[1] && match[2] ? { requestQueue: match[1], responseQueue: match[2] } : undefined
      },
    )
  }, 2 * CHILD_TIMEOUT_MS)
  afterAll(async () => {
    await serving?.stop()
    await broker?.stop()
  })

  it('is served by toolbridge start --broker on the queues TrustGraph names after its topic', () => {
    expect(serving.output()).toMatch(
      /^toolbridge: serving on amqp:\/\/guest:\S*@127\.0\.0\.1:5672\/ with the worker-threads invoker$/m,
    )
    expect(serving.ready).toEqual({ requestQueue: `request:tg:${topic}`, responseQueue: `response:tg:${topic}` })
  })

  it("answers TrustGraph's own RequestResponseClient: a greeting, and a missing argument as an error", async () => {
    const [greeting, missing] = await trustgraphClientCalls(serving.ready, [
      { arguments: { name: 'Ada' } },
      { arguments: {} },
    ])
    expect(greeting).toStrictEqual({ response: 'Hello, Ada!', error: null, messages: 1 })
    expect(missing?.error?.type).toBe('invalid-arguments')
    expect(missing?.error?.message).toContain('"name"')
  })

  it('answers toolbridge invoke --broker from the package', async () => {
    const call = await runCommand(
      bin(project, 'toolbridge'),
      ['-c', config, 'invoke', 'say-hello', '--arg', 'name=Grace', '--broker', broker.url],
      project,
    )
    expect(call).toMatchObject({ code: 0, stdout: 'Hello, Grace!\n' })
    expect(call.stderr).toMatch(/^toolbridge: via amqp:\/\//m)
  })
})

describe('a JavaScript project from the streaming template', () => {
  let streaming: string
  beforeAll(async () => {
    streaming = join(work, 'story-tool')
    await succeed(bin(project, 'toolbridge'), ['init', streaming, '--template', 'streaming', '--js'], work)
    // The same dependencies as the TypeScript project, less typescript: share its install.
    symlinkSync(join(project, 'node_modules'), join(streaming, 'node_modules'), 'dir')
  })

  it('is JavaScript only and passes its own test', async () => {
    expect(existsSync(join(streaming, 'functions', 'story', 'handler.js'))).toBe(true)
    expect(existsSync(join(streaming, 'functions', 'story', 'handler.ts'))).toBe(false)
    expect(existsSync(join(streaming, 'tsconfig.json'))).toBe(false)
    const output = await succeed(bin(streaming, 'vitest'), ['run'], streaming)
    expect(output).toMatch(/Tests\s+2 passed/)
  })

  it('streams its story through toolbridge invoke --stream in worker threads', async () => {
    const answer = await succeed(
      bin(streaming, 'toolbridge'),
      ['invoke', 'tell-story', '--arg', 'hero=Ada', '--arg', 'sentences=2', '--stream', '--invoker', 'worker-threads'],
      streaming,
    )
    expect(answer).toBe(
      'Once upon a time, Ada set out to see the world. Along the way, Ada met a stranger with a map nobody could read.\n',
    )
  })
})

/** `toolbridge invoke lookup-product` in `folder` for a SKU in USD, in process then in worker threads: both answers, parsed. */
async function lookUpInUsd(folder: string, sku: string): Promise<unknown[]> {
  const answers: unknown[] = []
  for (const invoker of ['in-process', 'worker-threads']) {
    const args = ['invoke', 'lookup-product', '--arg', `sku=${sku}`, '--arg', 'currency=USD', '--invoker', invoker]
    answers.push(JSON.parse(await succeed(bin(folder, 'toolbridge'), args, folder)))
  }
  return answers
}

describe('an existing Express app on API Gateway, with toolbridge added', () => {
  it('is no tool service until it has a toolService: block, and start says so', async () => {
    const run = await runCommand(bin(shop, 'toolbridge'), ['start', '--port', '0'], shop)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('no function has a "toolService:" block')
  })

  it('is a tool once serverless.yml has the plugin line and a toolService: block, in process and in worker threads', async () => {
    const yml = join(shop, 'serverless.yml')
    const before = readFileSync(yml, 'utf8')
    writeFileSync(yml, before.slice(0, before.indexOf('functions:')) + SHOP_TOOL_SERVICE)
    const kettle = { sku: 'SKU-1', name: 'Kettle', price: 30, currency: 'USD' }
    expect(await lookUpInUsd(shop, 'SKU-1')).toEqual([kettle, kettle])
    const missing = await runCommand(
      bin(shop, 'toolbridge'),
      ['invoke', 'lookup-product', '--arg', 'sku=SKU-9', '--invoker', 'worker-threads'],
      shop,
    )
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('HTTP 404')
    expect(missing.stderr).toContain('no product SKU-9')
  })

  it('has toolService: validated by osls with the plugin from the package', async () => {
    // osls from the scaffolded project, run in the shop: plugins resolve from the shop's own node_modules.
    await succeed(bin(project, 'sls'), ['print'], shop)
    const yml = join(shop, 'serverless.yml')
    writeFileSync(
      yml,
      readFileSync(yml, 'utf8').replace('      topic: product\n', '      topic: product\n      bogus: 1\n'),
    )
    const refused = await runCommand(bin(project, 'sls'), ['print'], shop)
    expect(refused.code).not.toBe(0)
    expect(refused.stdout + refused.stderr).toContain("'functions.api.toolService': unrecognized property 'bogus'")
  })
})

describe('projects from the existing-api and http-function templates', () => {
  it('existing-api: the Express app answers lookup-product in process and in worker threads', async () => {
    const api = join(work, 'api-tool')
    await succeed(bin(shop, 'toolbridge'), ['init', api, '--template', 'existing-api', '--js'], work)
    // Its dependencies are the shop's: toolbridge, express, serverless-http.
    symlinkSync(join(shop, 'node_modules'), join(api, 'node_modules'), 'dir')
    const teapot = { sku: 'SKU-2', name: 'Teapot', price: 25.92, currency: 'USD' }
    expect(await lookUpInUsd(api, 'SKU-2')).toEqual([teapot, teapot])
  })

  it('http-function: the server it runs answers greet through toolbridge', async () => {
    const http = join(work, 'http-tool')
    await succeed(bin(project, 'toolbridge'), ['init', http, '--template', 'http-function'], work)
    symlinkSync(join(project, 'node_modules'), join(http, 'node_modules'), 'dir')
    const server = spawn(process.execPath, ['functions/greet/server.ts', '0'], {
      cwd: http,
      env: STRANGER_ENV,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let output = ''
        server.stdout.on('data', (text: Buffer) => {
          output += text.toString()
          const match = /greet: (http:\/\/\S+)/.exec(output)
          if (match?.[1]) resolve(match[1])
        })
        void exited.then((code) => reject(new Error(`the greet server exited (${code}):\n${output}`)))
      })
      const yml = join(http, 'serverless.yml')
      writeFileSync(yml, readFileSync(yml, 'utf8').replace('http://127.0.0.1:8090/greet', url))
      const answer = await succeed(
        bin(http, 'toolbridge'),
        ['invoke', 'greet', '--arg', 'name=Ada', '--invoker', 'worker-threads'],
        http,
      )
      expect(answer).toBe('Hello, Ada!\n')
    } finally {
      server.kill('SIGTERM')
      await exited
    }
  })
})

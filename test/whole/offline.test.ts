/**
 * The Serverless Framework toolchain on serverless.yml: the example functions
 * under a real serverless-offline (test/support/offline.ts; installed by npm
 * ci, so never skipped), called through the Lambda Invoke API as the AWS SDK
 * would; `npm run package` and the zips it builds; and configuration
 * validation that is on, including the `toolService:` block. Nothing reaches
 * the network. Start-up and packaging times are printed, never asserted.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import JSZip from 'jszip'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { schemaWithoutProjectKeywords, toolServiceSchema } from '../../shared/tool-service-schema.ts'
import { isChunkStream } from '../../shared/handler.ts'
import ToolServicePlugin from '../../serverless-plugin/tool-service.ts'
import { handler as jokeHandler } from '../../functions/joke/handler.ts'
import { handler as storyHandler } from '../../functions/story/handler.ts'
import {
  commandBuild,
  ISOLATED_BUILDS_DIR,
  isolatedBuild,
  PACKAGE_DIR,
  ROOT,
  SLS_BIN,
  slsEnvironment,
} from '../../scripts/sls.ts'
import { packageFunctions, startOffline, type Offline } from '../../scripts/offline.ts'

const run = promisify(execFile)

interface FunctionConfig {
  name?: string
  handler: string
  toolService?: unknown
}
const SERVERLESS_YML = join(ROOT, 'serverless.yml')
const serverlessYml = await readFile(SERVERLESS_YML, 'utf8')
const functions = (parse(serverlessYml) as { functions: Record<string, FunctionConfig> }).functions
const EXAMPLES = ['joke', 'calculator', 'story']

/** The envelope of the issue; each function gets its own arguments in the others. */
const JOKE_EVENT = { user: 'alice', config: { style: 'pun' }, arguments: { topic: 'programming' } }
const calculation = (expression: string) => ({ user: 'alice', config: {}, arguments: { expression } })

interface Invocation {
  status: number
  headers: Headers
  /** The body parsed as JSON. */
  body: unknown
}

describe('the example functions under serverless-offline', () => {
  let offline: Offline

  beforeAll(async () => {
    offline = await startOffline()
    console.log(
      `serverless-offline listened ${Math.round(offline.startupMs)} ms after \`sls offline start\` (bundling included)`,
    )
  })
  afterAll(async () => {
    await offline?.stop()
  })

  /** POST /2015-03-31/functions/<name>/invocations: what the AWS SDK's Invoke sends. */
  async function invoke(name: string, event: unknown): Promise<Invocation> {
    const response = await fetch(`${offline.endpoint}/2015-03-31/functions/${encodeURIComponent(name)}/invocations`, {
      method: 'POST',
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(30_000), // a fail-safe
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) }
  }

  it('serves every function under its `name:`, the name it has on AWS', async () => {
    expect(Object.keys(functions)).toEqual(expect.arrayContaining(EXAMPLES))
    for (const [key, fn] of Object.entries(functions)) {
      expect(fn.name, `functions.${key}.name`).toBe(`toolbridge-${key}`)
      const { status, body } = await invoke(fn.name!, 'ping') // not an envelope: the function's error, not a 404
      expect(status, JSON.stringify(body)).toBe(200)
      expect(body).toMatchObject({ errorType: 'BadRequestError' })
    }
  })

  it('joke: answers what the handler answers in process', async () => {
    const expected = await jokeHandler(JOKE_EVENT, {})
    expect(expected).toContain('UDP')
    const { status, headers, body } = await invoke('toolbridge-joke', JOKE_EVENT)
    expect(status).toBe(200)
    expect(headers.get('x-amz-function-error')).toBeNull()
    expect(body).toBe(expected)
  })

  it('calculator: 0.1+0.2 is 0.3', async () => {
    const { status, headers, body } = await invoke('toolbridge-calculator', calculation('0.1+0.2'))
    expect(status).toBe(200)
    expect(headers.get('x-amz-function-error')).toBeNull()
    expect(body).toBe('0.3')
  })

  it('a thrown error is HTTP 200 with X-Amz-Function-Error and {errorMessage, errorType}', async () => {
    const { status, headers, body } = await invoke('toolbridge-calculator', calculation('1/0'))
    expect(status).toBe(200)
    expect(headers.get('x-amz-function-error')).toBe('Unhandled')
    expect(body).toMatchObject({ errorMessage: 'division by zero at position 2', errorType: 'Error' })
  })

  it("an error's name survives as errorType (what the bridge maps to a wire error type)", async () => {
    const { headers, body } = await invoke('toolbridge-joke', { user: 'alice', config: {}, arguments: {} })
    expect(headers.get('x-amz-function-error')).toBe('Unhandled')
    expect(body).toMatchObject({
      errorMessage: 'invalid arguments: "topic" is required',
      errorType: 'InvalidArgumentsError',
    })
  })

  it('an unknown function is 404 ResourceNotFoundException', async () => {
    const { status, headers } = await invoke('toolbridge-no-such-function', JOKE_EVENT)
    expect(status).toBe(404)
    expect(headers.get('x-amzn-errortype')).toBe('ResourceNotFoundException')
  })

  // serverless-offline calls every handler as (event, context) and has no InvokeWithResponseStream:
  // a handler wrapped with lambdaStreaming then answers with its chunks joined, in one piece.
  it('story: a streaming handler answers with its chunks joined, as they join in process', async () => {
    const event = { user: 'alice', config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 2 } }
    const result = await storyHandler(event, {})
    expect(isChunkStream(result)).toBe(true)
    let joined = ''
    for await (const chunk of result as AsyncIterable<string>) joined += chunk
    expect(joined).toMatch(/^Once upon a time, Ada lived in .+\. Every morning, Ada /)
    const { status, headers, body } = await invoke('toolbridge-story', event)
    expect(status).toBe(200)
    expect(headers.get('x-amz-function-error')).toBeNull()
    expect(body).toBe(joined)
  })
})

describe('npm run package', () => {
  let zips: Map<string, JSZip>

  beforeAll(async () => {
    const started = performance.now()
    // Rejects (with its output) unless it exits 0; it cleans .esbuild/ and .serverless/ first.
    await run('npm', ['run', 'package'], { cwd: ROOT, timeout: 120_000 })
    console.log(`npm run package took ${Math.round(performance.now() - started)} ms`)
    zips = new Map()
    for (const key of Object.keys(functions)) {
      zips.set(key, await JSZip.loadAsync(await readFile(join(PACKAGE_DIR, `${key}.zip`))))
    }
  }, 180_000)

  /** `functions/joke/handler.handler` -> `functions/joke/handler.mjs` */
  const bundleOf = (fn: FunctionConfig) => `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.mjs`

  it('builds one zip per function holding just its ESM bundle', () => {
    for (const [key, fn] of Object.entries(functions)) {
      const files = Object.values(zips.get(key)!.files)
        .filter((f) => !f.dir)
        .map((f) => f.name)
      expect(files, `${key}.zip`).toEqual([bundleOf(fn)])
    }
  })

  it('names the functions, handlers and runtime in the CloudFormation template as on serverless-offline', async () => {
    const template = JSON.parse(
      await readFile(join(PACKAGE_DIR, 'cloudformation-template-update-stack.json'), 'utf8'),
    ) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>
    }
    const lambdas = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function')
    expect(lambdas.map((l) => l.Properties.FunctionName).sort()).toEqual(
      Object.values(functions)
        .map((f) => f.name)
        .sort(),
    )
    for (const fn of Object.values(functions)) {
      const lambda = lambdas.find((l) => l.Properties.FunctionName === fn.name)!
      expect(lambda.Properties).toMatchObject({ Handler: fn.handler, Runtime: 'nodejs24.x' })
    }
  })

  it('zips a joke bundle that runs by itself and answers as the handler does in process', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolbridge-zip-'))
    try {
      const bundle = bundleOf(functions.joke!)
      const file = join(dir, bundle)
      await mkdir(dirname(file), { recursive: true })
      await writeFile(file, await zips.get('joke')!.file(bundle)!.async('nodebuffer'))
      const { handler } = (await import(pathToFileURL(file).href)) as { handler: typeof jokeHandler }
      expect(await handler(JOKE_EVENT, {})).toBe(await jokeHandler(JOKE_EVENT, {}))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('configuration validation', () => {
  it('the plugin declares toolService with the schema the bridge validates with, less the annotations osls does not know', () => {
    const declared: unknown[] = []
    new ToolServicePlugin({
      configSchemaHandler: { defineFunctionProperties: (provider, schema) => declared.push({ provider, schema }) },
    })
    expect(declared).toHaveLength(1)
    expect(declared[0]).toMatchObject({ provider: 'aws' })
    const toolService = (declared[0] as { schema: { properties: { toolService: unknown } } }).schema.properties
      .toolService
    expect(toolService).toStrictEqual(schemaWithoutProjectKeywords(toolServiceSchema))
    expect(JSON.stringify(toolServiceSchema)).toContain('"concerns"')
    expect(JSON.stringify(toolService)).not.toContain('"concerns"')
  })

  it('is on for serverless.yml: `sls print` refuses a typo in toolService, or a bad value, and accepts the original', async () => {
    expect(serverlessYml).toMatch(/^configValidationMode: error$/m)
    const plugin = './serverless-plugin/tool-service.ts'
    expect(serverlessYml).toContain(plugin)

    /** `sls print` on a copy of serverless.yml in a temporary directory: its exit code and output. */
    async function slsPrint(yml: string): Promise<{ code: number; output: string }> {
      const dir = await mkdtemp(join(tmpdir(), 'toolbridge-sls-'))
      try {
        // osls only loads local plugins from inside the service directory: a one-line stand-in.
        const standIn = pathToFileURL(join(ROOT, plugin)).href
        await writeFile(join(dir, 'plugin.mjs'), `export { default } from ${JSON.stringify(standIn)}\n`)
        await writeFile(join(dir, 'serverless.yml'), yml.replace(plugin, './plugin.mjs'))
        const { stdout, stderr } = await run(SLS_BIN, ['print'], { cwd: dir, env: slsEnvironment(), timeout: 60_000 })
        return { code: 0, output: stdout + stderr }
      } catch (err) {
        const e = err as Error & { code?: unknown; stdout?: string; stderr?: string }
        if (typeof e.code !== 'number') throw err
        return { code: e.code, output: `${e.stdout ?? ''}${e.stderr ?? ''}` }
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    }

    const edit = (from: string, to: string) => {
      expect(serverlessYml).toContain(from)
      return serverlessYml.replace(from, to)
    }
    const started = performance.now()
    const [original, typo, badValue] = await Promise.all([
      slsPrint(serverlessYml),
      slsPrint(edit('      topic: joke\n', '      topc: joke\n')),
      slsPrint(edit('      response: stream\n', '      response: streamed\n')),
    ])
    console.log(`three \`sls print\` runs side by side took ${Math.round(performance.now() - started)} ms`)

    expect(original.code, original.output).toBe(0)
    expect(original.output).toContain('toolService:')
    expect(typo.code, typo.output).not.toBe(0)
    expect(typo.output).toContain("Configuration error at 'functions.joke.toolService': unrecognized property 'topc'")
    expect(badValue.code, badValue.output).not.toBe(0)
    expect(badValue.output).toMatch(
      /Configuration error at 'functions\.story\.toolService\.response': must be equal to one of the allowed values/,
    )
  }, 120_000)
})

describe('npm run package next to a running npm run offline', () => {
  // One run folder for both, as `npm run offline` and `npm run package` share the clone's.
  const base = isolatedBuild(`side-by-side-${process.pid}`)
  let offline: Offline

  beforeAll(async () => {
    offline = await startOffline({ build: base })
  })
  afterAll(async () => {
    await offline?.stop()
    await rm(join(ROOT, ISOLATED_BUILDS_DIR, `side-by-side-${process.pid}`), { recursive: true, force: true })
  })

  /** `toolbridge invoke` of the clone, through the Lambda API of the serverless-offline started here. */
  const invokeOnOffline = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const command = [join(ROOT, 'bridge', 'cli', 'toolbridge.js'), 'invoke', ...args]
      execFile(
        process.execPath,
        [...command, '--invoker', 'lambda', '--lambda-endpoint', offline.endpoint],
        { cwd: ROOT, timeout: 60_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      )
    })

  it('leaves the offline bundles alone: a function first called after packaging still answers', async () => {
    const packaged = await packageFunctions({ build: base })
    try {
      expect(await readFile(join(packaged.dir, 'calculator.zip'))).not.toHaveLength(0)
    } finally {
      await packaged.remove()
    }
    expect(await invokeOnOffline('calculate', '--arg', 'expression=6*7')).toMatchObject({ code: 0, stdout: '42\n' })
  })

  it('a built handler gone from under it reaches the caller as one line naming the fix, with no require stack', async () => {
    await rm(join(ROOT, commandBuild('offline', base).workFolder), { recursive: true, force: true })
    // A function not loaded yet, so serverless-offline looks for its bundle.
    const story = await invokeOnOffline('tell-story', '--arg', 'hero=Ada')
    expect(story.code).toBe(1)
    expect(story.stderr).not.toContain('Require stack')
    const errorLines = story.stderr.split('\n').filter((line) => line.startsWith('error:'))
    expect(errorLines).toHaveLength(1)
    expect(errorLines[0]).toMatch(
      /Cannot find module '.*functions\/story\/handler\.\w+' \(the built handler is missing: rebuild the function; under serverless-offline, restart it\)$/,
    )
  })
})

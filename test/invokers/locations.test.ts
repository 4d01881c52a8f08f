/**
 * Where a function runs: serverless.yml's entries read into the right kind of
 * location, and each kind reaching its own invoker through the one mapping
 * (bridge/invokers/invoker-for-location.ts), against real parts: a handler
 * file run in process or in a worker thread, the fake Lambda API, a local
 * HTTP server. The AWS SDK stays unloaded when no function needs Lambda.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LocationInvoker } from '../../bridge/invokers/invoker-for-location.ts'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import { resolveSettings, type SettingFlags } from '../../bridge/project/settings.ts'
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { ConfigError } from '../../shared/errors.ts'
import { FakeLambda, reply } from '../support/fake-lambda.ts'

process.env.AWS_EC2_METADATA_DISABLED = 'true' // the SDK never looks for credentials on the network

const ARN = 'arn:aws:lambda:eu-west-1:000000000000:function:partner-weather'

const toolService = (id: string, extra: object = {}) => ({
  id,
  topic: id,
  timeout: 5,
  tools: [{ name: `${id}-tool`, description: 'A tool' }],
  ...extra,
})

/** One function of each kind: its own (`handler:`), someone else's Lambda (`function:`), an HTTP function (`url:`). */
function serverless(url: string) {
  return {
    service: 'places',
    provider: { name: 'aws', stage: 'test' },
    functions: { where: { handler: 'where.handler', toolService: toolService('where') } },
    custom: {
      toolServices: {
        partner: toolService('partner', { function: ARN, role: 'arn:aws:iam::000000000000:role/caller' }),
        remote: toolService('remote', { url, headers: { 'x-team': 'blue' } }),
      },
    },
  }
}

describe('reading where a function runs', () => {
  const specs = readToolServices(serverless('http://127.0.0.1:9/fn'))
  const locationOf = (functionName: string) => specs.find((s) => s.functionName === functionName)?.location

  it('a function with a handler: runs that handler, or its deployed Lambda function', () => {
    expect(locationOf('where')).toStrictEqual({
      kind: 'handler',
      handler: 'where.handler',
      lambdaName: 'places-test-where',
    })
  })

  it('custom.toolServices with function: is a Lambda function, its region from the ARN', () => {
    expect(locationOf('partner')).toStrictEqual({
      kind: 'lambda',
      lambdaName: ARN,
      region: 'eu-west-1',
      role: 'arn:aws:iam::000000000000:role/caller',
    })
  })

  it('custom.toolServices with url: is an HTTP function, POST by default', () => {
    expect(locationOf('remote')).toStrictEqual({
      kind: 'http',
      url: 'http://127.0.0.1:9/fn',
      method: 'POST',
      headers: { 'x-team': 'blue' },
      headersFromEnv: {},
    })
  })

  it('refuses an entry with both function: and url:, or neither', () => {
    const both = {
      ...serverless('http://x'),
      custom: { toolServices: { twice: toolService('twice', { function: 'f', url: 'http://x' }) } },
    }
    const neither = { ...serverless('http://x'), custom: { toolServices: { nowhere: toolService('nowhere') } } }
    for (const doc of [both, neither]) {
      expect(() => readToolServices(doc)).toThrow(ConfigError)
      expect(() => readToolServices(doc)).toThrow(
        /custom\.toolServices\.(twice|nowhere): give either "function" .* or "url", not both or neither/,
      )
    }
  })

  it('refuses invocationsPerWorker on a function that does not run in worker threads', () => {
    for (const extra of [{ function: ARN }, { url: 'http://x' }]) {
      const doc = {
        ...serverless('http://x'),
        custom: { toolServices: { elsewhere: toolService('elsewhere', { ...extra, invocationsPerWorker: 4 }) } },
      }
      expect(() => readToolServices(doc)).toThrow(
        /^custom\.toolServices\.elsewhere\.invocationsPerWorker: is for a function of this serverless\.yml run in worker threads/,
      )
    }
  })

  it('refuses a function of serverless.yml with no handler:', () => {
    const doc = { service: 'places', functions: { image: { image: 'repo/fn:1', toolService: toolService('image') } } }
    expect(() => readToolServices(doc)).toThrow(/^functions\.image\.handler: missing/)
  })
})

describe('each location reaches its own invoker', () => {
  let dir: string
  let fake: FakeLambda
  let server: Server
  let url: string
  const httpCalls: string[] = []
  let specs: ToolServiceSpec[]
  const spec = (functionName: string) => specs.find((s) => s.functionName === functionName)!

  beforeAll(async () => {
    // The handler says which thread ran it: in process, the main thread; with `--invoker worker-threads`, a worker.
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-locations-'))
    writeFileSync(
      join(dir, 'where.mjs'),
      "import { isMainThread } from 'node:worker_threads'\nexport const handler = async () => (isMainThread ? 'main thread' : 'worker thread')\n",
    )
    fake = await FakeLambda.start()
    server = createServer((req, res) => {
      httpCalls.push(`${req.method} ${req.url}`)
      res.end('from the HTTP function')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fn`
    specs = readToolServices(serverless(url))
  })
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true })
    await fake?.close()
    server?.closeAllConnections()
    await new Promise<void>((resolve) => server?.close(() => resolve()))
  })
  afterEach(() => {
    fake.reset()
    httpCalls.length = 0
  })

  async function withInvoker<T>(flags: SettingFlags, use: (invoker: LocationInvoker) => Promise<T>): Promise<T> {
    const invoker = new LocationInvoker({
      settings: resolveSettings({ lambdaEndpoint: fake.url, ...flags }, {}),
      baseDir: dir,
    })
    try {
      return await use(invoker)
    } finally {
      await invoker.close()
    }
  }

  const call = (invoker: LocationInvoker, functionName: string): Promise<Outcome> =>
    invoker.invoke({
      target: spec(functionName),
      event: { user: 'alice', config: {}, arguments: {} },
      onChunk: () => {},
    })

  it('a handler runs in process with --invoker in-process, in a worker thread with --invoker worker-threads', async () => {
    expect(await withInvoker({ invoker: 'in-process' }, (invoker) => call(invoker, 'where'))).toStrictEqual({
      ok: true,
      text: 'main thread',
    })
    expect(await withInvoker({ invoker: 'worker-threads' }, (invoker) => call(invoker, 'where'))).toStrictEqual({
      ok: true,
      text: 'worker thread',
    })
    expect(fake.calls).toHaveLength(0)
  })

  it('a handler is called as its deployed Lambda function with --invoker lambda, not looked up', async () => {
    fake.script('places-test-where', reply.result('from Lambda'))
    const outcome = await withInvoker({ invoker: 'lambda' }, async (invoker) => {
      expect(await invoker.prepare(spec('where'))).toBeUndefined()
      return call(invoker, 'where')
    })
    expect(outcome).toStrictEqual({ ok: true, text: 'from Lambda' })
    expect(fake.calls.map((c) => c.functionName)).toStrictEqual(['places-test-where'])
    expect(fake.lookups).toStrictEqual([])
  })

  it("someone else's Lambda function is looked up when prepared and called by its ARN, whatever --invoker says", async () => {
    for (const kind of ['in-process', 'lambda'] as const) {
      fake.reset()
      fake.script(ARN, reply.result('from the partner'))
      const outcome = await withInvoker({ invoker: kind }, async (invoker) => {
        expect(await invoker.prepare(spec('partner'))).toBeUndefined()
        return call(invoker, 'partner')
      })
      expect(outcome).toStrictEqual({ ok: true, text: 'from the partner' })
      expect(fake.lookups).toStrictEqual([ARN])
      expect(fake.calls.map((c) => c.functionName)).toStrictEqual([ARN])
    }
  })

  it('an HTTP function is called at its URL, whatever --invoker says', async () => {
    for (const kind of ['worker-threads', 'lambda'] as const) {
      httpCalls.length = 0
      const outcome = await withInvoker({ invoker: kind }, (invoker) => call(invoker, 'remote'))
      expect(outcome).toStrictEqual({ ok: true, text: 'from the HTTP function' })
      expect(httpCalls).toStrictEqual(['POST /fn'])
    }
    expect(fake.calls).toHaveLength(0)
  })
})

describe('invokers are loaded when a function needs them', () => {
  /** Runs `prepare` for the named functions in a fresh Node and reports whether the AWS SDK was loaded. */
  function loadsAwsSdk(functionNames: string[]): Promise<boolean> {
    const root = pathToFileURL(join(import.meta.dirname, '..', '..')).href
    const script = `
      import { registerHooks } from 'node:module'
      const resolved = []
      registerHooks({ resolve: (specifier, context, next) => { const r = next(specifier, context); resolved.push(r.url); return r } })
      const { LocationInvoker } = await import('${root}/bridge/invokers/invoker-for-location.ts')
      const { resolveSettings } = await import('${root}/bridge/project/settings.ts')
      const { readToolServices } = await import('${root}/bridge/project/tool-services.ts')
      const specs = readToolServices(${JSON.stringify(serverless('http://127.0.0.1:9/fn'))})
      const invoker = new LocationInvoker({ settings: resolveSettings({ invoker: 'in-process', lambdaEndpoint: 'http://127.0.0.1:9' }, {}), baseDir: '${join(import.meta.dirname, '../fixtures/faults')}' })
      for (const name of ${JSON.stringify(functionNames)}) await invoker.prepare(specs.find((s) => s.functionName === name))
      await invoker.close()
      console.log(JSON.stringify(resolved.some((url) => url.includes('@aws-sdk'))))
    `
    return new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        ['--input-type=module', '-e', script],
        { env: { ...process.env, AWS_EC2_METADATA_DISABLED: 'true' }, timeout: 30_000 },
        (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout) as boolean)),
      )
    })
  }

  it('not the AWS SDK for handlers run here and HTTP functions', async () => {
    expect(await loadsAwsSdk(['where', 'remote'])).toBe(false)
  })

  it("the AWS SDK once someone else's Lambda function is prepared", async () => {
    expect(await loadsAwsSdk(['remote', 'partner'])).toBe(true)
  })
})

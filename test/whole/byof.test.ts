/**
 * Bring your own function, end to end (test/fixtures/byof/serverless.yml):
 * - the Express catalogue app (functions/products), unchanged, as tools
 *   through `event: apigw-v2`: the same answers in process and under a real
 *   serverless-offline;
 * - the plain HTTP function server (functions/http-echo), through `url:`;
 * - someone else's Lambda function by name: a missing one is reported when
 *   the bridge starts and by `toolbridge check` (against the fake Lambda
 *   API, which also answers GetFunction), without invoking anything;
 * - both examples answering through `toolbridge invoke`, and through
 *   TrustGraph's own client on RabbitMQ when both are installed.
 */
import { execFile } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { RequestClient, ToolCallError } from '../../bridge/trustgraph/request-client.ts'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings, type Settings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import type { Logger } from '../../bridge/support/logger.ts'
import { startHttpFunctionServer, type HttpFunctionServer } from '../../functions/http-echo/server.ts'
import { startOffline } from '../../scripts/offline.ts'
import { ROOT } from '../../scripts/sls.ts'
import { FakeLambda, reply } from '../support/fake-lambda.ts'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import { TRUSTGRAPH_INSTALL, trustgraphClientCalls, trustgraphInstalled } from '../support/trustgraph.ts'

process.env.AWS_EC2_METADATA_DISABLED = 'true' // the SDK never looks for credentials on the network

const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/byof/', import.meta.url))
const FIXTURE_YML = join(FIXTURE_DIR, 'serverless.yml')
const CLI = join(ROOT, 'bridge/cli/main.ts')
const TOKEN = 'Bearer byof-secret'

/** Calls the fixture's tools make: each Express route, success and failure. */
const EXPRESS_CALLS = [
  { tool: 'lookup-product', arguments: { sku: 'KB-101' } },
  { tool: 'lookup-product', arguments: { sku: 'MN-270', currency: 'GBP' } },
  { tool: 'lookup-product', arguments: { sku: 'NOPE-1' } },
  { tool: 'lookup-product', arguments: { sku: 'KB-101', currency: 'XXX' } },
  { tool: 'place-order', arguments: { sku: 'KB-101', quantity: 2 } },
  { tool: 'place-order', arguments: { sku: 'MS-220', quantity: 1 } },
]

let httpFunction: HttpFunctionServer
/** The fixture with the HTTP function's real URL, next to the original so its handler paths hold. */
let yml: string

beforeAll(async () => {
  httpFunction = await startHttpFunctionServer()
  yml = join(FIXTURE_DIR, `serverless.test-${process.pid}.yml`)
  writeFileSync(yml, readFileSync(FIXTURE_YML, 'utf8').replaceAll('http://127.0.0.1:8090', httpFunction.url))
})
afterAll(async () => {
  rmSync(yml, { force: true })
  await httpFunction?.close()
})

const settingsFor = (flags: Parameters<typeof resolveSettings>[0]): Settings =>
  resolveSettings({ port: 'off', ...flags }, { BYOF_ECHO_TOKEN: TOKEN })

/** Each call's answer, or its error as `type: message`. */
async function answers(
  runtime: Runtime,
  project: Project,
  calls: { tool: string; arguments: object }[],
): Promise<string[]> {
  const transport = await runtime.connectClient()
  return Promise.all(
    calls.map(async (call) => {
      const spec = project.services.find((s) => s.tools.some((t) => t.name === call.tool))!
      const client = new RequestClient(transport, spec)
      await client.start()
      try {
        // A stream service's answer is every chunk up to end_of_stream, as a streaming client reads it.
        const onChunk = spec.response === 'stream' ? () => {} : undefined
        return await client.call(
          { user: 'alice', config: {}, arguments: call.arguments as Record<string, unknown> },
          { timeoutMs: 30_000, onChunk },
        )
      } catch (err) {
        return err instanceof ToolCallError ? `${err.type}: ${err.message}` : String(err)
      } finally {
        await client.close()
      }
    }),
  )
}

describe('the Express app through apigw-v2: in process and under serverless-offline', () => {
  let inProcess: string[]
  let offlineAnswers: string[]

  beforeAll(async () => {
    const project = loadProject(yml)
    const local = await startRuntime(project, settingsFor({ invoker: 'in-process' }))
    try {
      inProcess = await answers(local, project, EXPRESS_CALLS)
    } finally {
      await local.stop()
    }
    const offline = await startOffline({ serviceDir: FIXTURE_DIR })
    try {
      const remote = await startRuntime(project, settingsFor({ invoker: 'lambda', lambdaEndpoint: offline.endpoint }))
      try {
        offlineAnswers = await answers(remote, project, EXPRESS_CALLS)
      } finally {
        await remote.stop()
      }
    } finally {
      await offline.stop()
    }
  }, 180_000)

  it('answers what the app answers: JSON pretty-printed, 4xx as errors with status and body', () => {
    expect(JSON.parse(inProcess[0]!)).toStrictEqual({
      sku: 'KB-101',
      name: 'Mechanical keyboard',
      price: 89,
      currency: 'EUR',
      inStock: true,
    })
    expect(inProcess[0]).toContain('\n  "sku": "KB-101",\n')
    expect(JSON.parse(inProcess[1]!)).toMatchObject({ price: 186.15, currency: 'GBP' })
    expect(inProcess[2]).toBe('tool-service-error: HTTP 404 Not Found: {"error":"no product NOPE-1"}')
    expect(inProcess[3]).toBe(
      'tool-service-error: HTTP 400 Bad Request: {"error":"unknown currency XXX; use one of EUR, USD, GBP"}',
    )
    expect(JSON.parse(inProcess[4]!)).toStrictEqual({ sku: 'KB-101', quantity: 2, totalEur: 178 })
    expect(inProcess[5]).toBe('tool-service-error: HTTP 409 Conflict: {"error":"only 0 of MS-220 in stock"}')
  })

  it('answers the same, byte for byte, from serverless-offline', () => {
    expect(offlineAnswers).toStrictEqual(inProcess)
  })
})

describe('the HTTP function server through url:', () => {
  let runtime: Runtime
  let project: Project

  beforeAll(async () => {
    project = loadProject(yml)
    runtime = await startRuntime(project, settingsFor({ invoker: 'in-process' }))
  })
  afterAll(() => runtime?.stop())

  it('answers echo-words, and the countdown joined', async () => {
    const [echo, countdown, bad] = await answers(runtime, project, [
      { tool: 'echo-words', arguments: { text: 'bring your own function' } },
      { tool: 'countdown', arguments: { start: 2 } },
      { tool: 'countdown', arguments: { start: 1000 } },
    ])
    expect(echo).toBe('{\n  "echo": "bring your own function",\n  "words": 4\n}')
    expect(countdown).toBe('2\n1\nliftoff')
    expect(bad).toBe(
      'tool-service-error: HTTP 400 Bad Request: {"error":"\\"from\\" must be an integer from 1 to 100"}',
    )
  })
})

function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_') && !key.startsWith('AWS_')),
  )
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...base, AWS_EC2_METADATA_DISABLED: 'true', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('toolbridge invoke', () => {
  it('calls the Express app', async () => {
    const run = await cli([
      '-c',
      yml,
      'invoke',
      'lookup-product',
      '-a',
      'sku=KB-101',
      '-a',
      'currency=USD',
      '--invoker',
      'in-process',
    ])
    expect(run.stderr).toBe('toolbridge: via an embedded bridge in this process (in-process invoker)\n')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toStrictEqual({
      sku: 'KB-101',
      name: 'Mechanical keyboard',
      price: 96.12,
      currency: 'USD',
      inStock: true,
    })
  })

  it('calls the HTTP function with the secret header from the environment, and streams its event stream', async () => {
    const echo = await cli(['-c', yml, 'invoke', 'echo-words', '-a', 'text=one two', '--invoker', 'in-process'], {
      BYOF_ECHO_TOKEN: TOKEN,
    })
    expect(echo).toMatchObject({ code: 0, stdout: '{\n  "echo": "one two",\n  "words": 2\n}\n' })
    const countdown = await cli(
      ['-c', yml, 'invoke', 'countdown', '--args', '{"start": 3}', '--stream', '--invoker', 'in-process'],
      { BYOF_ECHO_TOKEN: TOKEN },
    )
    expect(countdown).toMatchObject({ code: 0, stdout: '3\n2\n1\nliftoff\n' })
  })

  it('says which environment variable is missing', async () => {
    const run = await cli(['-c', yml, 'invoke', 'echo-words', '-a', 'text=x', '--invoker', 'in-process'])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('environment variable BYOF_ECHO_TOKEN (for header authorization) not set')
  })
})

describe("someone else's Lambda function", () => {
  let fake: FakeLambda
  let partnerYml: string
  const PARTNER = 'partner-team-weather'
  const ARN = `arn:aws:lambda:us-east-1:000000000000:function:${PARTNER}`

  /** A serverless.yml with no functions of its own: three tool services on Lambda functions it does not define. */
  function write(): string {
    const service = (id: string, fn: string, extra: object = {}) => ({
      function: fn,
      id,
      topic: id,
      timeout: 5,
      tools: [
        {
          name: `${id}-tool`,
          description: 'A partner tool',
          arguments: [{ name: 'city', type: 'string', description: 'A city' }],
        },
      ],
      ...extra,
    })
    const doc = {
      service: 'partner',
      provider: { name: 'aws' },
      functions: {},
      custom: {
        toolServices: {
          weather: service('weather', PARTNER, { event: 'arguments' }),
          byArn: service('by-arn', ARN, { event: 'template', template: { q: '{{arguments.city}}' } }),
          gone: service('gone', 'partner-team-retired', { region: 'eu-west-1' }),
          broken: service('broken', 'partner-team-broken'),
        },
      },
    }
    const file = join(FIXTURE_DIR, `serverless.partner-${process.pid}.yml`)
    writeFileSync(file, toYaml(doc))
    return file
  }

  beforeAll(async () => {
    fake = await FakeLambda.start()
    partnerYml = write()
  })
  afterAll(async () => {
    rmSync(partnerYml, { force: true })
    await fake?.close()
  })

  it('is read like the rest: descriptors list its tools', async () => {
    const run = await cli(['-c', partnerYml, 'descriptors'])
    expect(run.code).toBe(0)
    const { tool } = JSON.parse(run.stdout) as { tool: Record<string, unknown> }
    expect(Object.keys(tool).sort()).toStrictEqual(['broken-tool', 'by-arn-tool', 'gone-tool', 'weather-tool'])
    expect(parseYaml(readFileSync(partnerYml, 'utf8')).functions).toStrictEqual({})
  })

  it('is called by name or ARN with the event its shape makes', async () => {
    fake.reset()
    fake.script(PARTNER, (call) => reply.result(`sunny in ${JSON.parse(call.payload.toString()).city}`))
    fake.script(ARN, (call) => reply.result(`rain in ${JSON.parse(call.payload.toString()).q}`))
    fake.setState('partner-team-retired', 'Active').setState('partner-team-broken', 'Active')
    const project = loadProject(partnerYml)
    const runtime = await startRuntime(project, settingsFor({ invoker: 'worker-threads', lambdaEndpoint: fake.url }))
    try {
      expect(
        await answers(runtime, project, [
          { tool: 'weather-tool', arguments: { city: 'Oslo' } },
          { tool: 'by-arn-tool', arguments: { city: 'Bergen' } },
        ]),
      ).toStrictEqual(['sunny in Oslo', 'rain in Bergen'])
    } finally {
      await runtime.stop()
    }
  })

  it('that does not exist is reported when the bridge starts, and a request gets a clear error', async () => {
    fake.reset()
    fake.script(PARTNER, reply.result('ok')).script(ARN, reply.result('ok')).setState('partner-team-broken', 'Active')
    const errors: string[] = []
    const logger: Logger = { debug() {}, info() {}, warn() {}, error: (_fields, message) => void errors.push(message) }
    const project = loadProject(partnerYml)
    const runtime = await startRuntime(project, settingsFor({ invoker: 'worker-threads', lambdaEndpoint: fake.url }), {
      logger,
    })
    try {
      expect(errors).toStrictEqual([
        'function cannot load: Lambda function "partner-team-retired" is missing: no function "partner-team-retired" in eu-west-1',
      ])
      expect(fake.calls).toHaveLength(0) // looked up, never invoked
      const [answer] = await answers(runtime, project, [{ tool: 'gone-tool', arguments: {} }])
      expect(answer).toMatch(/^unavailable: calling "partner-team-retired" .*ResourceNotFoundException/)
    } finally {
      await runtime.stop()
    }
  })

  it('toolbridge check reports the missing and the failed ones, without invoking any', async () => {
    fake.reset()
    fake.script(PARTNER, reply.result('ok')).script(ARN, reply.result('ok'))
    fake.setState('partner-team-broken', 'Failed', 'The function could not be created: its role is gone')
    const run = await cli(['-c', partnerYml, 'check', '--lambda-endpoint', fake.url])
    expect(run.code).toBe(1)
    expect(run.stdout.split('\n').filter(Boolean).sort()).toStrictEqual([
      'BAD  broken  partner-team-broken: not invokable: its state is Failed: The function could not be created: its role is gone',
      'BAD  gone  partner-team-retired: missing: no function "partner-team-retired" in eu-west-1',
      `ok   by-arn  ${ARN}: Active`,
      `ok   weather  ${PARTNER}: Active`,
    ])
    expect(run.stderr).toBe('toolbridge: 2 of 4 functions cannot be called\n')
    expect(fake.calls).toHaveLength(0)
    expect(fake.lookups.sort()).toStrictEqual([ARN, 'partner-team-broken', 'partner-team-retired', PARTNER].sort())
  })

  it('is refused with a field that does not fit it', () => {
    const doc = parseYaml(readFileSync(partnerYml, 'utf8'))
    doc.custom.toolServices.weather.headers = { a: 'b' }
    writeFileSync(partnerYml, toYaml(doc))
    try {
      expect(() => loadProject(partnerYml)).toThrow(
        'custom.toolServices.weather.headers: is for a "url:" tool service; this one names a Lambda "function:"',
      )
    } finally {
      write()
    }
  })
})

const interopReady = rabbitmqInstalled() && trustgraphInstalled()
if (!interopReady)
  console.log(
    `skipping bring-your-own-function interop: needs rabbitmq-server (${RABBITMQ_INSTALL}) and TrustGraph's packages (${TRUSTGRAPH_INSTALL})`,
  )

describe.skipIf(!interopReady)("TrustGraph's own client on RabbitMQ", () => {
  let broker: RabbitBroker
  let runtime: Runtime
  let project: Project

  beforeAll(async () => {
    broker = await startRabbitmq()
    project = loadProject(yml)
    runtime = await startRuntime(project, settingsFor({ broker: broker.url, invoker: 'in-process' }))
  }, 120_000)
  afterAll(async () => {
    await runtime?.stop()
    await broker?.stop()
  })

  const service = (id: string) => project.services.find((s) => s.id === id)!

  it('calls the Express app: an answer and an error', async () => {
    const results = await trustgraphClientCalls(service('product-service'), [
      { arguments: { sku: 'KB-101' } },
      { arguments: { sku: 'NOPE-1' } },
    ])
    expect(JSON.parse(results[0]!.response)).toMatchObject({ sku: 'KB-101', price: 89 })
    expect(results[0]!.error).toBeNull()
    expect(results[1]!.error).toStrictEqual({
      type: 'tool-service-error',
      message: 'HTTP 404 Not Found: {"error":"no product NOPE-1"}',
    })
  })

  it('calls the HTTP function, single and streamed', async () => {
    const [echo] = await trustgraphClientCalls(service('echo-service'), [{ arguments: { text: 'hello there' } }])
    expect(echo).toStrictEqual({ response: '{\n  "echo": "hello there",\n  "words": 2\n}', error: null, messages: 1 })
    const [countdown] = await trustgraphClientCalls(service('countdown-service'), [
      { arguments: { start: 3 }, stream: true },
    ])
    expect(countdown).toStrictEqual({ response: '3\n2\n1\nliftoff', error: null, messages: 5 }) // four events and the end of the stream
  })
})

/**
 * One function, three places: the example functions of serverless.yml,
 * unchanged, answer the same through the bridge when they run
 *   1. in process (the in-process invoker, from their TypeScript source),
 *   2. under a real serverless-offline (the lambda invoker on its Lambda API),
 *   3. from the zips `sls package` builds, run as Lambda's Node.js runtime
 *      runs them (test/support/lambda-runtime.ts) behind the Lambda API's real
 *      wire format, response streaming included.
 * Every example is sent as a TrustGraph request on the embedded broker and
 * the answers — text, chunks, error type and message — are compared.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RequestClient, ToolCallError, type ToolCall } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings, type SettingFlags } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { MemoryBroker } from '../../bridge/transports/memory/memory-transport.ts'
import { ROOT } from '../../scripts/sls.ts'
import { FakeLambda } from '../support/fake-lambda.ts'
import { locatedAt } from '../support/located.ts'
import { loadPackagedFunction } from '../support/lambda-runtime.ts'
import { packageFunctions, startOffline, type Offline, type Packaged } from '../../scripts/offline.ts'

/** serverless.yml, with the story service's timeout cut to a second so that one example runs past it. */
const STORY_TIMEOUT_MS = 1000
const FROM_YML = loadProject(join(ROOT, 'serverless.yml'))
const PROJECT = {
  ...FROM_YML,
  services: FROM_YML.services.map((s) => (s.id === 'story-service' ? { ...s, timeoutMs: STORY_TIMEOUT_MS } : s)),
}
const service = (id: string) => PROJECT.services.find((s) => s.id === id)!
/** The config values a tool fixes, as an agent sends them. */
const toolConfig = (serviceId: string) => ({ ...service(serviceId).tools[0]!.config })

interface Example {
  name: string
  serviceId: string
  call: ToolCall
}

const EXAMPLES: Example[] = [
  {
    name: 'joke',
    serviceId: 'joke-service',
    call: { user: 'alice', config: toolConfig('joke-service'), arguments: { topic: 'programming' } },
  },
  {
    name: 'joke, other style',
    serviceId: 'joke-service',
    call: { user: 'bob', config: { style: 'one-liner' }, arguments: { topic: 'cats' } },
  },
  { name: 'joke without its topic', serviceId: 'joke-service', call: { user: 'alice', config: {}, arguments: {} } },
  {
    name: 'calculation',
    serviceId: 'calculator-service',
    call: { user: 'alice', config: {}, arguments: { expression: '(1/3 + 0.25) * 12' } },
  },
  {
    name: 'division by zero',
    serviceId: 'calculator-service',
    call: { user: 'alice', config: {}, arguments: { expression: '1/0' } },
  },
  {
    name: 'expression of the wrong type',
    serviceId: 'calculator-service',
    call: { user: 'alice', config: {}, arguments: { expression: ['1+1'] } },
  },
  {
    name: 'story',
    serviceId: 'story-service',
    call: { user: 'alice', config: toolConfig('story-service'), arguments: { hero: 'Ada', sentences: 3 } },
  },
  // 5 sentences 400 ms apart: past the timeout after 3 of them.
  {
    name: 'story past its timeout',
    serviceId: 'story-service',
    call: { user: 'alice', config: { pace: 400 }, arguments: { hero: 'Ada' } },
  },
  {
    name: 'story too long',
    serviceId: 'story-service',
    call: { user: 'alice', config: {}, arguments: { hero: 'Ada', sentences: 1000 } },
  },
]

interface Answer {
  /** The whole answer: a single response, or the chunks joined. */
  text?: string
  chunks: string[]
  error?: { type: string; message: string }
}

/** A bridge on the embedded broker with one invoker, and a client per tool service. */
class Place {
  private runtime!: Runtime
  private readonly clients = new Map<string, RequestClient>()

  async start(flags: SettingFlags): Promise<void> {
    const settings = resolveSettings({ port: 'off', drainTimeout: '1', ...flags }, {})
    this.runtime = await startRuntime(PROJECT, settings, { memoryBroker: new MemoryBroker() })
    const transport = await this.runtime.connectClient()
    for (const spec of PROJECT.services) {
      const client = new RequestClient(transport, spec)
      await client.start()
      this.clients.set(spec.id, client)
    }
  }

  async ask({ serviceId, call }: Example): Promise<Answer> {
    const chunks: string[] = []
    const onChunk = service(serviceId).response === 'stream' ? (chunk: string) => void chunks.push(chunk) : undefined
    try {
      return { text: await this.clients.get(serviceId)!.call(call, { onChunk, timeoutMs: 60_000 }), chunks }
    } catch (err) {
      if (!(err instanceof ToolCallError)) throw err
      return { chunks, error: { type: err.type, message: err.message } }
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.clients.values()].map((c) => c.close()))
    await this.runtime?.stop()
  }
}

describe('one function, three places', () => {
  const inProcess = new Place()
  const offlinePlace = new Place()
  const packagedPlace = new Place()
  let offline: Offline | undefined
  let packaged: Packaged | undefined
  let lambda: FakeLambda | undefined
  const streamingZips = new Map<string, boolean>()
  const answers = new Map<string, { inProcess: Answer; offline: Answer; packaged: Answer }>()

  beforeAll(async () => {
    ;[offline, packaged, lambda] = await Promise.all([startOffline(), packageFunctions(), FakeLambda.start()])
    for (const spec of PROJECT.services) {
      const { location } = locatedAt(spec, 'handler')
      const fn = await loadPackagedFunction(join(packaged.dir, `${spec.functionName}.zip`), location.handler)
      lambda.script(location.lambdaName, fn.script)
      streamingZips.set(spec.id, fn.streaming)
    }
    await inProcess.start({ invoker: 'in-process' })
    await offlinePlace.start({ invoker: 'lambda', lambdaEndpoint: offline.endpoint })
    await packagedPlace.start({ invoker: 'lambda', lambdaEndpoint: lambda.url })
    for (const example of EXAMPLES) {
      const [a, b, c] = await Promise.all([
        inProcess.ask(example),
        offlinePlace.ask(example),
        packagedPlace.ask(example),
      ])
      answers.set(example.name, { inProcess: a, offline: b, packaged: c })
    }
  }, 240_000)

  afterAll(async () => {
    await Promise.all([inProcess.stop(), offlinePlace.stop(), packagedPlace.stop()])
    await Promise.all([offline?.stop(), packaged?.remove(), lambda?.close()])
  })

  const TIMES_OUT = 'story past its timeout'
  it.each(EXAMPLES.map((e) => e.name).filter((name) => name !== TIMES_OUT))(
    '%s: the same answer in each place',
    (name) => {
      const { inProcess, offline, packaged } = answers.get(name)!
      expect(offline.text).toBe(inProcess.text)
      expect(packaged.text).toBe(inProcess.text)
      expect(offline.error).toStrictEqual(inProcess.error)
      expect(packaged.error).toStrictEqual(inProcess.error)
    },
  )

  it('a call past its timeout is a timeout error in each place, after the chunks sent so far', () => {
    // The message names the function as it ran: its key in process, its Lambda name elsewhere.
    const timedOut = {
      type: 'timeout',
      message: expect.stringMatching(/^function "(story|toolbridge-story)" timed out after 1000 ms$/),
    }
    const { inProcess, offline, packaged } = answers.get(TIMES_OUT)!
    for (const answer of [inProcess, offline, packaged]) expect(answer.error).toStrictEqual(timedOut)
    expect(inProcess.chunks.length).toBeGreaterThan(0)
    expect(packaged.chunks.length).toBeGreaterThan(0)
    expect(offline.chunks).toStrictEqual([]) // buffered: nothing arrives before the end
  })

  it('the answers are the examples’ own (not three copies of one failure)', () => {
    const at = (name: string) => answers.get(name)!.inProcess
    expect(at('joke').text).toContain('UDP')
    expect(at('calculation').text).toBe('7')
    expect(at('story').text).toMatch(/^Once upon a time, Ada lived in a small town by the sea\. .+\..+\.$/)
    expect(at('joke without its topic').error).toStrictEqual({
      type: 'invalid-arguments',
      message: 'invalid arguments: "topic" is required',
    })
    expect(at('expression of the wrong type').error?.type).toBe('invalid-arguments')
    expect(at('division by zero').error).toStrictEqual({
      type: 'tool-service-error',
      message: 'division by zero at position 2',
    })
    expect(at('story too long').error).toStrictEqual({
      type: 'tool-service-error',
      message: '"sentences" must be between 1 and 100',
    })
  })

  it('the streaming function streams from its zip as in process, chunk for chunk', () => {
    expect(streamingZips.get('story-service')).toBe(true)
    expect(streamingZips.get('joke-service')).toBe(false)
    const { inProcess, packaged } = answers.get('story')!
    expect(inProcess.chunks).toHaveLength(3)
    expect(packaged.chunks).toStrictEqual(inProcess.chunks)
  })

  it('under serverless-offline, which has no response streaming, the story comes in one piece', () => {
    const { inProcess, offline } = answers.get('story')!
    expect(offline.chunks).toStrictEqual([inProcess.chunks.join('')])
  })
})

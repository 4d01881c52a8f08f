import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { ConfigError } from '../../shared/errors.ts'
import { descriptors } from '../../bridge/project/descriptors.ts'
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_SECONDS,
  readToolServices,
  type ToolServiceSpec,
} from '../../bridge/project/tool-services.ts'
import { TELL_JOKE_TOOL } from '../support/example-descriptors.ts'

const repoServerless = (): unknown => parse(readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8'))

/** A minimal valid serverless.yml (as parsed) with one function `joke`. */
function project(): { functions: Record<string, Record<string, any>> } {
  return {
    functions: {
      joke: {
        handler: 'functions/joke/handler.handler',
        toolService: {
          id: 'joke-service',
          topic: 'joke',
          configParams: [{ name: 'style', required: false }],
          tools: [
            {
              name: 'tell-joke',
              description: 'Tell a joke on a given topic',
              config: { style: 'pun' },
              arguments: [{ name: 'topic', type: 'string', description: 'The topic for the joke', required: true }],
            },
          ],
        },
      },
    },
  }
}

const joke = (p: ReturnType<typeof project>) => p.functions.joke!.toolService
/** The joke function's toolService block, as parsed. */
type Service = ReturnType<typeof joke>

function configError(serverless: unknown): ConfigError {
  try {
    readToolServices(serverless)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as ConfigError).kind).toBe('config')
    return err as ConfigError
  }
  throw new Error('expected readToolServices to throw a ConfigError')
}

function only(specs: ToolServiceSpec[]): ToolServiceSpec {
  expect(specs).toHaveLength(1)
  return specs[0]!
}

describe('descriptors of the repo serverless.yml (docs/wire-contract.md)', () => {
  it.each([
    [
      'gives joke-service its tool-service object with logical queue names by default',
      undefined,
      'request:tg:joke',
      'response:tg:joke',
    ],
    [
      'gives joke-service non-persistent Pulsar URIs with style pulsar',
      'pulsar',
      'non-persistent://tg/request/joke',
      'non-persistent://tg/response/joke',
    ],
  ] as const)('%s', (_title, style, requestQueue, responseQueue) => {
    const out = descriptors(readToolServices(repoServerless()), style)
    expect(out['tool-service']['joke-service']).toStrictEqual({
      id: 'joke-service',
      'request-queue': requestQueue,
      'response-queue': responseQueue,
      'config-params': [{ name: 'style', required: false }],
    })
  })

  it('gives tell-joke its tool object, config values at top level and no required flag', () => {
    const expected = TELL_JOKE_TOOL
    expect(descriptors(readToolServices(repoServerless())).tool['tell-joke']).toStrictEqual(expected)
    expect(descriptors(readToolServices(repoServerless()), 'pulsar').tool['tell-joke']).toStrictEqual(expected)
  })

  it('emits no "required" key on any argument of any tool', () => {
    const tools = Object.values(descriptors(readToolServices(repoServerless())).tool)
    expect(tools.length).toBeGreaterThan(0)
    for (const tool of tools) {
      for (const argument of tool.arguments) {
        expect(Object.keys(argument)).toStrictEqual(['name', 'type', 'description'])
      }
    }
  })

  it('prints the {"tool-service", "tool"} pair keyed by service id and tool name', () => {
    const out = descriptors(readToolServices(repoServerless()))
    expect(Object.keys(out)).toStrictEqual(['tool-service', 'tool'])
    expect(out['tool-service']['joke-service']?.id).toBe('joke-service')
    expect(out.tool['tell-joke']?.name).toBe('tell-joke')
  })
})

describe('readToolServices', () => {
  it('applies the defaults: concurrency 8, timeout 30 s, no memory limit, single response, the envelope as event', () => {
    const spec = only(readToolServices(project()))
    expect(DEFAULT_CONCURRENCY).toBe(8)
    expect(DEFAULT_TIMEOUT_SECONDS).toBe(30)
    expect(spec).toStrictEqual({
      functionName: 'joke',
      location: { kind: 'handler', handler: 'functions/joke/handler.handler', lambdaName: 'joke' },
      id: 'joke-service',
      topic: 'joke',
      requestQueue: 'request:tg:joke',
      responseQueue: 'response:tg:joke',
      configParams: [{ name: 'style', required: false }],
      response: 'single',
      concurrency: 8,
      invocationsPerWorker: 1,
      timeoutMs: 30_000,
      memoryMb: undefined,
      environment: {},
      tools: [
        {
          name: 'tell-joke',
          description: 'Tell a joke on a given topic',
          config: { style: 'pun' },
          arguments: [{ name: 'topic', type: 'string', description: 'The topic for the joke', required: true }],
          annotations: {},
        },
      ],
      shape: { event: 'envelope', answer: 'text' },
    })
  })

  it('uses the function-level timeout when toolService has none', () => {
    const p = project()
    p.functions.joke!.timeout = 12
    expect(only(readToolServices(p)).timeoutMs).toBe(12_000)
  })

  it("prefers toolService's timeout to the function's", () => {
    const p = project()
    p.functions.joke!.timeout = 12
    joke(p).timeout = 2.5
    expect(only(readToolServices(p)).timeoutMs).toBe(2_500)
  })

  it('takes memorySize from the function, else from the provider', () => {
    const p = project() as ReturnType<typeof project> & { provider?: Record<string, unknown> }
    p.provider = { memorySize: 512 }
    expect(only(readToolServices(p)).memoryMb).toBe(512)
    ;(p.functions.joke as Record<string, unknown>).memorySize = 128
    expect(only(readToolServices(p)).memoryMb).toBe(128)
  })

  it('reads response mode and concurrency', () => {
    const p = project()
    joke(p).response = 'stream'
    joke(p).concurrency = 3
    const spec = only(readToolServices(p))
    expect(spec.response).toBe('stream')
    expect(spec.concurrency).toBe(3)
  })

  it('reads invocationsPerWorker (default 1, one invocation at a time per worker) and refuses 0', () => {
    const p = project()
    joke(p).invocationsPerWorker = 16
    expect(only(readToolServices(p)).invocationsPerWorker).toBe(16)
    joke(p).invocationsPerWorker = 0
    expect(configError(p).message).toBe('functions.joke.toolService.invocationsPerWorker: must be >= 1')
  })

  it('accepts a config param given as a bare string, not required', () => {
    const p = project()
    joke(p).configParams = ['style']
    expect(only(readToolServices(p)).configParams).toStrictEqual([{ name: 'style', required: false }])
  })

  it('gives a tool without arguments an empty arguments list', () => {
    const p = project()
    delete joke(p).tools[0].arguments
    const out = descriptors(readToolServices(p))
    expect(out.tool['tell-joke']).toStrictEqual({
      type: 'tool-service',
      name: 'tell-joke',
      description: 'Tell a joke on a given topic',
      service: 'joke-service',
      style: 'pun',
      arguments: [],
    })
  })

  it('gives a service without config params an empty config-params list', () => {
    const p = project()
    delete joke(p).configParams
    delete joke(p).tools[0].config
    expect(descriptors(readToolServices(p))['tool-service']['joke-service']?.['config-params']).toStrictEqual([])
  })

  it('uses explicit requestQueue and responseQueue as given, in both styles', () => {
    const p = project()
    delete joke(p).topic
    joke(p).requestQueue = 'non-persistent://tg/request/custom'
    joke(p).responseQueue = 'non-persistent://tg/response/custom'
    const spec = only(readToolServices(p))
    expect(spec.topic).toBeUndefined()
    expect(spec.requestQueue).toBe('non-persistent://tg/request/custom')
    expect(spec.responseQueue).toBe('non-persistent://tg/response/custom')
    const expected = {
      id: 'joke-service',
      'request-queue': 'non-persistent://tg/request/custom',
      'response-queue': 'non-persistent://tg/response/custom',
      'config-params': [{ name: 'style', required: false }],
    }
    expect(descriptors([spec])['tool-service']['joke-service']).toStrictEqual(expected)
    expect(descriptors([spec], 'pulsar')['tool-service']['joke-service']).toStrictEqual(expected)
  })

  it('skips functions without a toolService block', () => {
    const p = project()
    p.functions.plain = { handler: 'functions/plain.handler' }
    expect(readToolServices(p).map((s) => s.functionName)).toStrictEqual(['joke'])
  })
})

describe('readToolServices errors name the exact path', () => {
  it('names an unknown field (typo "tols" for "tools")', () => {
    const p = project()
    joke(p).tols = joke(p).tools
    delete joke(p).tools
    expect(configError(p).message).toMatch(/^functions\.joke\.toolService(\.tols)?: unknown field "tols"$/)
  })

  it('names an unknown field that does not hide a required one', () => {
    const p = project()
    joke(p).concurency = 4
    expect(configError(p).message).toMatch(/^functions\.joke\.toolService(\.concurency)?: unknown field "concurency"$/)
  })

  it('names an unknown field inside a tool (typo "descripton")', () => {
    const p = project()
    joke(p).tools[0].descripton = joke(p).tools[0].description
    delete joke(p).tools[0].description
    expect(configError(p).message).toMatch(
      /^functions\.joke\.toolService\.tools\[0\](\.descripton)?: unknown field "descripton"$/,
    )
  })

  it('names a misspelt MCP hint, and a hint that is not a boolean', () => {
    const p = project()
    joke(p).tools[0].annotations = { readOnly: true }
    expect(configError(p).message).toMatch(
      /^functions\.joke\.toolService\.tools\[0\]\.annotations(\.readOnly)?: unknown field "readOnly"$/,
    )
    joke(p).tools[0].annotations = { readOnlyHint: 'yes' }
    expect(configError(p).message).toBe('functions.joke.toolService.tools[0].annotations.readOnlyHint: must be boolean')
  })

  it('names the config param declaration of a reserved name ("name")', () => {
    const p = project()
    joke(p).configParams = [{ name: 'style' }, { name: 'name' }]
    expect(configError(p).message).toMatch(/^functions\.joke\.toolService\.configParams\[1\](\.name)?: .*"name"/)
  })

  /** The joke service's queues given instead of its topic. */
  const withQueues = (s: Service, queues: { requestQueue: string; responseQueue?: string }) => {
    delete s.topic
    Object.assign(s, queues)
  }

  it.each<[string, (s: Service) => unknown, string]>([
    [
      'names a tool without a description',
      (s) => delete s.tools[0].description,
      'functions.joke.toolService.tools[0]: missing required field "description"',
    ],
    [
      'names an output schema that is not a mapping',
      (s) => (s.tools[0].output = 'json'),
      'functions.joke.toolService.tools[0].output: must be object',
    ],
    [
      'names a bad argument type',
      (s) => (s.tools[0].arguments[0].type = 'str'),
      'functions.joke.toolService.tools[0].arguments[0].type: must be one of "string", "number", "integer", "boolean", "object", "array"',
    ],
    [
      'names a tool config value that is not a string, number or boolean',
      (s) => (s.tools[0].config.style = ['pun']),
      'functions.joke.toolService.tools[0].config.style: must be a string, number or boolean',
    ],
    [
      'names a config param that is neither a name nor {name, required}',
      (s) => (s.configParams = [42]),
      'functions.joke.toolService.configParams[0]: must be a name or {name, required}',
    ],
    [
      'names a bad response mode',
      (s) => (s.response = 'multi'),
      'functions.joke.toolService.response: must be one of "single", "stream"',
    ],
    ['names a concurrency of 0', (s) => (s.concurrency = 0), 'functions.joke.toolService.concurrency: must be >= 1'],
    [
      'refuses topic and requestQueue together',
      (s) => Object.assign(s, { requestQueue: 'request:tg:other', responseQueue: 'response:tg:other' }),
      'functions.joke.toolService: give either "topic" or "requestQueue" and "responseQueue", not both',
    ],
    [
      'refuses a service with neither topic nor queues',
      (s) => delete s.topic,
      'functions.joke.toolService: missing "topic" (or "requestQueue" and "responseQueue")',
    ],
    [
      'refuses requestQueue without responseQueue',
      (s) => withQueues(s, { requestQueue: 'request:tg:other' }),
      'functions.joke.toolService: missing required field "responseQueue"',
    ],
    [
      'names an invalid queue name',
      (s) => withQueues(s, { requestQueue: 'request:tg:a/b', responseQueue: 'response:tg:a' }),
      'functions.joke.toolService.requestQueue: queue "request:tg:a/b": topic "a/b" may only contain letters, digits, ".", "_" and "-"',
    ],
    [
      'names an invalid response queue name',
      (s) => withQueues(s, { requestQueue: 'request:tg:a', responseQueue: 'reply:tg:a' }),
      'functions.joke.toolService.responseQueue: queue "reply:tg:a": class "reply" must be one of flow, request, response, notify',
    ],
    [
      'names a tool config key that is not a config param',
      (s) => (s.tools[0].config = { colour: 'red' }),
      'functions.joke.toolService.tools[0].config.colour: is not a config param of this tool service',
    ],
    [
      "names a required config param missing from a tool's config",
      (s) => {
        s.configParams = [{ name: 'style', required: true }]
        delete s.tools[0].config
      },
      'functions.joke.toolService.tools[0].config: missing required config param "style"',
    ],
    [
      'refuses a config param with a reserved name even as a bare string',
      (s) => {
        s.configParams = ['description']
        delete s.tools[0].config
      },
      'functions.joke.toolService.configParams[0].name: "description" would overwrite the tool\'s own "description" field',
    ],
    [
      'names a duplicate argument name',
      (s) => s.tools[0].arguments.push({ name: 'topic', type: 'string', description: 'again' }),
      'functions.joke.toolService.tools[0].arguments[1].name: duplicate argument "topic"',
    ],
  ])('%s', (_title, change, message) => {
    const p = project()
    change(joke(p))
    expect(configError(p).message).toBe(message)
  })

  it('names a duplicate service id', () => {
    const p = project()
    p.functions.other = structuredClone(p.functions.joke!)
    p.functions.other.toolService.tools[0].name = 'tell-other'
    expect(configError(p).message).toBe(
      'functions.other.toolService.id: "joke-service" is also the id of functions.joke',
    )
  })

  it('names a tool name defined by two functions', () => {
    const p = project()
    p.functions.other = structuredClone(p.functions.joke!)
    p.functions.other.toolService.id = 'other-service'
    expect(configError(p).message).toBe(
      'functions.other.toolService.tools[0].name: tool "tell-joke" is also defined by functions.joke',
    )
  })

  it('refuses functions that are not a mapping, and takes a serverless.yml without functions (custom.toolServices only)', () => {
    expect(configError({ service: 'x', functions: ['a'] }).message).toBe(
      'functions: must be a mapping of function names to functions',
    )
    expect(readToolServices({ service: 'x' })).toEqual([])
  })
})

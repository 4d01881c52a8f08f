/**
 * The `toolbridge` command as a user runs it: `node bridge/cli/main.ts ...` in a
 * child process, checked by its output and exit code.
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createTcpServer } from 'node:net'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml'
import { StartedBridge } from '../support/started-bridge.ts'
import { TELL_JOKE_TOOL } from '../support/example-descriptors.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const FAULTS_YML = 'test/fixtures/faults/serverless.yml'
/** A fail-safe against a hung child, not a limit on how fast it must be. */
const CHILD_TIMEOUT_MS = 30_000

/**
 * The environment without TOOLBRIDGE_* settings, so only the flags under test count; `invoke` looks for a
 * running bridge on TOOLBRIDGE_PORT, here one where nothing listens, whatever runs on this machine's 8080.
 */
const cleanEnv = (env: Record<string, string> = {}) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_'))),
  TOOLBRIDGE_PORT: '9',
  ...env,
})

const EMBEDDED_ROUTE = 'toolbridge: via an embedded bridge in this process (worker-threads invoker)\n'

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

const toolbridge = (...args: string[]): Promise<Run> => toolbridgeWith({}, ...args)

function toolbridgeWith(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bridge/cli/main.ts', ...args],
      { cwd: ROOT, env: cleanEnv(env), timeout: CHILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
        resolve({ code, signal: (error?.signal as NodeJS.Signals | undefined) ?? null, stdout, stderr })
      },
    )
  })
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '')

/** A `toolbridge [global options] start [start options]` child with its HTTP gateway on a free port. */
const startServer = (globalArgs: string[] = [], startArgs: string[] = []) =>
  new StartedBridge([...globalArgs, 'start', '--port', '0', '--log-level', 'warn', ...startArgs], {
    env: { TOOLBRIDGE_PORT: '9' },
  })

const ndjson = (text: string) => lines(text).map((line) => JSON.parse(line) as Record<string, unknown>)

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

describe('toolbridge invoke', () => {
  it.concurrent('prints the answer of tell-joke and exits 0', async ({ expect }) => {
    const run = await toolbridge('invoke', 'tell-joke', '--arg', 'topic=programming')
    expect(run).toMatchObject({ code: 0, stderr: EMBEDDED_ROUTE })
    expect(run.stdout).toBe(
      "Hey there! Here's a pun for you:\n\nI told my computer a joke about UDP. I am not sure it got it.\n",
    )
  })

  it.concurrent('prints the streamed story of tell-story with --stream', async ({ expect }) => {
    const run = await toolbridge('invoke', 'tell-story', '--arg', 'hero=Ada', '--stream')
    expect(run).toMatchObject({ code: 0, stderr: EMBEDDED_ROUTE })
    expect(run.stdout).toMatch(/^Once upon a time, Ada lived in a small town by the sea\. Every morning, Ada looked/)
    expect(run.stdout).toMatch(/ The path led through a forest where the trees whispered old names\.\n$/)
  })

  it.concurrent('reports a missing argument as "error: invalid-arguments: ..." and exits 1', async ({ expect }) => {
    const run = await toolbridge('invoke', 'tell-joke')
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(lines(run.stderr)).toEqual([
      EMBEDDED_ROUTE.trim(),
      expect.stringMatching(/^error: invalid-arguments: .*"topic" is required/),
    ])
  })

  it.concurrent('reports an unknown tool in one line and exits non-zero', async ({ expect }) => {
    const run = await toolbridge('invoke', 'no-such-tool')
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    expect(lines(run.stderr)).toEqual([expect.stringContaining('unknown tool "no-such-tool"')])
    expect(run.stderr).toContain('tell-joke')
  })

  it.concurrent('refuses a --timeout that is not a positive number of seconds, in one line, exit 2', async ({
    expect,
  }) => {
    const run = await toolbridge('invoke', 'tell-joke', '--arg', 'topic=cats', '--timeout', '0')
    expect(run).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'toolbridge: --timeout: "0" must be a positive number of seconds\n',
    })
    // Before trying to reach the broker: nothing listens at this one.
    for (const command of ['register', 'unregister']) {
      const registering = await toolbridge(command, '--broker', 'amqp://127.0.0.1:9', '--timeout', 'soon')
      expect(registering).toMatchObject({
        code: 2,
        stdout: '',
        stderr: 'toolbridge: --timeout: "soon" must be a positive number of seconds\n',
      })
    }
  })

  it.concurrent('exits 2 with one line for every flag value it cannot use, before starting anything', async ({
    expect,
  }) => {
    const usage: [string[], string][] = [
      [['invoke', 'tell-joke', '--args', '{bad'], 'toolbridge: --args: not valid JSON'],
      [['invoke', 'tell-joke', '--args', '[1]'], 'toolbridge: --args: must be a JSON object'],
      [['invoke', 'tell-joke', '--arg', 'topic'], 'toolbridge: --arg "topic": expected key=value'],
      [
        ['invoke', 'tell-joke', '--url', 'nowhere'],
        'toolbridge: --url: "nowhere" is not a URL, e.g. http://localhost:3002',
      ],
      [['start', '--port', 'abc'], 'toolbridge: --port: "abc" must be an integer from 0 to 65535'],
      [['start', '--drain-timeout', '-1'], 'toolbridge: --drain-timeout: "-1" must be an integer from 0 to 3600'],
      [['start', '--register', '--timeout', '0'], 'toolbridge: --timeout: "0" must be a positive number of seconds'],
      [['descriptors', '--mcp-url', 'ftp://x'], 'toolbridge: --mcp-url: "ftp://x" must be an http:// or https:// URL'],
    ]
    for (const [args, message] of usage) {
      const run = await toolbridge(...args)
      expect({ args, ...run }).toMatchObject({ args, code: 2, stdout: '', stderr: message + '\n' })
    }
  })

  it.concurrent('refuses an unknown flag with a non-zero exit', async ({ expect }) => {
    const run = await toolbridge('invoke', 'tell-joke', '--no-such-flag')
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    expect(run.stderr).toContain('--no-such-flag')
    expect(run.stdout).toBe('')
  })
})

/** The call the story tests make: tell-story for Ada. */
const ADA_STORY = ['invoke', 'tell-story', '--arg', 'hero=Ada']
const WHOLE_STORY =
  /^Once upon a time, Ada lived in a small town by the sea\..* The path led through a forest where the trees whispered old names\.\n$/

describe('toolbridge invoke, a stream service without --stream', () => {
  it.concurrent('prints the whole answer from an embedded bridge, in worker threads and in process', async ({
    expect,
  }) => {
    for (const invoker of ['worker-threads', 'in-process']) {
      const run = await toolbridge(...ADA_STORY, '--invoker', invoker)
      expect(run).toMatchObject({
        code: 0,
        stderr: `toolbridge: via an embedded bridge in this process (${invoker} invoker)\n`,
      })
      expect(run.stdout).toMatch(WHOLE_STORY)
    }
  })

  it.concurrent('ends once a function that ran in process timed out, whatever it left running', async ({ expect }) => {
    // The function sleeps far past the child's fail-safe timeout; its own timeout (10 s) answers first.
    const run = await toolbridge(
      '-c',
      FAULTS_YML,
      'invoke',
      'slow',
      '--args',
      '{"ms": 600000}',
      '--invoker',
      'in-process',
    )
    expect(run).toMatchObject({ code: 1, signal: null, stdout: '' })
    expect(lines(run.stderr).at(-1)).toMatch(/^error: timeout: /)
  })
})

describe('toolbridge invoke, and the bridge on this machine', () => {
  let other: StartedBridge
  let otherPort: string
  let locked: StartedBridge
  let lockedPort: string
  beforeAll(async () => {
    other = startServer(['-c', FAULTS_YML])
    locked = startServer([], ['--http-token', 'sesame'])
    otherPort = new URL(await other.url()).port
    lockedPort = new URL(await locked.url()).port
  })
  afterAll(() => Promise.all([other?.stop(), locked?.stop()]))

  it('refuses to call a bridge that serves another serverless.yml, saying what differs', async () => {
    const run = await toolbridgeWith({ TOOLBRIDGE_PORT: otherPort }, 'invoke', 'tell-joke', '--arg', 'topic=cats')
    expect(run).toMatchObject({ code: 1, stdout: '' })
    expect(lines(run.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^toolbridge: the toolbridge at http://127\\.0\\.0\\.1:${otherPort} does not serve serverless\\.yml \\(it lacks tell-joke, .*; it also serves echo, .*\\): call it with --url http://127\\.0\\.0\\.1:${otherPort}, or run the tool here with --invoker worker-threads$`,
        ),
      ),
    ])
  })

  it('asks for the token of a bridge that wants one, and goes through it with --http-token', async () => {
    const refused = await toolbridgeWith({ TOOLBRIDGE_PORT: lockedPort }, 'invoke', 'tell-joke', '--arg', 'topic=cats')
    expect(refused).toMatchObject({ code: 1, stdout: '' })
    expect(lines(refused.stderr)).toEqual([
      expect.stringContaining('wants a bearer token: give --http-token (env TOOLBRIDGE_HTTP_TOKEN)'),
    ])
    const run = await toolbridgeWith({ TOOLBRIDGE_PORT: lockedPort }, ...ADA_STORY, '--http-token', 'sesame')
    expect(run).toMatchObject({ code: 0, stderr: `toolbridge: via http://127.0.0.1:${lockedPort}\n` })
    expect(run.stdout).toMatch(WHOLE_STORY)
  })
})

describe('toolbridge invoke, and a bridge started before a function was added', () => {
  let bridge: StartedBridge
  let port: string
  let project: string
  beforeAll(async () => {
    bridge = startServer()
    port = new URL(await bridge.url()).port
    // This serverless.yml with one more tool, as `toolbridge add function` leaves it while that bridge runs.
    project = mkdtempSync(join(tmpdir(), 'toolbridge-added-'))
    symlinkSync(join(ROOT, 'functions'), join(project, 'functions'), 'dir')
    const yml = parseYaml(readFileSync(join(ROOT, 'serverless.yml'), 'utf8')) as {
      functions: Record<string, { toolService: { id: string; topic: string; tools: { name: string }[] } }>
    }
    const added = structuredClone(yml.functions.joke!)
    added.toolService = { ...added.toolService, id: 'weather-service', topic: 'weather' }
    added.toolService.tools = added.toolService.tools.map((tool) => ({ ...tool, name: 'weather' }))
    yml.functions.weather = added
    writeFileSync(join(project, 'serverless.yml'), stringifyYaml(yml))
  })
  afterAll(async () => {
    await bridge?.stop()
    rmSync(project, { recursive: true, force: true })
  })

  it('goes through it for a tool it serves, though it lacks the added one', async () => {
    const config = join(project, 'serverless.yml')
    const run = await toolbridgeWith({ TOOLBRIDGE_PORT: port }, '-c', config, ...ADA_STORY)
    expect(run).toMatchObject({ code: 0, stderr: `toolbridge: via http://127.0.0.1:${port}\n` })
    expect(run.stdout).toMatch(WHOLE_STORY)
  })

  it('names what it lacks when asked for the added tool', async () => {
    const config = join(project, 'serverless.yml')
    const run = await toolbridgeWith(
      { TOOLBRIDGE_PORT: port },
      '-c',
      config,
      'invoke',
      'weather',
      '--arg',
      'topic=rain',
    )
    expect(run).toMatchObject({ code: 1, stdout: '' })
    expect(lines(run.stderr)).toEqual([
      `toolbridge: the toolbridge at http://127.0.0.1:${port} does not serve ${config} (it lacks weather): call it with --url http://127.0.0.1:${port}, or run the tool here with --invoker worker-threads`,
    ])
  })
})

describe('toolbridge invoke --url, through a running toolbridge start', () => {
  // Its functions are "on Lambda" at an endpoint where nothing listens: an answer that says so
  // can only come from that bridge, never from one `invoke` would start of its own.
  let server: StartedBridge
  let url: string
  beforeAll(async () => {
    server = startServer(
      [],
      ['--invoker', 'lambda', '--lambda-endpoint', 'http://127.0.0.1:9', '--lambda-retry-window', '0'],
    )
    url = await server.url()
  })
  afterAll(() => server?.stop())

  it('goes through that bridge and its invoker', async () => {
    const run = await toolbridge('invoke', 'tell-joke', '--arg', 'topic=cats', '--url', url, '--timeout', '20')
    expect(run.code).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `toolbridge: via ${url}`,
      expect.stringMatching(
        /^error: unavailable: calling "toolbridge-joke" on http:\/\/127\.0\.0\.1:9: .*ECONNREFUSED/,
      ),
    ])
  })

  it('says so in one line when nothing answers at --url', async () => {
    const run = await toolbridge('invoke', 'tell-joke', '--arg', 'topic=cats', '--url', 'http://127.0.0.1:9')
    expect(run.code).toBe(1)
    expect(lines(run.stderr)).toEqual(['toolbridge: --url http://127.0.0.1:9: no toolbridge answers there'])
  })
})

describe('toolbridge -c with a bad serverless.yml', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-cli-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const write = (name: string, text: string) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }

  it.concurrent('names the file when it is not valid YAML', async ({ expect }) => {
    const path = write('invalid.yml', 'functions:\n  echo: [unclosed\n    handler: x.handler\n')
    const run = await toolbridge('-c', path, 'descriptors')
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    expect(run.stdout).toBe('')
    expect(lines(run.stderr)).toEqual([expect.stringContaining(`${path}: invalid YAML`)])
  })

  it.concurrent('quotes the line of a duplicate key, without a dangling colon', async ({ expect }) => {
    const path = write(
      'duplicate.yml',
      'service: dup\nfunctions:\n  joke:\n    handler: a.handler\n  joke:\n    handler: b.handler\n',
    )
    const run = await toolbridge('-c', path, 'descriptors')
    expect(run).toMatchObject({ code: 1, stdout: '' })
    expect(lines(run.stderr)).toEqual([
      `toolbridge: ${path}: invalid YAML: Map keys must be unique at line 5, column 3: "joke:"`,
    ])
  })

  it.concurrent('takes a serverless.yml with only custom.toolServices, no functions:', async ({ expect }) => {
    const path = write(
      'custom-only.yml',
      [
        'service: elsewhere',
        'custom:',
        '  toolServices:',
        '    remote:',
        '      url: http://127.0.0.1:9/x',
        '      id: remote-service',
        '      topic: remote',
        '      tools:',
        '        - name: remote',
        '          description: Remote',
        '',
      ].join('\n'),
    )
    const run = await toolbridge('-c', path, 'descriptors')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(Object.keys((JSON.parse(run.stdout) as { tool: object }).tool)).toEqual(['remote'])
  })

  it.concurrent('names the file when it cannot be read', async ({ expect }) => {
    const path = join(dir, 'missing.yml')
    const run = await toolbridge('-c', path, 'invoke', 'tell-joke', '--arg', 'topic=cats')
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    expect(lines(run.stderr)).toEqual([expect.stringContaining(`${path}: cannot read`)])
  })

  it.concurrent('names the field at fault when a toolService block has an unknown field', async ({ expect }) => {
    const path = write(
      'unknown-field.yml',
      [
        'service: bad',
        'functions:',
        '  echo:',
        '    handler: functions/echo.handler',
        '    toolService:',
        '      id: echo-service',
        '      topic: echo',
        '      colour: blue',
        '      tools:',
        '        - name: echo',
        '          description: Echo',
        '',
      ].join('\n'),
    )
    const run = await toolbridge('-c', path, 'descriptors')
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    expect(run.stdout).toBe('')
    expect(lines(run.stderr)).toEqual([expect.stringMatching(/functions\.echo\.toolService: unknown field "colour"/)])
  })
})

describe('toolbridge descriptors', () => {
  const joke = {
    id: 'joke-service',
    'request-queue': 'request:tg:joke',
    'response-queue': 'response:tg:joke',
    'config-params': [{ name: 'style', required: false }],
  }
  const story = {
    id: 'story-service',
    'request-queue': 'request:tg:story',
    'response-queue': 'response:tg:story',
    'config-params': [{ name: 'pace', required: false }],
  }
  const tellStory = {
    type: 'tool-service',
    name: 'tell-story',
    description: 'Tell a short story about a hero, streamed sentence by sentence',
    service: 'story-service',
    pace: 20,
    arguments: [
      { name: 'hero', type: 'string', description: 'Who the story is about' },
      { name: 'place', type: 'string', description: 'Where it happens' },
      { name: 'sentences', type: 'integer', description: 'How many sentences (1-100, default 5)' },
    ],
  }

  it.concurrent('prints the tool-service and tool objects of serverless.yml as JSON', async ({ expect }) => {
    const run = await toolbridge('descriptors')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    const printed = JSON.parse(run.stdout) as { 'tool-service': Record<string, unknown>; tool: Record<string, unknown> }
    expect(Object.keys(printed)).toEqual(['tool-service', 'tool'])
    expect(printed['tool-service']['joke-service']).toEqual(joke)
    expect(printed['tool-service']['story-service']).toEqual(story)
    expect(printed.tool['tell-joke']).toEqual(TELL_JOKE_TOOL)
    expect(printed.tool['tell-story']).toEqual(tellStory)
    // Every other entry has the same shape (the calculator is someone else's work in progress).
    for (const [id, descriptor] of Object.entries(printed['tool-service'])) {
      expect(descriptor).toEqual({
        id,
        'request-queue': expect.any(String),
        'response-queue': expect.any(String),
        'config-params': expect.any(Array),
      })
    }
    for (const [name, descriptor] of Object.entries(printed.tool)) {
      expect(descriptor).toMatchObject({
        type: 'tool-service',
        name,
        description: expect.any(String),
        service: expect.any(String),
        arguments: expect.any(Array),
      })
    }
  })

  it.concurrent('spells generated queues as Pulsar URIs with --queues pulsar', async ({ expect }) => {
    const run = await toolbridge('descriptors', '--queues', 'pulsar')
    expect(run).toMatchObject({ code: 0, stderr: '' })
    const printed = JSON.parse(run.stdout) as { 'tool-service': Record<string, Record<string, unknown>> }
    expect(printed['tool-service']['joke-service']).toEqual({
      ...joke,
      'request-queue': 'non-persistent://tg/request/joke',
      'response-queue': 'non-persistent://tg/response/joke',
    })
  })
})

describe('toolbridge start with the example functions', () => {
  let server: StartedBridge
  let url: string
  beforeAll(async () => {
    server = startServer()
    url = await server.url()
  })
  afterAll(async () => {
    await server.stop()
  })

  it('lists the tools with their arguments on GET /tools', async () => {
    const res = await fetch(`${url}/tools`)
    expect(res.status).toBe(200)
    const { tools } = (await res.json()) as { tools: { name: string; arguments: unknown[] }[] }
    const byName = new Map(tools.map((tool) => [tool.name, tool]))
    expect(byName.get('tell-joke')).toMatchObject({
      type: 'tool-service',
      service: 'joke-service',
      style: 'pun',
      arguments: [{ name: 'topic', type: 'string', description: 'The topic for the joke' }],
    })
    expect(byName.get('tell-story')?.arguments.map((a) => (a as { name: string }).name)).toEqual([
      'hero',
      'place',
      'sentences',
    ])
  })

  it('answers POST /tools/tell-joke with NDJSON ending in the response', async () => {
    const res = await post(`${url}/tools/tell-joke`, { arguments: { topic: 'cats' }, user: 'alice' })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/x-ndjson')
    const messages = ndjson(await res.text())
    expect(messages.at(-1)).toEqual({
      response: "Hey alice! Here's a pun for you:\n\nWhat do you call a pile of cats? A meowtain.",
    })
  })

  it('`invoke --url` prints its streamed story, and its error answers as invoke does', async () => {
    const story = await toolbridge(...ADA_STORY, '--arg', 'sentences=2', '--stream', '--url', url)
    expect(story).toMatchObject({ code: 0, stderr: `toolbridge: via ${url}\n` })
    expect(story.stdout).toBe(
      'Once upon a time, Ada lived in a small town by the sea. Every morning, Ada looked at the horizon and wondered what lay beyond it.\n',
    )
    const missing = await toolbridge('invoke', 'tell-joke', '--url', url)
    expect(missing.code).toBe(1)
    expect(lines(missing.stderr)).toEqual([
      `toolbridge: via ${url}`,
      expect.stringMatching(/^error: invalid-arguments: .*"topic" is required/),
    ])
  })

  it('streams POST /tools/tell-story as chunk lines, then the whole response', async () => {
    const res = await post(`${url}/tools/tell-story`, { arguments: { hero: 'Ada' } })
    expect(res.status).toBe(200)
    const messages = ndjson(await res.text())
    const chunks = messages.slice(0, -1)
    expect(chunks.length).toBe(5)
    for (const chunk of chunks) expect(Object.keys(chunk)).toEqual(['chunk'])
    expect(chunks[0]).toEqual({ chunk: 'Once upon a time, Ada lived in a small town by the sea.' })
    expect(messages.at(-1)).toEqual({ response: chunks.map((c) => c.chunk).join('') })
  })

  it('answers an unknown tool with 404', async () => {
    const res = await post(`${url}/tools/no-such-tool`, { arguments: {} })
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining('no-such-tool') } })
  })

  it('answers invalid arguments with 422 and the error as JSON', async () => {
    const res = await post(`${url}/tools/tell-joke`, { arguments: { topic: 42 } })
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(await res.json()).toEqual({
      error: { type: 'invalid-arguments', message: expect.stringContaining('"topic"') },
    })
  })
})

describe('toolbridge start, stopped by SIGTERM', () => {
  it('finishes a request in flight, then exits 0', async () => {
    const server = startServer(['-c', FAULTS_YML])
    try {
      const url = await server.url()
      const res = await post(`${url}/tools/slow-stream`, { arguments: { ms: 1000 } })
      expect(res.status).toBe(200)
      // Read up to the first chunk: from then on the request is in the bridge's hands.
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
      let received = ''
      while (!received.includes('\n')) {
        const { value, done } = await reader.read()
        if (done) break
        received += value
      }
      expect(ndjson(received)).toEqual([{ chunk: 'started' }])

      server.child.kill('SIGTERM')
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        received += value
      }
      expect(ndjson(received)).toEqual([{ chunk: 'started' }, { chunk: ' done' }, { response: 'started done' }])
      expect(await server.exited).toEqual({ code: 0, signal: null })
      expect(server.stdout).toContain('toolbridge: SIGTERM, finishing 1 request(s) in flight')
    } finally {
      await server.stop()
    }
  })
})

/** Reads an NDJSON answer up to its first line that matches `until`; returns what was read and the reader. */
async function readUntil(res: Response, until: (received: string) => boolean) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let received = ''
  while (!until(received)) {
    const { value, done } = await reader.read()
    if (done) break
    received += value
  }
  const rest = async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return received
      received += value
    }
  }
  return { received, rest }
}

describe('toolbridge start, shutting down with HTTP callers', () => {
  it('answers calls still running when --drain-timeout runs out with "unavailable", over /tools and /mcp, then exits 0', async () => {
    const server = startServer(['-c', FAULTS_YML], ['--drain-timeout', '1'])
    try {
      const url = await server.url()
      // Both run longer than the drain; their own timeout (10 s) and the gateway's margin would come long after.
      const res = await post(`${url}/tools/slow-stream`, { arguments: { ms: 8000 } })
      const mcpAnswer = fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'slow-stream', arguments: { ms: 8000 } },
        }),
      }).then((answer) => answer.text())
      const call = await readUntil(res, (received) => received.includes('\n'))
      // Both requests are in the bridge's hands before the drain begins.
      while (
        !(await fetch(`${url}/metrics`).then((m) => m.text())).includes(
          'toolbridge_requests_in_flight{service="slow-stream-service"} 2',
        )
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      server.child.kill('SIGTERM')
      const lines = ndjson(await call.rest())
      expect(lines[0]).toEqual({ chunk: 'started' })
      expect(lines.at(-1)).toEqual({
        error: { type: 'unavailable', message: expect.stringContaining('stopped before this call was answered') },
      })
      const mcpText = await mcpAnswer
      expect(mcpText).toContain('"isError":true')
      expect(mcpText).toContain('stopped before this call was answered')
      expect(await server.exited).toEqual({ code: 0, signal: null })
    } finally {
      await server.stop()
    }
  })

  it('answers a new call during the drain with 503 "unavailable" and Retry-After, and finishes the one in flight', async () => {
    const server = startServer(['-c', FAULTS_YML], ['--drain-timeout', '30'])
    try {
      const url = await server.url()
      const res = await post(`${url}/tools/slow-stream`, { arguments: { ms: 5000 } })
      const call = await readUntil(res, (received) => received.includes('\n'))
      server.child.kill('SIGTERM')
      while (!server.stdout.includes('toolbridge: SIGTERM')) await once(server.child.stdout, 'data')
      const late = await post(`${url}/tools/echo`, { arguments: { text: 'late' } })
      expect(late.status).toBe(503)
      expect(late.headers.get('retry-after')).toBe('1')
      expect(await late.json()).toEqual({
        error: { type: 'unavailable', message: expect.stringContaining('shutting down') },
      })
      expect(ndjson(await call.rest())).toEqual([
        { chunk: 'started' },
        { chunk: ' done' },
        { response: 'started done' },
      ])
      expect(await server.exited).toEqual({ code: 0, signal: null })
    } finally {
      await server.stop()
    }
  })
})

describe('toolbridge start, when a part cannot start', () => {
  it('exits 1 with one line when its HTTP port is taken, having started nothing else', async () => {
    const holder = createTcpServer()
    holder.listen(0, '127.0.0.1')
    await once(holder, 'listening')
    const { port } = holder.address() as { port: number }
    try {
      const run = await toolbridge('start', '--port', String(port))
      expect(run).toMatchObject({ code: 1, stdout: '' })
      expect(lines(run.stderr)).toEqual([
        `toolbridge: HTTP port 127.0.0.1:${port} is already in use (another toolbridge start?): choose another with --port, or --port off`,
      ])
    } finally {
      holder.close()
    }
  })
})

describe('toolbridge --version and --help', () => {
  it.concurrent('prints the version of the package', async ({ expect }) => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    expect(await toolbridge('--version')).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' })
  })

  it.concurrent('lists an environment variable for every option of start', async ({ expect }) => {
    const run = await toolbridge('start', '--help')
    expect(run.code).toBe(0)
    // Each option's entry: its first line starts with "  -", continuation lines are indented further.
    const entries = run.stdout
      .split('\nOptions:\n')[1]!
      .split(/\n(?= {2}-)/)
      .map((entry) => entry.replace(/\s+/g, ' ').trim())
    const withoutEnv = entries.filter((entry) => !entry.startsWith('-h, --help') && !/\benv:? [A-Z_]+/.test(entry))
    expect(withoutEnv).toEqual([])
    expect(entries.length).toBeGreaterThan(20)
  })
})

describe('toolbridge and Lambda settings', () => {
  it.concurrent('answers at once, without retrying, when the bridge has no AWS region', async ({ expect }) => {
    const noAws = {
      AWS_REGION: '',
      AWS_DEFAULT_REGION: '',
      AWS_PROFILE: '',
      AWS_CONFIG_FILE: '/nonexistent',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
      AWS_EC2_METADATA_DISABLED: 'true',
    }
    const run = await toolbridgeWith(noAws, 'invoke', 'tell-joke', '--arg', 'topic=cats', '--invoker', 'lambda')
    expect(run.code).toBe(1)
    expect(lines(run.stderr).at(-1)).toMatch(
      /^error: unavailable: calling "toolbridge-joke" on AWS Lambda: the bridge's AWS configuration is incomplete: Region .* \(set AWS_REGION and credentials, or --lambda-endpoint for a local Lambda\)$/,
    )
  })

  it('check does not count a function as missing where the endpoint has no GetFunction (serverless-offline)', async () => {
    const offlineLike = createHttpServer(
      (_req, res) => void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}'),
    )
    offlineLike.listen(0, '127.0.0.1')
    await once(offlineLike, 'listening')
    try {
      const { port } = offlineLike.address() as { port: number }
      const run = await toolbridge('check', '--invoker', 'lambda', '--lambda-endpoint', `http://127.0.0.1:${port}`)
      expect(run).toMatchObject({ code: 0, stderr: '' })
      expect(lines(run.stdout)).toContain(
        'ok   joke-service  toolbridge-joke: not checked: this Lambda endpoint has no GetFunction API (serverless-offline has none); the first call will tell',
      )
    } finally {
      offlineLike.close()
    }
  })
})

/**
 * `toolbridge dev` over HTTP, with real worker threads and files edited on
 * disk: what a call in flight sees when its function changes, a changed or
 * broken serverless.yml, a caller that goes away mid-stream, and the token.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { addFunction } from '../../bridge/cli/init.ts'
import { startDev, type DevSession } from '../../bridge/dev/dev-session.ts'
import { watchProject } from '../../bridge/dev/project-watcher.ts'
import { syntaxPlace } from '../../bridge/dev/syntax-place.ts'
import { ConsoleFeed, type CodeStatus } from '../../bridge/http/console/console-feed.ts'
import type { LoggedRequest } from '../../bridge/http/console/request-log.ts'
import { REQUEST_ID_HEADER } from '../../bridge/http/tool-call.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime } from '../../bridge/runtime.ts'
import { silentLogger } from '../../bridge/support/logger.ts'
import { encodeResponse, finalResponse } from '../../shared/protocol.ts'

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'dev-project')

let dir = ''
let session: DevSession | undefined

async function start(flags: { httpToken?: string } = {}): Promise<DevSession> {
  dir = mkdtempSync(join(tmpdir(), 'toolbridge-dev-'))
  cpSync(FIXTURE, dir, { recursive: true })
  const settings = { ...resolveSettings({ port: '0', invoker: 'worker-threads', ...flags }, {}), broker: undefined }
  session = await startDev(join(dir, 'serverless.yml'), settings, { logger: silentLogger, say: () => {} })
  return session
}

afterEach(async () => {
  await session?.stop()
  session = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
  dir = ''
})

/** The next code status the session reports. */
const nextStatus = (s: DevSession) =>
  new Promise<CodeStatus>((resolve) => {
    const stop = s.feed.onStatus((status) => {
      stop()
      resolve(status)
    })
  })

/** The first code status from now on that `matches`. */
const statusMatching = (s: DevSession, matches: (status: CodeStatus) => boolean) =>
  new Promise<CodeStatus>((resolve) => {
    const stop = s.feed.onStatus((status) => {
      if (!matches(status)) return
      stop()
      resolve(status)
    })
  })

async function call(s: DevSession, tool: string, args: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/tools/${tool}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ arguments: args }),
  })
  return {
    status: res.status,
    lines: (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  }
}

describe('toolbridge dev', () => {
  it('lets a call in flight finish on the old code while the next call gets the new', async () => {
    const s = await start()
    // A streamed story of 20 words takes about 3 s: the edit lands in the middle of it.
    const story = join(dir, 'story.mjs')
    let answered = false
    const inFlight = call(s, 'story', { words: 20 }).finally(() => (answered = true))
    await new Promise((resolve) => setTimeout(resolve, 300))
    const reloaded = nextStatus(s)
    writeFileSync(story, readFileSync(story, 'utf8').replace('`word', '`new'))
    expect((await reloaded).message).toMatch(/^reloaded story \(story\.mjs changed\)$/)
    expect(answered).toBe(false)
    const old = await inFlight
    const words = Array.from({ length: 20 }, (_, i) => `word${i + 1} `).join('')
    expect(old.lines.at(-1)).toEqual({ response: words })
    const fresh = await call(s, 'story', { words: 2 })
    expect(fresh.lines.at(-1)).toEqual({ response: 'new1 new2 ' })
  })

  it('shows a broken serverless.yml with its line and serves on; a good one restarts the bridge with its tools', async () => {
    const s = await start()
    const config = join(dir, 'serverless.yml')
    const good = readFileSync(config, 'utf8')
    let status = nextStatus(s)
    writeFileSync(config, good.replace('  echo:\n', '  echo:\n   bad: [\n'))
    const broken = await status
    expect(broken).toMatchObject({ state: 'broken', file: 'serverless.yml' })
    expect(broken.line).toBeGreaterThan(0)
    expect(broken.message).toMatch(/invalid YAML.*still serving the last good serverless\.yml$/)
    expect((await call(s, 'echo', { text: 'a' })).lines).toEqual([{ response: 'v1: a' }])

    status = nextStatus(s)
    writeFileSync(config, good.replaceAll('name: echo\n', 'name: echo2\n'))
    expect(await status).toMatchObject({ state: 'ok', message: 'serverless.yml changed: restarted with 2 tools' })
    expect((await call(s, 'echo2', { text: 'b' })).lines).toEqual([{ response: 'v1: b' }])
    expect((await call(s, 'echo', { text: 'b' })).status).toBe(404)
    // The log goes on across the restart.
    expect(s.feed.log.entries().map((e) => e.tool)).toEqual(['echo', 'echo2'])
  })

  it('serves a function that toolbridge add function wrote while it runs, the old tools too', async () => {
    const s = await start()
    const restarted = statusMatching(s, (status) => status.message.startsWith('serverless.yml changed: restarted'))
    addFunction({ config: join(dir, 'serverless.yml'), name: 'weather', language: undefined })
    expect(await restarted).toMatchObject({ state: 'ok', message: 'serverless.yml changed: restarted with 3 tools' })
    // Served (its handler imports the toolbridge package, which this fixture does not install, so it is not called).
    const listed = (await (await fetch(`${s.url}/tools`)).json()) as { tools: { name: string }[] }
    expect(listed.tools.map((tool) => tool.name)).toContain('weather')
    expect((await call(s, 'echo', { text: 'a' })).lines).toEqual([{ response: 'v1: a' }])
  })

  it('finishes and logs a streamed call whose caller went away mid-stream', async () => {
    const s = await start()
    const aborted = new AbortController()
    const res = await fetch(`${s.url}/tools/story`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { words: 4 } }),
      signal: aborted.signal,
    })
    const reader = res.body!.getReader()
    await reader.read() // the first chunk is here
    aborted.abort()
    const logged = await new Promise((resolve) => s.feed.log.subscribe(resolve))
    expect(logged).toMatchObject({ tool: 'story', outcome: 'ok' })
  })

  it("tells each caller its request's id, by which the console finds the bridge's timing and size of the call", async () => {
    const s = await start()
    const reported = (id: string) =>
      new Promise<LoggedRequest>((resolve) => {
        const found = s.feed.log.entries().find((e) => e.id === id)
        if (found) return resolve(found)
        const stop = s.feed.log.subscribe((e) => {
          if (e.id !== id) return
          stop()
          resolve(e)
        })
      })
    const post = (tool: string, args: Record<string, unknown>) =>
      fetch(`${s.url}/tools/${tool}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ arguments: args }),
      })
    const ok = await post('echo', { text: 'hi' })
    await ok.text()
    const id = ok.headers.get(REQUEST_ID_HEADER)!
    expect(id).toMatch(/^[0-9a-f-]{36}\.\d+\.\d+$/)
    const entry = await reported(id)
    expect(entry).toMatchObject({ tool: 'echo', outcome: 'ok' })
    expect(entry.bytes).toBe(encodeResponse(finalResponse('v1: hi')).byteLength)
    expect(entry.queueMs).toBeGreaterThanOrEqual(0)
    expect(entry.invokeMs).toBeLessThanOrEqual(entry.ms)
    // An error the function answers (before any chunk) carries the id too.
    const refused = await post('story', { words: 0 })
    expect(refused.status).toBe(502)
    const refusedId = refused.headers.get(REQUEST_ID_HEADER)!
    expect(refusedId).not.toBe(id)
    await expect(reported(refusedId)).resolves.toMatchObject({ tool: 'story', outcome: 'tool-service-error' })
    // Arguments the gateway refuses never reach the broker: no id.
    const invalid = await post('echo', {})
    expect(invalid.status).toBe(422)
    expect(invalid.headers.has(REQUEST_ID_HEADER)).toBe(false)
  })

  it('keeps the console data behind --http-token, while the page itself holds none', async () => {
    const s = await start({ httpToken: 'sesame' })
    const page = await fetch(`${s.url}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect((await fetch(`${s.url}/console/api/tools`)).status).toBe(401)
    expect((await fetch(`${s.url}/console/api/events`)).status).toBe(401)
    const tools = await fetch(`${s.url}/console/api/tools`, { headers: { authorization: 'Bearer sesame' } })
    const body = (await tools.json()) as { services: { tools: { name: string; mcp: unknown }[] }[] }
    expect(body.services.flatMap((svc) => svc.tools.map((t) => t.name))).toEqual(['echo', 'story'])
    expect(body.services[0]!.tools[0]!.mcp).toEqual({
      name: 'echo',
      description: '<img src=x onerror="window.__xss=1">Echo <b>back</b>',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', description: 'What to echo' } },
        required: ['text'],
      },
    })
  })
})

describe('syntaxPlace', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'toolbridge-syntax-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it('finds the line of a JavaScript syntax error with node --check, skipping files that parse and TypeScript', async () => {
    const good = join(scratch, 'good.mjs')
    const bad = join(scratch, 'bad.mjs')
    const ts = join(scratch, 'types.ts')
    writeFileSync(good, 'export const a = 1\n')
    writeFileSync(bad, 'export const a = 1\n\nexport const b = (\n')
    writeFileSync(ts, 'export const c: number = (\n')
    await expect(syntaxPlace([ts, good, bad])).resolves.toEqual({ file: bad, line: 4 })
    await expect(syntaxPlace([good, ts])).resolves.toBeUndefined()
  })
})

describe('watchProject', () => {
  it('reports changes in the project and in folders made later, never in node_modules or dot folders', async () => {
    const root = mkdtempSync(join(tmpdir(), 'toolbridge-watch-'))
    mkdirSync(join(root, 'functions', 'a'), { recursive: true })
    mkdirSync(join(root, 'node_modules', 'pkg'), { recursive: true })
    mkdirSync(join(root, '.git'))
    const seen = new Set<string>()
    const watcher = watchProject(
      root,
      (file) => seen.add(relative(root, file)),
      (err) => {
        throw err
      },
    )
    const settle = () => new Promise((resolve) => setTimeout(resolve, 200))
    try {
      writeFileSync(join(root, 'serverless.yml'), 'x')
      writeFileSync(join(root, 'functions', 'a', 'handler.ts'), 'x')
      writeFileSync(join(root, 'node_modules', 'pkg', 'index.js'), 'x')
      writeFileSync(join(root, '.git', 'HEAD'), 'x')
      mkdirSync(join(root, 'lib'))
      await settle()
      writeFileSync(join(root, 'lib', 'util.ts'), 'x')
      await settle()
      expect(seen).toContain('serverless.yml')
      expect(seen).toContain(join('functions', 'a', 'handler.ts'))
      expect(seen).toContain(join('lib', 'util.ts'))
      expect([...seen].filter((f) => f.includes('node_modules') || f.startsWith('.'))).toEqual([])
    } finally {
      watcher.close()
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('toolbridge start --console', () => {
  it('serves the console only when asked, its own calls accepted from its origin', async () => {
    const project = loadProject(join(FIXTURE, 'serverless.yml'))
    const settings = resolveSettings({ port: '0', invoker: 'worker-threads' }, {})
    const plain = await startRuntime(project, settings)
    try {
      expect((await fetch(`${plain.gateway!.url}/`)).status).toBe(404)
      expect((await fetch(`${plain.gateway!.url}/console/api/tools`)).status).toBe(404)
    } finally {
      await plain.stop()
    }
    const withConsole = await startRuntime(project, settings, { console: new ConsoleFeed() })
    try {
      const url = withConsole.gateway!.url
      const page = await fetch(`${url}/`)
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(await page.text()).toContain('<script type="module" src="/console/app.js"></script>')
      const own = await fetch(`${url}/tools/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url },
        body: JSON.stringify({ arguments: { text: 'hi' } }),
      })
      expect(await own.text()).toBe('{"response":"v1: hi"}\n')
      const other = await fetch(`${url}/tools/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'https://elsewhere.example' },
        body: JSON.stringify({ arguments: { text: 'hi' } }),
      })
      expect(other.status).toBe(403)
    } finally {
      await withConsole.stop()
    }
  })
})

/**
 * `toolbridge dev` in a real browser: headless Chromium opens the console,
 * fills and submits forms, reads streamed answers and the live log, while
 * the test edits the project's files on disk.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDev, type DevSession } from '../../bridge/dev/dev-session.ts'
import { MAX_EVENT_STREAMS } from '../../bridge/http/console/event-streams.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { silentLogger } from '../../bridge/support/logger.ts'
import { chunkResponse, encodeResponse, finalResponse } from '../../shared/protocol.ts'
import { chromiumInstalled, launchChromium } from '../support/chromium.ts'

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'dev-project')

describe.skipIf(!chromiumInstalled)('the web console of toolbridge dev, in Chromium', () => {
  let dir: string
  let session: DevSession
  let browser: Browser
  let page: Page
  const said: string[] = []

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-dev-'))
    cpSync(FIXTURE, dir, { recursive: true })
    const settings = { ...resolveSettings({ port: '0', invoker: 'worker-threads' }, {}), broker: undefined }
    session = await startDev(join(dir, 'serverless.yml'), settings, {
      logger: silentLogger,
      say: (line) => said.push(line),
    })
    // A site elsewhere, as a browser sees one: its own name (here served by a server on this machine).
    browser = await launchChromium(['--host-resolver-rules=MAP elsewhere.example 127.0.0.1'])
    page = await browser.newPage()
    await page.goto(`${session.url}/`)
    await page.locator('body[data-ready="true"]').waitFor()
  })

  afterAll(async () => {
    await browser?.close()
    await session?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const tool = (name: string) => page.locator(`details.tool[data-tool="${name}"]`)

  async function call(name: string, fill: Record<string, string>, button = 'Call') {
    const section = tool(name)
    if (!(await section.evaluate((d) => (d as HTMLDetailsElement).open)))
      await section.locator('summary').first().click()
    for (const [arg, value] of Object.entries(fill)) await section.locator(`[name="${arg}"]`).fill(value)
    await section.getByRole('button', { name: button, exact: true }).click()
    return section.locator('.answer')
  }

  it('lists the tools by service, markup in a description shown as text and never run', async () => {
    await expect(page.locator('section.service h3').allTextContents()).resolves.toEqual([
      'echo-service',
      'story-service',
    ])
    const summary = tool('echo').locator('summary').first()
    await expect(summary.textContent()).resolves.toContain('<img src=x onerror="window.__xss=1">Echo <b>back</b>')
    await expect(page.evaluate(() => (window as { __xss?: number }).__xss)).resolves.toBeUndefined()
    await expect(page.locator('img').count()).resolves.toBe(0)
  })

  /** The parts of a call's time and its size, as the answer shows them once the bridge has reported the call. */
  async function split(answer: Locator) {
    await answer.locator('dl.split dd[data-part="size"]').waitFor()
    const parts = await answer
      .locator('dl.split dd')
      .evaluateAll((dds) => Object.fromEntries(dds.map((dd) => [dd.getAttribute('data-part'), dd.textContent])))
    const labels = await answer.locator('dl.split dt').allTextContents()
    return { parts, labels, ms: (part: string) => Number(/^([\d.]+) ms$/.exec(parts[part] ?? '')?.[1]) }
  }

  it('fills and submits a form; the answer with where its time went and its size, and the log row appear', async () => {
    const text = '<script>window.__xss=2</script>hello'
    const answer = await call('echo', { text })
    await answer.locator('.timing', { hasText: 'ms total' }).waitFor()
    await expect(answer.locator('pre.chunks').textContent()).resolves.toBe(`v1: ${text}`)
    await expect(answer.getAttribute('class')).resolves.toBe('answer ok')
    await expect(page.evaluate(() => (window as { __xss?: number }).__xss)).resolves.toBeUndefined()
    const { parts, labels, ms } = await split(answer)
    expect(labels).toEqual(['Queue', 'Invoke', 'In the bridge', 'Total', 'Answer'])
    // The bytes the bridge published: its one answer message.
    const bytes = encodeResponse(finalResponse(`v1: ${text}`)).byteLength
    expect(parts.size).toBe(`${bytes} B`)
    for (const part of ['queue', 'invoke', 'bridge', 'total']) expect(ms(part)).toBeGreaterThanOrEqual(0)
    expect(ms('invoke')).toBeLessThanOrEqual(ms('bridge'))
    const row = page.locator('#log tbody tr[data-tool="echo"][data-outcome="ok"]').first()
    await row.waitFor()
    await expect(row.locator('td').nth(4).textContent()).resolves.toBe(`${bytes} B`)
    await expect(row.locator('td').nth(3).getAttribute('title')).resolves.toMatch(/^queue [\d.]+ ms, invoke [\d.]+ ms$/)
  })

  it('shows a streamed answer chunk by chunk', async () => {
    const answer = await call('story', { words: '6' }, 'Call streaming')
    const chunks = answer.locator('pre.chunks')
    // The story sends a word every 150 ms: part of it is on screen before the rest has come.
    await chunks.filter({ hasText: 'word1' }).waitFor()
    const early = await chunks.textContent()
    expect(early).not.toContain('word6')
    await answer.locator('.timing', { hasText: 'ms total' }).waitFor()
    await expect(chunks.textContent()).resolves.toBe('word1 word2 word3 word4 word5 word6 ')
    await expect(answer.locator('.timing').textContent()).resolves.toMatch(/first chunk \d+ ms, 6 chunks/)
    const { ms, parts } = await split(answer)
    // The story waits 150 ms before each word after the first: the function ran at least 750 ms, within the bridge's time.
    expect(ms('invoke')).toBeGreaterThanOrEqual(750)
    expect(ms('bridge')).toBeGreaterThanOrEqual(ms('invoke'))
    expect(ms('total')).toBeGreaterThanOrEqual(ms('invoke'))
    // Six chunks and the end, each with its JSON envelope.
    const published = [1, 2, 3, 4, 5, 6].map((i) => encodeResponse(chunkResponse(`word${i} `)).byteLength)
    const bytes = published.reduce((a, b) => a + b, encodeResponse(finalResponse('')).byteLength)
    expect(parts.size).toBe(`${bytes} B`)
  })

  it('shows the validation error of a missing required argument', async () => {
    const answer = await call('echo', { text: '' })
    await expect(answer.locator('.error-text').textContent()).resolves.toMatch(/^invalid-arguments: .*text/)
    // Refused by the gateway before it reached the broker: the bridge has nothing to report.
    await expect(answer.locator('dl.split').isHidden()).resolves.toBe(true)
    // Yet the refusal is a row of the log and an error in the tool's chart.
    await page.locator('#log tbody tr[data-tool="echo"][data-outcome="invalid-arguments"]').waitFor()
    await page.locator('.chart[data-tool="echo"] p', { hasText: / [1-9]\d* errors;/ }).waitFor()
  })

  it('answers the next call with a function edited on disk, and keeps the old code serving through a broken edit', async () => {
    const words = join(dir, 'words.mjs')
    writeFileSync(words, "export const greeting = 'v2'\n")
    await page.locator('#status', { hasText: 'reloaded echo' }).waitFor()
    let answer = await call('echo', { text: 'again' })
    await answer.locator('pre.chunks', { hasText: 'v2: again' }).waitFor()

    const echo = join(dir, 'echo.mjs')
    const good = readFileSync(echo, 'utf8')
    writeFileSync(echo, `${good}\nexport const broken = (\n`)
    const status = page.locator('#status.broken')
    await status.waitFor()
    await expect(status.textContent()).resolves.toMatch(/^echo\.mjs:\d+: .*echo serves on with its last good code/)
    expect(said.some((line) => /echo\.mjs:\d+: /.test(line))).toBe(true)
    answer = await call('echo', { text: 'still' })
    await answer.locator('pre.chunks', { hasText: 'v2: still' }).waitFor()

    writeFileSync(echo, good.replace('greeting}:', 'greeting}!:'))
    await page.locator('#status:not(.broken)', { hasText: 'reloaded echo' }).waitFor()
    answer = await call('echo', { text: 'fixed' })
    await answer.locator('pre.chunks', { hasText: 'v2!: fixed' }).waitFor()
  })

  it('stops rendering an endless stream at its bound and says so; the call goes on to its end and is logged', async () => {
    const answer = await call('story', { words: '100', size: '5000' }, 'Call streaming')
    await answer.locator('.cut').waitFor()
    await answer.locator('.timing', { hasText: 'ms total' }).waitFor({ timeout: 60_000 })
    const shown = (await answer.locator('pre.chunks').textContent()) ?? ''
    expect(shown.length).toBeLessThanOrEqual(200_000)
    await expect(answer.locator('.timing').textContent()).resolves.toMatch(/, 500000 characters$/)
    await expect(answer.getAttribute('class')).resolves.toBe('answer ok')
  })

  it('a page on another origin cannot run a tool through the gateway', async () => {
    const before = await page.locator('#log tbody tr').count()
    const other = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p>elsewhere</p>'),
    )
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    try {
      const elsewhere = await browser.newPage()
      await elsewhere.goto(`http://elsewhere.example:${(other.address() as AddressInfo).port}/`)
      // A "simple" cross-site POST: the browser sends it without asking first, and would not show the answer.
      const status = await elsewhere.evaluate(
        (url) =>
          fetch(`${url}/tools/echo`, { method: 'POST', mode: 'no-cors', body: '{"arguments":{"text":"pwned"}}' }).then(
            () => 'sent',
          ),
        session.url,
      )
      expect(status).toBe('sent')
      const read = await elsewhere.evaluate(
        (url) =>
          fetch(`${url}/console/api/tools`).then(
            (r) => r.status,
            () => 'blocked',
          ),
        session.url,
      )
      expect(read).toBe('blocked') // no CORS headers: the page cannot read the console's data
      await elsewhere.close()
    } finally {
      other.close()
    }
    // Nothing ran: the log has no new row.
    await new Promise((resolve) => setTimeout(resolve, 300))
    await expect(page.locator('#log tbody tr').count()).resolves.toBe(before)
  })

  it('filters the log by tool and outcome', async () => {
    // Past its 1-100 bound the story's own check refuses: an error answered by the function, so logged.
    const answer = await call('story', { words: '0' })
    await answer.locator('.error-text').waitFor()
    await page.locator('#filter-outcome option[value="tool-service-error"]').waitFor({ state: 'attached' })
    await page.selectOption('#filter-outcome', 'tool-service-error')
    const rows = page.locator('#log tbody tr')
    await expect(rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-outcome')))).resolves.toEqual([
      'tool-service-error',
    ])
    await page.selectOption('#filter-outcome', '')
    await page.selectOption('#filter-tool', 'story')
    // The streamed story, the long one past the render bound, and the refused one.
    await expect(rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-tool')))).resolves.toEqual([
      'story',
      'story',
      'story',
    ])
    await page.selectOption('#filter-tool', '')
  })

  /** A call from outside the page, as another client's would be. */
  const callFromOutside = async (text: string) => {
    const res = await fetch(`${session.url}/tools/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { text } }),
    })
    expect(res.status).toBe(200)
    await res.text()
  }
  const loggedTools = () =>
    page.locator('#log tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-tool')))

  it('follows the log again from where it stopped when the bridge closes its stream, each call once', async () => {
    const before = (await loggedTools()).length
    session.feed.streams.closeAll()
    // Logged while the page has no stream: the page's next stream starts with it.
    await callFromOutside('while away')
    await page.waitForFunction((n) => document.querySelectorAll('#log tbody tr').length === n, before + 1)
    await callFromOutside('after')
    await page.waitForFunction((n) => document.querySelectorAll('#log tbody tr').length === n, before + 2)
    expect(session.feed.streams.size).toBe(1)
  })

  it('with every event stream taken, keeps trying, and its log resumes once one is free; probes answer meanwhile', async () => {
    const url = new URL(session.url)
    session.feed.streams.closeAll()
    // Another client takes every stream before the page asks again.
    const taken = Array.from({ length: MAX_EVENT_STREAMS }, () => {
      const socket = connect(Number(url.port), url.hostname, () =>
        socket.write(`GET /console/api/events HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`),
      )
      socket.on('error', () => {})
      return socket
    })
    const before = (await loggedTools()).length
    try {
      for (let tries = 0; tries < 100 && session.feed.streams.size < MAX_EVENT_STREAMS; tries++)
        await new Promise((resolve) => setTimeout(resolve, 20))
      expect(session.feed.streams.size).toBe(MAX_EVENT_STREAMS)
      await callFromOutside('while full')
      await new Promise((resolve) => setTimeout(resolve, 1500)) // past one retry of the page
      expect((await loggedTools()).length).toBe(before)
      expect((await fetch(`${session.url}/healthz`)).status).toBe(200)
      expect((await fetch(`${session.url}/readyz`)).status).toBe(200)
    } finally {
      for (const socket of taken) socket.destroy()
    }
    await page.waitForFunction((n) => document.querySelectorAll('#log tbody tr').length === n, before + 1)
  })
})

describe.skipIf(!chromiumInstalled)('the web console behind --http-token, in Chromium', () => {
  let dir: string
  let session: DevSession
  let browser: Browser

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-dev-'))
    cpSync(FIXTURE, dir, { recursive: true })
    const settings = {
      ...resolveSettings({ port: '0', invoker: 'worker-threads', httpToken: 'sesame' }, {}),
      broker: undefined,
    }
    session = await startDev(join(dir, 'serverless.yml'), settings, { logger: silentLogger, say: () => {} })
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await session?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('takes the token from the address fragment, drops it from the address, and calls with it', async () => {
    const page = await browser.newPage()
    await page.goto(`${session.url}/#token=sesame`)
    await page.locator('body[data-ready="true"]').waitFor()
    expect(page.url()).toBe(`${session.url}/`)
    const echo = page.locator('details.tool[data-tool="echo"]')
    await echo.locator('summary').first().click()
    await echo.locator('[name="text"]').fill('with a token')
    await echo.getByRole('button', { name: 'Call', exact: true }).click()
    await echo.locator('pre.chunks', { hasText: 'v1: with a token' }).waitFor()
    await page.close()
  })

  it('asks for the token when it has none, and opens with the one given', async () => {
    const page = await browser.newPage()
    await page.goto(`${session.url}/`)
    const form = page.locator('#token-form')
    await form.waitFor()
    await expect(page.locator('section.service').count()).resolves.toBe(0)
    await page.locator('#token').fill('sesame')
    await form.getByRole('button', { name: 'Open' }).click()
    await page.locator('body[data-ready="true"]').waitFor()
    await expect(page.locator('section.service h3').allTextContents()).resolves.toEqual([
      'echo-service',
      'story-service',
    ])
    await page.close()
  })
})

/**
 * The web console's pictures in docs/dev-loop.md (docs/console*.png), taken the
 * way the browser tests drive it: `toolbridge dev` in this process, Debian's
 * Chromium through playwright-core. Run: node scripts/console-screenshots.ts
 *
 * 1. The example project: tools, a streamed story, a calculation, an error, the log and charts.
 * 2. A broken edit (a copy of test/fixtures/dev-project): the error with file and line, the old code answering.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { startDev } from '../bridge/dev/dev-session.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { silentLogger } from '../bridge/support/logger.ts'
import { launchChromium } from '../test/support/chromium.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const settings = { ...resolveSettings({ port: '0', invoker: 'worker-threads' }, {}), broker: undefined }
const browser = await launchChromium()

async function call(page: Page, tool: string, fill: Record<string, string>, button = 'Call') {
  const section = page.locator(`details.tool[data-tool="${tool}"]`)
  if (!(await section.evaluate((d) => (d as HTMLDetailsElement).open))) await section.locator('summary').first().click()
  for (const [name, value] of Object.entries(fill)) await section.locator(`[name="${name}"]`).fill(value)
  await section.getByRole('button', { name: button, exact: true }).click()
  await section.locator('.answer .timing', { hasText: 'ms total' }).waitFor()
  await section.locator('.answer dl.split:not([hidden])').waitFor() // where its time went, once the bridge reports it
}

async function open(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  await page.goto(`${url}/`)
  await page.locator('body[data-ready="true"]').waitFor()
  return page
}

try {
  const examples = await startDev(join(ROOT, 'serverless.yml'), settings, { logger: silentLogger, say: () => {} })
  try {
    const page = await open(examples.url)
    for (const topic of ['cats', 'music', 'programming']) await call(page, 'tell-joke', { topic })
    await call(page, 'calculate', { expression: '(1/3 + 0.25) * 12' })
    await call(page, 'calculate', { expression: '1 / 0' })
    await call(page, 'tell-story', { hero: 'Ada', place: 'a lighthouse', sentences: '4' }, 'Call streaming')
    await page.locator('details.tool[data-tool="tell-joke"]').locator('summary').first().click() // fold it
    await page.waitForTimeout(800) // the charts refresh after the last request
    await page.screenshot({ path: join(ROOT, 'docs', 'console.png'), fullPage: true })
  } finally {
    await examples.stop()
  }

  const dir = mkdtempSync(join(tmpdir(), 'toolbridge-shots-'))
  cpSync(join(ROOT, 'test', 'fixtures', 'dev-project'), dir, { recursive: true })
  const fixture = await startDev(join(dir, 'serverless.yml'), settings, { logger: silentLogger, say: () => {} })
  try {
    const page = await open(fixture.url)
    const echo = join(dir, 'echo.mjs')
    writeFileSync(echo, `${readFileSync(echo, 'utf8')}\nexport const broken = (\n`)
    await page.locator('#status.broken').waitFor()
    await call(page, 'echo', { text: 'still served by the last good code' })
    await page.locator('.chart').first().waitFor()
    await page.screenshot({ path: join(ROOT, 'docs', 'console-broken-edit.png') })
  } finally {
    await fixture.stop()
    rmSync(dir, { recursive: true, force: true })
  }
} finally {
  await browser.close()
}

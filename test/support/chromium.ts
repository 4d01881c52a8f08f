/**
 * Headless Chromium from the system's packages (Debian's `chromium`; CI's
 * .ci/run installs it), driven by playwright-core, which downloads no browser
 * of its own. Without it the browser tests skip, saying so in one line.
 */
import { existsSync } from 'node:fs'
import type { Browser } from 'playwright-core'

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const chromiumInstalled = existsSync(CHROMIUM_PATH)

if (!chromiumInstalled)
  console.log(
    `skipping the browser tests: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`,
  )

/** `args`: more of Chromium's switches (e.g. `--host-resolver-rules` for a site elsewhere). */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  const { chromium } = await import('playwright-core')
  // No sandbox: CI runs as root, where Chromium refuses its sandbox.
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox', ...args] })
}

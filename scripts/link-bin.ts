/**
 * `npm ci` in this repository runs this (the `prepare` script): it links
 * node_modules/.bin/toolbridge to the checkout's own command, so that
 * `npx toolbridge ...` works here as it does in a project that installed the
 * package (npm links the bins of dependencies only, never the project's own).
 */
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const command = join(ROOT, 'bridge', 'cli', 'toolbridge.js')
const binDir = join(ROOT, 'node_modules', '.bin')
if (existsSync(command) && existsSync(join(ROOT, 'node_modules'))) {
  mkdirSync(binDir, { recursive: true })
  const link = join(binDir, 'toolbridge')
  rmSync(link, { force: true })
  symlinkSync(join('..', '..', 'bridge', 'cli', 'toolbridge.js'), link)
}

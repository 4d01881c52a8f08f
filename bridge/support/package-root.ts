/**
 * toolbridge's own package: its version, and where its files are
 * (package.json, templates/): two folders
 * up from bridge/support/ in the clone, three from dist/bridge/support/ in the
 * installed package, whose built JavaScript sits one folder deeper.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const PACKAGE_ROOT = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../' : '../../../', import.meta.url),
)

/** The version in package.json, as `--version` and MCP's serverInfo give it. */
export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version

/**
 * Where toolbridge's own files are (package.json, templates/): two folders
 * up from bridge/support/ in the clone, three from dist/bridge/support/ in the
 * installed package, whose built JavaScript sits one folder deeper.
 */
import { fileURLToPath } from 'node:url'

export const PACKAGE_ROOT = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../' : '../../../', import.meta.url),
)

/**
 * Builds what the npm package ships (npm run build; `npm pack` runs it):
 * JavaScript and declarations in dist/, the layout of the sources kept.
 *
 * The clone runs its .ts files directly, but Node strips types only outside
 * node_modules, so an installed package needs JavaScript. tsc does both jobs
 * in one pass: `rewriteRelativeImportExtensions` turns the `.ts` import
 * specifiers into `.js`, and it writes the .d.ts files that
 * `import { defineToolService } from 'toolbridge'` is typed by. A fresh
 * dist/ keeps files of deleted sources out of the package.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
rmSync(join(ROOT, 'dist'), { recursive: true, force: true })
const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' })
// The web console's page, script and style are served as they are: tsc does not copy them.
const assets = join('bridge', 'http', 'console', 'assets')
cpSync(join(ROOT, assets), join(ROOT, 'dist', assets), { recursive: true })
process.exitCode = run.status ?? 1

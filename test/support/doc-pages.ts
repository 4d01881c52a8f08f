/**
 * The pages the documentation tests read: README.md, then every Markdown page
 * under docs/ (its subfolders too), as paths from the repository's root. The
 * link checker and the runner of marked blocks walk the same pages, so that a
 * new page is checked by both.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dirname, '..', '..')

export const DOC_PAGES: readonly string[] = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file.split('\\').join('/')}`)
    .sort(),
]

/**
 * Every relative link in README.md and the Markdown pages under docs/ (its
 * subfolders too) leads somewhere: to a file or folder of the repository,
 * and, with a `#fragment` into a Markdown page, to one of its headings (named
 * as GitHub names heading anchors). And every page of docs/ can be reached
 * from the README by following links, so none is written and then lost.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DOC_PAGES } from '../support/doc-pages.ts'

const ROOT = resolve(import.meta.dirname, '..', '..')

/** The pages a page links to, as paths from the repository's root. */
function linkedPages(page: string): string[] {
  return relativeLinks(readFileSync(join(ROOT, page), 'utf8'))
    .map((link) => link.split('#')[0]!)
    .filter((path) => path.endsWith('.md'))
    .map((path) => relative(ROOT, resolve(dirname(join(ROOT, page)), decodeURIComponent(path))))
}

/** The Markdown outside fenced code blocks, inline code spans blanked out. */
function prose(markdown: string): string[] {
  let fenced = false
  return markdown.split('\n').map((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced
      return ''
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, '``')
  })
}

/** `[text](target)` links, images included; targets with a scheme (https:, mailto:) are not files. */
function relativeLinks(markdown: string): string[] {
  const links: string[] = []
  for (const line of prose(markdown)) {
    for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push(target)
    }
  }
  return links
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

describe('links in the documentation', () => {
  it('every page in docs/ is reached from README.md by following links', () => {
    const reached = new Set(['README.md'])
    const toVisit = ['README.md']
    for (let page = toVisit.pop(); page !== undefined; page = toVisit.pop()) {
      for (const linked of linkedPages(page)) {
        if (reached.has(linked) || !existsSync(join(ROOT, linked))) continue
        reached.add(linked)
        toVisit.push(linked)
      }
    }
    expect(DOC_PAGES.filter((page) => !reached.has(page))).toStrictEqual([])
    expect(linkedPages('README.md')).toContain('docs/README.md')
  })

  it('names heading anchors as GitHub does', () => {
    const anchors = headingAnchors(
      '# Queue names\n## How each broker lays a queue out\n### Request: `ToolServiceRequest`\n## Queue names\n```\n# not a heading\n```\n',
    )
    expect([...anchors]).toStrictEqual([
      'queue-names',
      'how-each-broker-lays-a-queue-out',
      'request-toolservicerequest',
      'queue-names-1',
    ])
  })

  for (const page of DOC_PAGES) {
    it(`${page}: every relative link points at something that exists`, () => {
      const source = join(ROOT, page)
      const broken: string[] = []
      for (const link of relativeLinks(readFileSync(source, 'utf8'))) {
        const [path = '', fragment] = link.split('#')
        const target = path === '' ? source : resolve(dirname(source), decodeURIComponent(path))
        if (!target.startsWith(ROOT) || !existsSync(target)) {
          broken.push(`${link}: no ${relative(ROOT, target)}`)
          continue
        }
        if (
          fragment !== undefined &&
          target.endsWith('.md') &&
          !headingAnchors(readFileSync(target, 'utf8')).has(fragment)
        ) {
          broken.push(`${link}: no heading #${fragment} in ${relative(ROOT, target)}`)
        }
      }
      expect(broken).toStrictEqual([])
    })
  }
})

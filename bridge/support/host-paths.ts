/**
 * Error messages go on the wire to whoever sent the request: they should not
 * tell where things live on the bridge's host. A function's error (a failed
 * import, a file it could not read) often names absolute paths; these are
 * shown relative to the project, or without the host's own directories.
 */
import { homedir, tmpdir } from 'node:os'
import { sep } from 'node:path'
import { pathToFileURL } from 'node:url'

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * A function that rewrites `projectDir/x` as `x`, and the home, temporary
 * and working directories (also as file:// URLs) as `~`, `<tmp>`, `.`.
 */
export function createPathScrubber(projectDir: string): (message: string) => string {
  const roots: [string, string][] = [
    [projectDir, ''],
    [process.cwd(), ''],
    [tmpdir(), '<tmp>' + sep],
    [homedir(), '~' + sep],
  ]
  const replacements: [RegExp, string][] = []
  // Longest first: the project directory may be inside the home directory.
  for (const [root, shown] of roots.filter(([root]) => root.length > 1).sort((a, b) => b[0].length - a[0].length)) {
    const withSep = root.endsWith(sep) ? root : root + sep
    for (const form of [pathToFileURL(withSep).href, withSep])
      replacements.push([new RegExp(escapeRegExp(form), 'g'), shown])
  }
  return (message) => {
    let scrubbed = message
    for (const [pattern, shown] of replacements) scrubbed = scrubbed.replace(pattern, shown)
    return scrubbed
  }
}

/**
 * Which files a function's code is made of: its handler module and every
 * project file reachable from it through relative imports (static, dynamic,
 * re-exports, side-effect imports). `toolbridge dev` reloads a function when
 * one of them changes. Packages (bare specifiers) are not followed: a
 * dependency changes by an install, not by an edit.
 */
import { dirname, join } from 'node:path'

const SPECIFIER = /\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g

/** The relative specifiers a module's text imports. */
export function relativeSpecifiers(text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map((match) => match[1]!)
}

/**
 * The entry file and every file reachable from it. `read` gives a file's
 * text, or undefined when there is no such file (a specifier that does not
 * resolve is left out: loading the module will say so).
 */
export function moduleFiles(entry: string, read: (file: string) => string | undefined): Set<string> {
  const found = new Set<string>()
  const pending = [entry]
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (found.has(file)) continue
    const text = read(file)
    if (text === undefined) continue
    found.add(file)
    for (const specifier of relativeSpecifiers(text)) pending.push(join(dirname(file), specifier.split('?')[0]!))
  }
  return found
}

/** The functions whose files include one of the changed files. */
export function affectedFunctions(
  changed: Iterable<string>,
  filesByFunction: ReadonlyMap<string, Set<string>>,
): string[] {
  const changedFiles = [...changed]
  return [...filesByFunction].filter(([, files]) => changedFiles.some((file) => files.has(file))).map(([name]) => name)
}

/**
 * Where a JavaScript syntax error is. Node reports the place of a syntax
 * error in a TypeScript file (its type stripper does) but not in a
 * JavaScript module a worker imports: the error it throws keeps file and
 * line only in the message printed for an uncaught one. `node --check`
 * prints that message, so a broken .js/.mjs/.cjs file is checked with it,
 * only once a load has failed.
 */
import { execFile } from 'node:child_process'

const JAVASCRIPT = /\.[cm]?js$/

/** The first of `files` that does not parse, with its line; undefined when all parse (or none is JavaScript). */
export async function syntaxPlace(files: Iterable<string>): Promise<{ file: string; line: number } | undefined> {
  for (const file of files) {
    if (!JAVASCRIPT.test(file)) continue
    const stderr = await new Promise<string>((resolve) =>
      execFile(process.execPath, ['--check', file], (err, _stdout, stderr) => resolve(err ? stderr : '')),
    )
    // Its first line is `<file>:<line>`.
    const first = stderr.split('\n', 1)[0]!
    if (first.startsWith(`${file}:`)) return { file, line: Number(first.slice(file.length + 1)) }
  }
  return undefined
}

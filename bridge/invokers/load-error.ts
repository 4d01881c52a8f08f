/**
 * Why a function's module could not load, with where: `file:line` of a
 * syntax error (Node puts it on the first line of the stack), else the
 * first frame of the user's own code (an error thrown at the top level of a
 * module). `toolbridge dev` shows it so that a broken edit can be found.
 */
import { fileURLToPath } from 'node:url'
import { messageOf } from '../../shared/errors.ts'

/** `/abs/file.ts:12` on a stack's first line: where Node reports a syntax error. */
const SYNTAX_AT = /^((?:\/|file:\/\/|[A-Za-z]:\\)[^\n]*?):(\d+)$/
/** `at fn (file:///abs/file.ts:12:5)` or `at file:///abs/file.ts:12:5`: a frame of a file on disk. */
const FRAME_AT = /\bat (?:[^\n]*?\()?(file:\/\/\/[^\s)]+?):(\d+):\d+\)?$/m

export interface LoadErrorPlace {
  /** A path (or file: URL) on disk. */
  file: string
  line: number
}

/** Where in the user's files a load error points, if its stack says. */
export function loadErrorPlace(err: unknown): LoadErrorPlace | undefined {
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack : ''
  const first = SYNTAX_AT.exec(stack.split('\n', 1)[0] ?? '')
  const found = first ?? FRAME_AT.exec(stack)
  if (!found) return undefined
  const file = found[1]!.startsWith('file://') ? fileURLToPath(found[1]!) : found[1]!
  return { file, line: Number(found[2]) }
}

/** The message of a load error, ending in ` (at file:line)` when its place is known. */
export function describeLoadError(err: unknown): string {
  const place = loadErrorPlace(err)
  const message = messageOf(err)
  return place ? `${message} (at ${place.file}:${place.line})` : message
}

/** A message of describeLoadError taken apart again: the text, and the place it names if any. */
export function splitLoadError(text: string): { message: string; place?: LoadErrorPlace } {
  const found = / \(at (.+):(\d+)\)$/.exec(text)
  if (!found) return { message: text }
  return { message: text.slice(0, found.index), place: { file: found[1]!, line: Number(found[2]) } }
}

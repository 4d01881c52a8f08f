/**
 * One example invocation per command, given to the command itself with
 * `.addHelpText('after', example(...))`: `toolbridge <command> --help`
 * prints it, and scripts/reference.ts reads it back for docs/reference/cli.md.
 */
import type { EventEmitter } from 'node:events'
import type { Command } from 'commander'

const HEADING = '\nExample:\n  $ '

/** The help text that shows `invocation` as the command's example. */
export const example = (invocation: string): string => `${HEADING}${invocation}`

/** The example a command's help ends with, if it has one. */
export function exampleOf(command: Command): string | undefined {
  let after = ''
  // The event addHelpText() listens on; commander's types leave out that a Command is an EventEmitter.
  const emitter = command as unknown as EventEmitter
  emitter.emit('afterHelp', {
    error: false,
    command,
    write: (text: string) => void (after += text),
  })
  return after.startsWith(HEADING) ? after.slice(HEADING.length).trimEnd() : undefined
}

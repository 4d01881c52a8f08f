/**
 * serverless.yml -> the project: its directory and its tool services. The
 * only place that reads serverless.yml from disk.
 */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import { ConfigError, messageOf } from '../../shared/errors.ts'
import { readToolServices, type ToolServiceSpec } from './tool-services.ts'

export interface Project {
  /** Directory of serverless.yml: handlers are relative to it. */
  baseDir: string
  services: ToolServiceSpec[]
}

/** Reads serverless.yml; a ConfigError names the file or the field at fault. */
export function loadProject(path: string): Project {
  const file = resolve(path)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // A first run in a folder that is not a project yet: say where it looked and how to make one.
    const hint =
      code === 'ENOENT'
        ? ` (looked for ${file}; pass -c <file>, or create a project here with: npx toolbridge init)`
        : ''
    throw new ConfigError(path, `cannot read: ${code ?? messageOf(err)}${hint}`)
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    if (err instanceof YAMLParseError) throw new ConfigError(path, `invalid YAML: ${oneLine(err.message)}`)
    throw err
  }
  const services = readToolServices(doc)
  if (services.length === 0) throw new ConfigError(path, 'no function has a "toolService:" block')
  return { baseDir: dirname(file), services }
}

/**
 * A YAML parser's message in one line, the line at fault quoted: its first line ends in a colon
 * before a quoted excerpt, whose line under the caret is the one at fault.
 */
function oneLine(message: string): string {
  const lines = message.split('\n')
  const caret = lines.findIndex((line) => /^\s*\^+\s*$/.test(line))
  const culprit = caret > 0 ? lines[caret - 1]!.trim() : ''
  const first = lines[0]!.replace(/:\s*$/, '')
  return culprit === '' ? first : `${first}: "${culprit}"`
}

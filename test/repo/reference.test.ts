/**
 * The reference pages are generated from the code (scripts/reference.ts):
 * the committed ones must be what generating them today gives, so that a
 * schema key, a command or a flag added without regenerating fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { program } from '../../bridge/cli/main.ts'
import { exampleOf } from '../../bridge/cli/examples.ts'
import { commandsOf, envOf, REFERENCE_COMMAND, referencePages } from '../../scripts/reference.ts'
import { schemaWithoutProjectKeywords, toolServiceSchema } from '../../shared/tool-service-schema.ts'

const ROOT = resolve(import.meta.dirname, '..', '..')

/** The text of every TypeScript file under `dir`. */
const sourcesUnder = (dir: string): string =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(join(ROOT, dir, file), 'utf8'))
    .join('\n')

describe('reference pages', () => {
  for (const page of referencePages()) {
    it(`${page.path} is up to date`, () => {
      const file = join(ROOT, page.path)
      const committed = existsSync(file) ? readFileSync(file, 'utf8') : '(missing)'
      expect(committed === page.text, `${page.path} is out of date: run \`${REFERENCE_COMMAND}\``).toBe(true)
    })
  }

  it('every command has an example, which its --help shows', () => {
    for (const command of commandsOf(program)) {
      const example = exampleOf(command)
      expect(example, `toolbridge ${command.name()} has no example`).toMatch(/^toolbridge /)
      let help = ''
      command.configureOutput({ writeOut: (text) => void (help += text) })
      command.outputHelp()
      expect(help).toContain(`$ ${example}`)
    }
  })

  it('every key of the schema says what it is and gives an example', () => {
    const page = referencePages().find((p) => p.path.endsWith('serverless-yml.md'))!.text
    const sections = page.split('\n### ').slice(1)
    expect(sections.length).toBeGreaterThan(40)
    for (const section of sections) {
      const [heading, , description] = section.split('\n')
      expect(description, `${heading} has no description`).not.toBe('')
      expect(section, `${heading} has no example`).toContain('```yaml')
    }
  })

  it('every environment variable an option names is one the code reads', () => {
    const code = sourcesUnder('bridge')
    for (const command of [program, ...commandsOf(program)]) {
      for (const option of command.options) {
        const env = envOf(option)
        if (env === undefined || option.envVar !== undefined) continue // commander reads its own
        expect(code.includes(`env.${env}`), `${option.flags} names ${env}, which nothing reads`).toBe(true)
      }
    }
  })

  it("the schema the Serverless plugin declares compiles in osls's strict Ajv, which knows no project keyword", () => {
    const strict = new Ajv({ strict: true, allErrors: true, coerceTypes: 'array' })
    expect(() => strict.compile(schemaWithoutProjectKeywords(toolServiceSchema))).not.toThrow()
    expect(() => strict.compile(toolServiceSchema)).toThrow(/unknown keyword: "concerns"/)
  })
})

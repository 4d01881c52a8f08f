/**
 * `toolbridge init` and `toolbridge add function`: scaffold a project that
 * serves its functions as agent tools, from the files under templates/.
 *
 * A template is a folder of files copied as they are, except that `__NAME__`
 * and the like are filled in, a file ending in .ts is written only for a
 * TypeScript project and one ending in .js only for a JavaScript one.
 * serverless.yml is put together from templates/common/serverless.head.yml
 * and the template's functions.yml; package.json is written here, with the
 * versions this package itself is tested with.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { isMap, isScalar, parseDocument } from 'yaml'
import { isRecord, ToolbridgeError } from '../../shared/errors.ts'
import { PACKAGE_ROOT } from '../support/package-root.ts'
import { TEMPLATES, type TemplateName } from './template-names.ts'

export type Language = 'ts' | 'js'

const TEMPLATES_DIR = join(PACKAGE_ROOT, 'templates')

/** What a template's tool is called with in its README's example. */
const EXAMPLE_CALLS: Record<TemplateName, { tool: string; args: string }> = {
  minimal: { tool: 'say-hello', args: '--arg name=Ada' },
  streaming: { tool: 'tell-story', args: '--arg hero=Ada --stream' },
  'existing-api': { tool: 'lookup-product', args: '--arg sku=SKU-1' },
  'http-function': { tool: 'greet', args: '--arg name=Ada' },
}

/** The scaffold's devDependencies, at the versions this package is built and tested with. */
const DEV_DEPENDENCIES: Record<Language, readonly string[]> = {
  js: ['esbuild', 'osls', 'serverless-esbuild', 'serverless-offline', 'vitest'],
  ts: ['@types/node', 'esbuild', 'osls', 'serverless-esbuild', 'serverless-offline', 'typescript', 'vitest'],
}

/** What a template's functions need besides toolbridge, and the scripts that run them. */
const TEMPLATE_EXTRAS: Record<
  TemplateName,
  {
    dependencies?: readonly string[]
    typeDependencies?: readonly string[]
    scripts?: (language: Language) => Record<string, string>
  }
> = {
  minimal: {},
  streaming: {},
  'existing-api': { dependencies: ['express', 'serverless-http'], typeDependencies: ['@types/express'] },
  'http-function': { scripts: (language) => ({ serve: `node functions/greet/server.${language}` }) },
}

/** What a folder may hold for init to write in it without --force: a repository, and what npm leaves. */
const NPM_LEFTOVERS = new Set(['.git', 'package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'node_modules'])

/** A file's name in templates/ -> its name in the project (npm leaves a package's .gitignore out). */
const RENAMED: Record<string, string> = { gitignore: '.gitignore' }

export interface InitOptions {
  dir: string
  template: string
  language: Language
  force: boolean
}

export interface Written {
  dir: string
  files: string[]
  /** Files that were there before and were overwritten (only with `force`). */
  overwritten: string[]
}

export function initProject(options: InitOptions): Written {
  const template = templateNamed(options.template)
  const dir = resolve(options.dir)
  const name = packageName(basename(dir))
  const fill = placeholders({
    __NAME__: name,
    __TOOL__: EXAMPLE_CALLS[template].tool,
    __ARGS__: EXAMPLE_CALLS[template].args,
  })

  const files = new Map<string, string>()
  for (const folder of ['common', template]) {
    for (const file of templateFiles(join(TEMPLATES_DIR, folder), options.language)) {
      if (file === 'serverless.head.yml' || file === 'functions.yml') continue
      if (file === 'tsconfig.json' && options.language === 'js') continue
      const target = join(dirname(file), RENAMED[basename(file)] ?? basename(file))
      files.set(target, fill(readFileSync(join(TEMPLATES_DIR, folder, file), 'utf8')))
    }
  }
  const head = readFileSync(join(TEMPLATES_DIR, 'common', 'serverless.head.yml'), 'utf8')
  files.set(
    'serverless.yml',
    fill(joinServerlessYml(head, readFileSync(join(TEMPLATES_DIR, template, 'functions.yml'), 'utf8'))),
  )
  const existing = readPackage(join(dir, 'package.json')) ?? installedFrom(dir)
  files.set(
    'package.json',
    JSON.stringify(withInstalled(projectPackage(name, template, options.language), existing), null, 2) + '\n',
  )

  // What `npm init` and `npm install toolbridge` leave is built on, not overwritten: package.json is merged.
  const merged = existing === undefined ? [] : ['package.json']
  const overwritten = [...files.keys()].filter((file) => existsSync(join(dir, file)) && !merged.includes(file)).sort()
  const present = existsSync(dir) ? readdirSync(dir).filter((entry) => !NPM_LEFTOVERS.has(entry)) : []
  if (present.length > 0 && !options.force) {
    const clash =
      overwritten.length > 0
        ? `; --force would overwrite ${overwritten.join(', ')}`
        : '; --force would overwrite none of them'
    throw new ToolbridgeError('config', `init: ${dir} is not empty (${present.sort().join(', ')})${clash}`)
  }
  for (const [file, text] of files) writeProjectFile(dir, file, text)
  return { dir, files: [...files.keys()].sort(), overwritten }
}

export interface AddFunctionOptions {
  /** The project's serverless.yml. */
  config: string
  name: string
  /** Undefined: TypeScript when the project has a tsconfig.json. */
  language: Language | undefined
}

export function addFunction(options: AddFunctionOptions): Written {
  const { name } = options
  if (!/^[a-z][a-z0-9-]{0,62}$/.test(name)) {
    throw new ToolbridgeError(
      'config',
      `add function: "${name}" must be lower-case letters, digits and dashes, starting with a letter`,
    )
  }
  const configPath = resolve(options.config)
  const dir = dirname(configPath)
  let text: string
  try {
    text = readFileSync(configPath, 'utf8')
  } catch {
    throw new ToolbridgeError('config', `add function: no ${configPath} (create a project with: npx toolbridge init)`)
  }
  const doc = parseDocument(text)
  if (doc.errors.length > 0)
    throw new ToolbridgeError('config', `${configPath}: invalid YAML: ${doc.errors[0]?.message.split('\n')[0]}`)
  if (doc.hasIn(['functions', name]))
    throw new ToolbridgeError('config', `add function: ${configPath} already has a function "${name}"`)

  const language = options.language ?? (existsSync(join(dir, 'tsconfig.json')) ? 'ts' : 'js')
  const fill = placeholders({ __FUNCTION__: name, __TOOL__: name })
  const files = new Map<string, string>()
  for (const file of templateFiles(join(TEMPLATES_DIR, 'function'), language)) {
    if (file === 'function.yml') continue
    const target = file.startsWith('handler.test.')
      ? join('test', `${name}.test.${language}`)
      : join('functions', name, file)
    files.set(target, fill(readFileSync(join(TEMPLATES_DIR, 'function', file), 'utf8')))
  }
  const existing = [...files.keys()].filter((file) => existsSync(join(dir, file)))
  if (existing.length > 0)
    throw new ToolbridgeError(
      'config',
      `add function: ${existing.join(', ')} already exist${existing.length === 1 ? 's' : ''} in ${dir}`,
    )

  const block: unknown = parseDocument(
    fill(readFileSync(join(TEMPLATES_DIR, 'function', 'function.yml'), 'utf8')),
  ).toJS()
  if (!isRecord(block)) throw new Error('templates/function/function.yml must be a mapping')
  doc.setIn(['functions', name], doc.createNode(block))
  for (const [file, fileText] of files) writeProjectFile(dir, file, fileText)
  // lineWidth 0: long strings (the esbuild banner) stay on one line as they were written.
  writeFileSync(configPath, doc.toString({ lineWidth: 0 }))
  return { dir, files: [...files.keys(), relative(dir, configPath)].sort(), overwritten: [] }
}

/** The common head of serverless.yml and a template's part: top-level keys of the part are added, or merged into a mapping of the head (custom:). */
function joinServerlessYml(head: string, part: string): string {
  const headDoc = parseDocument(head)
  const partDoc = parseDocument(part)
  if (!isMap(headDoc.contents) || !isMap(partDoc.contents))
    throw new Error('templates: serverless.yml parts must be mappings')
  for (const pair of partDoc.contents.items) {
    const existing = headDoc.contents.items.find(
      (p) => isScalar(p.key) && isScalar(pair.key) && p.key.value === pair.key.value,
    )
    if (existing && isMap(existing.value) && isMap(pair.value)) existing.value.items.push(...pair.value.items)
    else headDoc.contents.items.push(pair)
  }
  // The part's leading comment says what its functions are: keep it above its first key.
  const first = partDoc.contents.items[0]?.key
  if (isScalar(first)) {
    first.spaceBefore = true
    if (partDoc.commentBefore) first.commentBefore = partDoc.commentBefore
  }
  return headDoc.toString({ lineWidth: 0 })
}

export function templateNamed(name: string): TemplateName {
  const template = TEMPLATES.find((t) => t === name)
  if (!template)
    throw new ToolbridgeError('config', `init: unknown template "${name}" (templates: ${TEMPLATES.join(', ')})`)
  return template
}

/** The files of a template folder, relative to it, without those of the other language. */
function templateFiles(folder: string, language: Language): string[] {
  const other = language === 'ts' ? '.js' : '.ts'
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((file) => statSync(join(folder, file)).isFile() && !file.endsWith(other))
    .sort()
}

const placeholders = (values: Record<string, string>) => (text: string) =>
  Object.entries(values).reduce((filled, [key, value]) => filled.replaceAll(key, value), text)

/** A folder name as an npm package name (and a Serverless service name: letters, digits, dashes). */
function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return /^[a-z]/.test(name) ? name : `tools-${name || 'project'}`
}

interface OwnPackage {
  version: string
  devDependencies: Record<string, string>
}

function ownPackage(): OwnPackage {
  const parsed: unknown = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'))
  if (!isRecord(parsed) || typeof parsed.version !== 'string' || !isRecord(parsed.devDependencies)) {
    throw new Error(`${PACKAGE_ROOT}package.json has no version or devDependencies`)
  }
  const devDependencies = Object.fromEntries(
    Object.entries(parsed.devDependencies).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  )
  return { version: parsed.version, devDependencies }
}

function projectPackage(name: string, template: TemplateName, language: Language) {
  const own = ownPackage()
  const extras = TEMPLATE_EXTRAS[template]
  const pinned = (dependencies: readonly string[]) =>
    Object.fromEntries(
      dependencies.map((dependency) => {
        const version = own.devDependencies[dependency]
        if (version === undefined)
          throw new Error(`toolbridge's package.json has no devDependency ${dependency} to take the version of`)
        return [dependency, version]
      }),
    )
  const devDependencies = [
    ...DEV_DEPENDENCIES[language],
    ...(language === 'ts' ? (extras.typeDependencies ?? []) : []),
  ].sort()
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      start: 'toolbridge start',
      dev: 'toolbridge dev',
      test: 'vitest run',
      ...(language === 'ts' ? { typecheck: 'tsc --noEmit' } : {}),
      offline: 'sls offline start',
      package: 'sls package',
      ...extras.scripts?.(language),
    },
    dependencies: { toolbridge: `^${own.version}`, ...pinned(extras.dependencies ?? []) },
    devDependencies: pinned(devDependencies),
  }
}

type PackageJson = Record<string, unknown>

function readPackage(file: string): PackageJson | undefined {
  if (!existsSync(file)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ToolbridgeError('config', `init: ${file} is not JSON (${(err as Error).message}); fix or remove it`)
  }
  if (!isRecord(parsed)) throw new ToolbridgeError('config', `init: ${file} is not a JSON object; fix or remove it`)
  return parsed
}

/**
 * For a project made in a new folder: toolbridge as the project it runs from installed it (a tarball's
 * path re-pointed from the new folder, a git URL as it is), so the new project's `npm install` finds the
 * same package before it is on the npm registry. Undefined when this toolbridge is not a project's dependency.
 */
function installedFrom(dir: string): PackageJson | undefined {
  const modules = dirname(resolve(PACKAGE_ROOT))
  if (basename(modules) !== 'node_modules') return undefined
  const installer = dirname(modules)
  const source = readPackage(join(installer, 'package.json'))?.dependencies
  const spec = isRecord(source) ? source.toolbridge : undefined
  if (typeof spec !== 'string') return undefined
  const local = /^file:(.*)$/.exec(spec)
  const toolbridge = local?.[1] === undefined ? spec : `file:${relative(dir, resolve(installer, local[1]))}`
  return { dependencies: { toolbridge } }
}

/**
 * The scaffold's package.json over one already there: its name and the dependencies it installed
 * stay as they are (toolbridge from a tarball or a git URL keeps that source); scripts are the
 * scaffold's, as npm init's placeholder `test` is no test.
 */
function withInstalled(scaffold: PackageJson, existing: PackageJson | undefined): PackageJson {
  if (existing === undefined) return scaffold
  const record = (value: unknown) => (isRecord(value) ? value : {})
  return {
    ...existing,
    ...scaffold,
    name: typeof existing.name === 'string' ? existing.name : scaffold.name,
    scripts: { ...record(existing.scripts), ...record(scaffold.scripts) },
    dependencies: { ...record(scaffold.dependencies), ...record(existing.dependencies) },
    devDependencies: { ...record(scaffold.devDependencies), ...record(existing.devDependencies) },
  }
}

function writeProjectFile(dir: string, file: string, text: string): void {
  const path = join(dir, file)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

/** `init` and `add function` on the `toolbridge` command; `-c` of the program names the serverless.yml to add to. */

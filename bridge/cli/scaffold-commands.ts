/**
 * `toolbridge init` and `toolbridge add function`, as commands: their
 * options, and the scaffolding (init.ts, which reads YAML) loaded only
 * when one of them runs.
 */
import { relative } from 'node:path'
import { Option, type Command } from 'commander'
import { ToolbridgeError } from '../../shared/errors.ts'
import { example } from './examples.ts'
import { TEMPLATES } from './template-names.ts'

export function addScaffoldCommands(program: Command): void {
  program
    .command('init [dir]')
    .description('create a project: serverless.yml with one tool service, its function, a test, package.json')
    .addOption(
      new Option('-t, --template <name>', `what the first tool does (${TEMPLATES.join(', ')})`).default('minimal'),
    )
    .option('--js', 'JavaScript instead of TypeScript')
    .option('--force', 'write into a folder that is not empty, overwriting the files of the same names')
    .addHelpText('after', example('toolbridge init my-tool --template streaming'))
    .action(async (dirArgument: string | undefined, flags: { template: string; js?: boolean; force?: boolean }) => {
      const { initProject } = await import('./init.ts')
      const written = initProject({
        dir: dirArgument ?? '.',
        template: flags.template,
        language: flags.js ? 'js' : 'ts',
        force: flags.force ?? false,
      })
      if (written.overwritten.length > 0) console.log(`toolbridge: overwrote ${written.overwritten.join(', ')}`)
      console.log(`toolbridge: created ${written.files.join(', ')} in ${written.dir}`)
      const fromHere = relative(process.cwd(), written.dir)
      const cd = fromHere.startsWith('..') ? written.dir : fromHere
      console.log(
        ['', 'Next:', ...(cd === '' ? [] : [`  cd ${cd}`]), '  npm install', '  npm test', '  npm start'].join('\n'),
      )
    })

  program
    .command('add')
    .description('add to the project')
    .addHelpText('after', example('toolbridge add function weather'))
    .command('function <name>')
    .description('add a function with a tool service to serverless.yml, with its handler and a test')
    .option('--js', 'JavaScript (default: TypeScript when the project has a tsconfig.json)')
    .option('--ts', 'TypeScript')
    .addHelpText('after', example('toolbridge add function weather'))
    .action(async (name: string, flags: { js?: boolean; ts?: boolean }) => {
      if (flags.js && flags.ts) throw new ToolbridgeError('config', 'add function: --js or --ts, not both')
      const { addFunction } = await import('./init.ts')
      const language = flags.js ? 'js' : flags.ts ? 'ts' : undefined
      const written = addFunction({ config: program.opts().config, name, language })
      console.log(`toolbridge: wrote ${written.files.join(', ')} in ${written.dir}`)
    })
}

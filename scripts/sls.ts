/**
 * Runs the Serverless Framework of node_modules (osls) so that nothing reaches
 * the network and nothing stale is packaged:
 *
 *   node scripts/sls.ts offline start   (npm run offline)  the functions on the Lambda API at 127.0.0.1:3002
 *   node scripts/sls.ts package         (npm run package)  one zip per function in .serverless/
 *   node scripts/sls.ts print           the resolved, validated serverless.yml
 *
 * Before every command it deletes the command's own folder under .esbuild/
 * (serverless-esbuild's work folder: stale bundles there end up in the zips),
 * and before `package` also .serverless/. Not for `deploy`: the environment carries dummy AWS credentials.
 * test/support/offline.ts starts serverless-offline with the same environment.
 */
import { spawn } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { constants } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The clone: where serverless.yml is. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const SLS_BIN = join(ROOT, 'node_modules', '.bin', 'sls')
/** Where one run of sls builds, relative to ROOT: serverless-esbuild's work folder and the packaging output. */
export interface BuildDirs {
  workFolder: string
  packageDir: string
}
/** What `npm run offline` and `npm run package` use. */
export const DEFAULT_BUILD: BuildDirs = { workFolder: '.esbuild', packageDir: '.serverless' }
export const PACKAGE_DIR = join(ROOT, DEFAULT_BUILD.packageDir)
/**
 * The folders one command builds in, under a run's: serverless-esbuild's work folder is the command's own
 * (`.esbuild/offline`, `.esbuild/package`), because each command deletes it before it builds and `package`
 * again when it is done, so that `npm run package` would otherwise pull the bundles from under a running
 * `npm run offline`.
 */
export const commandBuild = (command: string | undefined, build: BuildDirs = DEFAULT_BUILD): BuildDirs => ({
  workFolder: `${build.workFolder}/${command ?? 'sls'}`,
  packageDir: build.packageDir,
})
/** Runs of their own (tests side by side) build under here, so that none deletes another's bundles. */
export const ISOLATED_BUILDS_DIR = '.sls-runs'
export const isolatedBuild = (name: string): BuildDirs => ({
  workFolder: `${ISOLATED_BUILDS_DIR}/${name}/esbuild`,
  packageDir: `${ISOLATED_BUILDS_DIR}/${name}/serverless`,
})
/** osls caches its compiled config validators here instead of ~/.serverless (git-ignored). */
export const SCHEMA_CACHE_DIR = join(ROOT, '.cache', 'serverless')

const AWS_CREDENTIAL_SOURCES = [
  'AWS_PROFILE',
  'AWS_DEFAULT_PROFILE',
  'AWS_SESSION_TOKEN',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
]

/** `base` plus what keeps osls, its plugins and the AWS SDK off the network. */
export function slsEnvironment(
  base: NodeJS.ProcessEnv = process.env,
  build: BuildDirs = DEFAULT_BUILD,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base }
  // Neither offline nor package needs AWS: dummy credentials, so real ones are never used and
  // the SDK's credential chain never falls through to a profile, a container or a web identity.
  for (const name of AWS_CREDENTIAL_SOURCES) delete env[name]
  return {
    ...env,
    SLS_SCHEMA_CACHE_BASE_DIR: SCHEMA_CACHE_DIR,
    // serverless.yml reads serverless-esbuild's work folder from here.
    TOOLBRIDGE_ESBUILD_DIR: build.workFolder,
    // The last link of the chain: EC2 instance metadata at 169.254.169.254.
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ACCESS_KEY_ID: 'toolbridge-offline',
    AWS_SECRET_ACCESS_KEY: 'toolbridge-offline',
    // osls sends no telemetry and shows no notifications; these keep it so for a Serverless Framework that would.
    SLS_TELEMETRY_DISABLED: '1',
    SLS_NOTIFICATIONS_MODE: 'off',
  }
}

/** Deletes serverless-esbuild's work folder, and the packaging output before `package`. */
export async function cleanBuildOutputs(
  command: string | undefined,
  build: BuildDirs = DEFAULT_BUILD,
  serviceDir = ROOT,
): Promise<void> {
  await rm(join(serviceDir, build.workFolder), { recursive: true, force: true })
  if (command === 'package') await rm(join(serviceDir, build.packageDir), { recursive: true, force: true })
}

async function main(args: string[]): Promise<void> {
  const build = commandBuild(args[0])
  await cleanBuildOutputs(args[0], build)
  const child = spawn(SLS_BIN, args, { cwd: ROOT, env: slsEnvironment(process.env, build), stdio: 'inherit' })
  // Ctrl-C reaches sls from the terminal itself; pass on what is sent to this process alone.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal))
  child.on('error', (err) => {
    console.error(`cannot run ${SLS_BIN}: ${err.message} (npm ci installs it)`)
    process.exit(1)
  })
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)))
}

if (import.meta.main) await main(process.argv.slice(2))

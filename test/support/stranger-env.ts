/** The environment of a stranger's shell, shared by the tests that install toolbridge as a stranger would. */
import { delimiter } from 'node:path'

/**
 * This process's environment without the TOOLBRIDGE_* settings, the npm_* variables that `npm test`
 * passes down, or any node_modules/.bin on the PATH; colour off, and `settings` on top.
 */
export function strangerEnv(settings: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !key.startsWith('TOOLBRIDGE_') &&
        !/^npm_/i.test(key) &&
        !['NODE_PATH', 'NODE_OPTIONS', 'FORCE_COLOR'].includes(key),
    ),
  )
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((entry) => !entry.includes('node_modules'))
    .join(delimiter)
  return { ...env, NO_COLOR: '1', ...settings }
}

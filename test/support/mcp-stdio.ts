/**
 * How the MCP tests spawn `toolbridge mcp` on stdio over this checkout's serverless.yml: the options
 * for either SDK's StdioClientTransport (the v1 and v2 clients are tested, each with its own).
 */
import { fileURLToPath } from 'node:url'
import { cleanEnv } from './clean-env.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** `toolbridge mcp --invoker in-process`, run from the checkout without TOOLBRIDGE_* settings, stderr piped. */
export const stdioBridge = () => ({
  command: process.execPath,
  args: ['bridge/cli/main.ts', 'mcp', '--invoker', 'in-process'],
  cwd: ROOT,
  env: cleanEnv(),
  stderr: 'pipe' as const,
})

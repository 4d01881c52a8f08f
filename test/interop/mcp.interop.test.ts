/**
 * TrustGraph's own MCP tool service (trustgraph-flow `mcp-tool`, Python
 * `mcp` client) calls toolbridge's `/mcp` with the `mcp` entries that
 * `toolbridge descriptors --mcp-url --mcp-token` prints: the path an
 * agent's `mcp-tool` tools take. Needs the virtual environment of
 * scripts/trustgraph-venv.sh with the `mcp` package in it.
 */
import { execFile, execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Runtime } from '../../bridge/runtime.ts'
import { interopScriptLines, TRUSTGRAPH_INSTALL, TRUSTGRAPH_VENV, trustgraphInstalled } from '../support/trustgraph.ts'
import { startInProcess } from '../support/in-process-runtime.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PYTHON = join(TRUSTGRAPH_VENV, 'bin/python')

function mcpInstalled(): boolean {
  try {
    execFileSync(PYTHON, ['-c', 'import mcp, trustgraph.agent.mcp_tool.service'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

const ready = trustgraphInstalled() && mcpInstalled()
if (!ready) {
  console.log(
    `skipping MCP interop tests: needs TrustGraph's packages with the \`mcp\` package (${TRUSTGRAPH_INSTALL}, then ${TRUSTGRAPH_VENV}/bin/pip install mcp)`,
  )
}

/** Runs the calls through TrustGraph's MCP tool service, in order. */
function trustgraphMcpCalls(
  mcp: unknown,
  calls: { name: string; parameters?: Record<string, unknown> }[],
): Promise<{ output?: unknown; error?: string }[]> {
  return interopScriptLines('tg_mcp_tool.py', ['--mcp', JSON.stringify(mcp)], calls)
}

describe.skipIf(!ready)("TrustGraph's MCP tool service calling /mcp", () => {
  let runtime: Runtime
  let mcp: Record<string, { 'remote-name': string; url: string; 'auth-token'?: string }>
  beforeAll(async () => {
    runtime = await startInProcess('serverless.yml', { mcpToken: 'interop-token' })
    const url = `${runtime.gateway!.url}/mcp`
    const printed = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['bridge/cli/main.ts', 'descriptors', '--mcp-url', url, '--mcp-token', 'interop-token'],
        { cwd: ROOT },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    )
    mcp = (JSON.parse(printed) as { mcp: typeof mcp }).mcp
  })
  afterAll(async () => {
    await runtime?.stop()
  })

  it('calls each example with the bearer token of its mcp entry, the streamed one joined', async () => {
    const results = await trustgraphMcpCalls(mcp, [
      { name: 'tell-joke', parameters: { topic: 'music' } },
      { name: 'calculate', parameters: { expression: '(1/3 + 0.25) * 12' } },
      { name: 'tell-story', parameters: { hero: 'Ada', sentences: 2 } },
    ])
    expect(results).toEqual([
      { output: "Hey there! Here's a pun for you:\n\nI used to play piano by ear, but now I use my hands." },
      { output: '7' },
      {
        output:
          'Once upon a time, Ada lived in a small town by the sea. Every morning, Ada looked at the horizon and wondered what lay beyond it.',
      },
    ])
  })

  it('gets the error text of a refused call as its output, as TrustGraph hands MCP tool errors to the agent', async () => {
    const [result] = await trustgraphMcpCalls(mcp, [
      { name: 'tell-story', parameters: { hero: 'Ada', sentences: 'many' } },
    ])
    expect(result).toEqual({
      output: 'invalid-arguments: invalid arguments: "sentences" must be an integer, got the string "many"',
    })
  })

  it('is refused without the right token', async () => {
    const wrong = Object.fromEntries(Object.entries(mcp).map(([k, v]) => [k, { ...v, 'auth-token': 'wrong' }]))
    const [result] = await trustgraphMcpCalls(wrong, [{ name: 'tell-joke', parameters: { topic: 'cats' } }])
    expect(result!.error).toBe('MCPError: missing or wrong bearer token')
  })
})

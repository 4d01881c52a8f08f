/**
 * `toolbridge mcp` (stdio) when its input ends: the calls in flight are still answered on stdout,
 * within the drain timeout, before it exits; one still running when that is up is given up.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const BIN = fileURLToPath(new URL('../../bridge/cli/toolbridge.js', import.meta.url))
const PROJECT = fileURLToPath(new URL('../fixtures/mcp-long-calls/', import.meta.url))

/** Pipes `messages` into `toolbridge mcp`, ends its input, and resolves with the JSON lines it wrote and its exit code. */
function pipeInto(
  messages: unknown[],
  args: string[] = [],
): Promise<{ lines: { id?: number }[]; code: number | null }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))
  const child = spawn(process.execPath, [BIN, 'mcp', '--invoker', 'in-process', ...args], { cwd: PROJECT, env })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stdin.end(messages.map((m) => JSON.stringify(m)).join('\n') + '\n')
  return new Promise((resolve) =>
    child.on('exit', (code) =>
      resolve({
        lines: out
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line)),
        code,
      }),
    ),
  )
}

const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } },
}
const call = (seconds: number) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'slow', arguments: { seconds } },
})

describe('toolbridge mcp when its input ends', () => {
  it('answers the calls still in flight before it exits', async () => {
    const { lines, code } = await pipeInto([
      initialize,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      call(2),
    ])
    expect(code).toBe(0)
    expect(lines.find((line) => line.id === 1)).toMatchObject({
      result: { content: [{ type: 'text', text: 'answered after 2 s' }] },
    })
  }, 30_000)

  it('gives a call up once the drain timeout is over, and exits', async () => {
    const { lines, code } = await pipeInto([initialize, call(60)], ['--drain-timeout', '1'])
    expect(code).toBe(0)
    expect(lines.map((line) => line.id)).toEqual([0])
  }, 30_000)
})

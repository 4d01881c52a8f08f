/**
 * The `toolbridge` launcher (bridge/cli/toolbridge.js): `start` runs in the
 * same process with a small young generation and two malloc arenas, which
 * keep a long-running bridge's memory down; a user's own settings of either
 * win. Read from /proc (Linux): the command line and environment the
 * process runs with.
 */
import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { StartedBridge } from '../support/started-bridge.ts'

/** Starts `toolbridge start` on the embedded broker; once it serves, what its process runs with. */
async function startedWith(env: Record<string, string>): Promise<{ argv: string[]; env: string[] }> {
  // The user's own settings of these come only from `env`.
  const bridge = new StartedBridge(['start', '--port', '0', '--log-level', 'warn'], {
    entry: 'bridge/cli/toolbridge.js',
    env,
    unset: ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'],
  })
  try {
    await bridge.url()
    const pid = bridge.child.pid!
    return {
      argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'),
      env: readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'),
    }
  } finally {
    await bridge.stop('SIGTERM')
  }
}

describe.skipIf(!existsSync('/proc/self/cmdline'))('toolbridge start', () => {
  it('runs in the same process with a 1 MB young generation and two malloc arenas', async () => {
    // Read from the process spawned: had the launcher started a second process, these would be its parent's.
    const run = await startedWith({})
    expect(run.argv).toContain('--max-semi-space-size=1')
    expect(run.env).toContain('MALLOC_ARENA_MAX=2')
  })

  it("keeps a user's own young generation (NODE_OPTIONS) and malloc arenas", async () => {
    const run = await startedWith({ NODE_OPTIONS: '--max-semi-space-size=4', MALLOC_ARENA_MAX: '8' })
    expect(run.argv.some((arg) => arg.startsWith('--max-semi-space-size'))).toBe(false)
    expect(run.env).toContain('NODE_OPTIONS=--max-semi-space-size=4')
    expect(run.env).toContain('MALLOC_ARENA_MAX=8')
  })
})

/**
 * Host paths stay off the wire: error messages name files relative to the
 * project (bridge/support/host-paths.ts), unless --debug.
 */
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { RequestClient, type ToolCallError } from '../../bridge/trustgraph/request-client.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings, type SettingFlags } from '../../bridge/project/settings.ts'
import { createPathScrubber } from '../../bridge/support/host-paths.ts'
import { startRuntime } from '../../bridge/runtime.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

describe('createPathScrubber', () => {
  const scrub = createPathScrubber(join(ROOT, 'functions'))

  it('shows paths in the project relative to it, as paths and as file URLs', () => {
    expect(scrub(`Cannot find module '${join(ROOT, 'functions', 'x', 'lib.ts')}'`)).toBe(
      "Cannot find module 'x/lib.ts'",
    )
    expect(scrub(`at ${pathToFileURL(join(ROOT, 'functions', 'a.ts')).href}:1:2`)).toBe('at a.ts:1:2')
  })

  it('hides the home and temporary directories, and leaves other text alone', () => {
    expect(scrub(`ENOENT: open '${join(tmpdir(), 'upload-1')}'`)).toBe("ENOENT: open '<tmp>/upload-1'")
    expect(scrub(`no ${join(homedir(), '.aws', 'config')}`)).toBe('no ~/.aws/config')
    expect(scrub('HTTP 404 Not Found: GET /products/123')).toBe('HTTP 404 Not Found: GET /products/123')
  })
})

describe('error answers on the wire', () => {
  const examples = loadProject(join(ROOT, 'serverless.yml'))
  // A handler export that does not exist: the loader's message names the module's absolute path.
  const broken = {
    ...examples,
    services: examples.services
      .filter((s) => s.id === 'joke-service')
      .map((s) => ({
        ...s,
        location: { kind: 'handler' as const, handler: 'functions/joke/handler.nope', lambdaName: 'nope' },
      })),
  }

  async function errorFor(flags: SettingFlags): Promise<ToolCallError> {
    const runtime = await startRuntime(broken, resolveSettings({ port: 'off', invoker: 'in-process', ...flags }, {}))
    try {
      const client = new RequestClient(await runtime.connectClient(), broken.services[0]!)
      await client.start()
      return await client.call({ config: { style: 'pun' }, arguments: { topic: 'cats' } }).then(
        () => expect.unreachable('answered'),
        (err: ToolCallError) => err,
      )
    } finally {
      await runtime.stop()
    }
  }

  it('name the module relative to the project', async () => {
    const error = await errorFor({})
    expect(error.message).toContain('functions/joke/handler.ts has no exported function "nope"')
    expect(error.message).not.toContain(ROOT)
  })

  it('keep the absolute path with --debug', async () => {
    expect((await errorFor({ debug: true })).message).toContain(join(ROOT, 'functions/joke/handler.ts'))
  })
})

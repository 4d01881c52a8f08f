/**
 * Calls over HTTP that the gateway refuses before they reach the broker
 * (arguments that do not fit, 422; a body too large, 413; too many calls in
 * flight, 429) appear in the console's log and charts and in /metrics, as
 * the bridge's own answers do. Real gateway, real sockets.
 */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConsoleFeed } from '../../bridge/http/console/console-feed.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { MEMORY_MAX_MESSAGE_BYTES } from '../../bridge/transports/memory/memory-transport.ts'
import { stoppedAfterEach } from '../support/stopped-after-each.ts'

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'dev-project', 'serverless.yml')
const stopped = stoppedAfterEach<Runtime>()

const post = (url: string, tool: string, body: string) =>
  fetch(`${url}/tools/${tool}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })

describe('refusals at the gateway', () => {
  it('are rows of the console log, errors in its charts and counted in /metrics, by tool and status', async () => {
    const feed = new ConsoleFeed()
    const settings = {
      ...resolveSettings({ port: '0', invoker: 'in-process', maxHttpInFlight: '1', maxRequestBytes: '4096' }, {}),
      broker: undefined,
    }
    const runtime = stopped(await startRuntime(loadProject(FIXTURE), settings, { console: feed }))
    const url = runtime.gateway!.url

    expect((await post(url, 'echo', JSON.stringify({ arguments: {} }))).status).toBe(422)
    // Over --max-request-bytes: sent, and refused by the bridge, which cannot tell its tool.
    expect((await post(url, 'echo', JSON.stringify({ arguments: { text: 'x'.repeat(10_000) } }))).status).toBe(413)
    // Over what the broker takes: refused by the gateway, never sent.
    const huge = JSON.stringify({ arguments: { text: 'x'.repeat(MEMORY_MAX_MESSAGE_BYTES) } })
    expect((await post(url, 'echo', huge)).status).toBe(413)
    // A streamed story holds the one slot while another call comes.
    const story = await post(url, 'story', JSON.stringify({ arguments: { words: 5 } }))
    expect((await post(url, 'echo', JSON.stringify({ arguments: { text: 'hi' } }))).status).toBe(429)
    await story.text()
    expect((await post(url, 'nope', JSON.stringify({ arguments: {} }))).status).toBe(404)

    const rows = feed.log.entries({}).map(({ service, tool, outcome }) => ({ service, tool, outcome }))
    expect(rows).toEqual([
      { service: 'echo-service', tool: 'echo', outcome: 'invalid-arguments' },
      { service: 'echo-service', tool: '', outcome: 'too-large' },
      { service: 'echo-service', tool: 'echo', outcome: 'too-large' },
      { service: 'echo-service', tool: 'echo', outcome: 'too-many-requests' },
      { service: 'story-service', tool: 'story', outcome: 'ok' },
    ])
    const echo = feed.stats.series(Date.now()).echo!
    expect(echo.reduce((n, m) => n + m.errors, 0)).toBe(3) // 422, 413 at the gateway, 429

    const metrics = await (await fetch(`${url}/metrics`)).text()
    for (const status of ['422', '413', '429'])
      expect(metrics).toContain(`toolbridge_http_refused_total{tool="echo",status="${status}"} 1`)
    expect(metrics).not.toContain('tool="nope"')
  })
})

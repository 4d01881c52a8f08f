/**
 * `--pulsar-client native`: the bridge on the official `pulsar-client` addon,
 * an optional dependency. Where the addon loads, the bridge serves the
 * examples through it on the real broker; where it does not, these tests say
 * why in one line, and what a user sees is checked instead: one line, naming
 * the reason.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { loadProject } from '../bridge/project/project.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../bridge/runtime.ts'
import { createTransport } from '../bridge/transports/create-transport.ts'
import { loadNativePulsar } from '../bridge/transports/pulsar/native-transport.ts'
import type { Delivery } from '../bridge/transports/transport.ts'
import { ToolbridgeError } from '../shared/errors.ts'
import { pulsarRunnable, startPulsar, type PulsarBroker } from './support/pulsar.ts'

const run = promisify(execFile)
const native = await loadNativePulsar()
if (!native.ok) console.log(`skipping the native pulsar-client tests: ${native.reason}`)
const runnable = native.ok && pulsarRunnable()

describe.runIf(!native.ok)('without the native addon', () => {
  it('fails connect() with a config error that says why the addon cannot be used', async () => {
    const transport = createTransport('pulsar://127.0.0.1:6650', undefined, { pulsar: { client: 'native' } })
    const error = (await transport.connect().catch((err: unknown) => err)) as ToolbridgeError
    expect(error).toBeInstanceOf(ToolbridgeError)
    expect(error.kind).toBe('config')
    expect(error.message).toContain('--pulsar-client native: pulsar-client')
    expect(error.message).toContain('the built-in client')
  })

  it('makes `toolbridge start --pulsar-client native` print one line saying so, and exit 1', async () => {
    const failed = await run(process.execPath, ['bridge/cli/main.ts', 'start', '--broker', 'pulsar://127.0.0.1:6650', '--pulsar-client', 'native'], {
      timeout: 30_000,
    }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    )
    expect(failed?.code).toBe(1)
    const lines = failed!.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^toolbridge: --pulsar-client native: pulsar-client /)
  })
})

describe.runIf(runnable)('the bridge on the native pulsar-client', () => {
  let broker: PulsarBroker
  let runtime: Runtime
  const project = loadProject('serverless.yml')
  const spec = (id: string) => project.services.find((s) => s.id === id)!

  beforeAll(async () => {
    broker = await startPulsar()
    runtime = await startRuntime(project, resolveSettings({ broker: broker.url, port: 'off', pulsarClient: 'native' }, {}))
  })
  afterAll(async () => {
    await runtime?.stop()
    await broker?.stop()
  })

  it('answers tell-joke and streams tell-story', async () => {
    const transport = await runtime.connectClient()
    expect(transport.kind).toBe('pulsar-native')
    const joke = new RequestClient(transport, spec('joke-service'))
    await joke.start()
    expect(await joke.call({ config: { style: 'pun' }, arguments: { topic: 'cats' } }, { timeoutMs: 20_000 })).toContain('meowtain')
    await joke.close()
    const story = new RequestClient(transport, spec('story-service'))
    await story.start()
    const chunks: string[] = []
    await story.call({ config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 } }, { timeoutMs: 20_000, onChunk: (c) => chunks.push(c) })
    expect(chunks).toHaveLength(3)
    await story.close()
  })

  it('gives properties as a plain object', async () => {
    const transport = await runtime.connectClient()
    const received: Delivery[] = []
    const queue = `response:tg:native-props-${randomUUID().slice(0, 8)}`
    await transport.subscribe(queue, (d) => (d.ack(), received.push(d)))
    await transport.publish(queue, new TextEncoder().encode('{}'), { id: 'x', other: 'y' })
    for (let i = 0; i < 200 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 25))
    expect(received[0]?.properties).toEqual({ id: 'x', other: 'y' })
  })
})

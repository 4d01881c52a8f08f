/**
 * `--pulsar-client native`: the bridge on the official `pulsar-client` addon,
 * an optional dependency. Where the addon loads, the transport contract
 * (test/support/transport-contract.ts) runs through it on the real broker;
 * where it does not, these tests say why in one line, and what a user sees
 * is checked instead: one line, naming the reason.
 */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { loadNativePulsar } from '../../bridge/transports/pulsar/native-transport.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { PULSAR_URL, pulsarRunnable, startPulsar, type PulsarBroker } from '../support/pulsar.ts'
import { describeTransport } from '../support/transport-contract.ts'

const run = promisify(execFile)
const native = await loadNativePulsar()
if (!native.ok) console.log(`skipping the native pulsar-client tests: ${native.reason}`)
const runnable = native.ok && pulsarRunnable()

describe.runIf(!native.ok)('without the native addon', () => {
  it('fails connect() with a config error that says why the addon cannot be used', async () => {
    const transport = await createTransport('pulsar://127.0.0.1:6650', undefined, { pulsar: { client: 'native' } })
    const error = (await transport.connect().catch((err: unknown) => err)) as ToolbridgeError
    expect(error).toBeInstanceOf(ToolbridgeError)
    expect(error.kind).toBe('config')
    expect(error.message).toContain('--pulsar-client native: pulsar-client')
    expect(error.message).toContain('the built-in client')
  })

  it('makes `toolbridge start --pulsar-client native` print one line saying so, and exit 1', async () => {
    const failed = await run(
      process.execPath,
      ['bridge/cli/main.ts', 'start', '--broker', 'pulsar://127.0.0.1:6650', '--pulsar-client', 'native'],
      {
        timeout: 30_000,
      },
    ).then(
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
  const settings = resolveSettings({ broker: PULSAR_URL, port: 'off', pulsarClient: 'native' }, {})
  beforeAll(async () => {
    broker = await startPulsar()
  })
  afterAll(async () => {
    await broker?.stop()
  })

  it('connects through the addon', async () => {
    const transport = await createTransport(settings.broker, undefined, { pulsar: settings.pulsar })
    try {
      await transport.connect()
      expect(transport.kind).toBe('pulsar-native')
    } finally {
      await transport.close()
    }
  })

  describeTransport('the native pulsar-client', {
    settings,
    fixturesYml: fileURLToPath(new URL('../fixtures/brokers/pulsar.yml', import.meta.url)),
    callTimeoutMs: 20_000,
    maxMessageBytes: 5 * 1024 * 1024, // Pulsar's default maxMessageSize
    bigMessageBytes: 4 * 1024 * 1024,
    replicas: { kill: 'on non-persistent topics Pulsar drops what a closed consumer held, rather than redeliver it' },
    outage: "the native transport reports no readiness to wait on; its reconnects are the addon's",
    flowControl: { queue: () => `flow:tg:native-nack-${randomUUID().slice(0, 8)}`, nackedComesBackLast: true },
    unreachable: 'the addon connects lazily: connect() does not reach the broker',
  })
})

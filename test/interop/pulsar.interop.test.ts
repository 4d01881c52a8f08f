/**
 * Interop with TrustGraph itself, on Pulsar: TrustGraph's own
 * RequestResponseClient, through its own Pulsar backend (the native Python
 * pulsar-client), calls tools served by the bridge; and `toolbridge invoke`
 * calls TrustGraph's own joke service, run as shipped (its topics are
 * non-persistent://tg/request/joke and .../response/joke). Needs a JDK and
 * Maven (scripts/pulsar.sh) and the virtual environment of
 * scripts/trustgraph-venv.sh; .ci/run provides both.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { PULSAR_INSTALL, pulsarRunnable, startPulsar, type PulsarBroker } from '../support/pulsar.ts'
import {
  TRUSTGRAPH_INSTALL,
  TRUSTGRAPH_VENV,
  trustgraphClientCalls,
  trustgraphInstalled,
} from '../support/trustgraph.ts'

const run = promisify(execFile)
const ready = pulsarRunnable() && trustgraphInstalled()
if (!ready) {
  console.log(
    `skipping TrustGraph interop tests on Pulsar: needs ${pulsarRunnable() ? '' : `${PULSAR_INSTALL} and `}TrustGraph's packages (${TRUSTGRAPH_INSTALL})`,
  )
}

describe.skipIf(!ready)('TrustGraph interop on Pulsar', () => {
  let broker: PulsarBroker
  const project = loadProject('serverless.yml')
  const queues = (id: string) => project.services.find((s) => s.id === id)!
  const tg = () => ({ backend: 'pulsar' as const, serviceUrl: broker.url, adminUrl: broker.admin })

  beforeAll(async () => {
    broker = await startPulsar()
  })
  afterAll(async () => {
    await broker?.stop()
  })

  describe("TrustGraph's client calling the bridge", () => {
    let runtime: Runtime
    beforeAll(async () => {
      runtime = await startRuntime(project, resolveSettings({ broker: broker.url, port: 'off' }, {}))
    })
    afterAll(async () => {
      await runtime?.stop()
    })

    it('gets a single answer from request()', async () => {
      const [result] = await trustgraphClientCalls(
        queues('joke-service'),
        [{ config: { style: 'dad-joke' }, arguments: { topic: 'programming' } }],
        tg(),
      )
      expect(result).toEqual({
        response:
          "Hey there! Here's a dad-joke for you:\n\nWhy do programmers prefer dark mode? Because light attracts bugs.",
        error: null,
        messages: 1,
      })
    })

    it('gets every chunk from request_stream(), the last one ending the stream', async () => {
      const [result] = await trustgraphClientCalls(
        queues('story-service'),
        [{ config: { pace: 0 }, arguments: { hero: 'Ada', sentences: 3 }, stream: true }],
        tg(),
      )
      expect(result!.error).toBeNull()
      expect(result!.messages).toBe(4) // three sentences and the final end_of_stream message
      expect(result!.response).toBe(
        'Once upon a time, Ada lived in a small town by the sea. ' +
          'Every morning, Ada looked at the horizon and wondered what lay beyond it. ' +
          'One day a stranger arrived with a map that nobody in a small town by the sea could read.',
      )
    })

    it("decodes error answers into TrustGraph's Error", async () => {
      const results = await trustgraphClientCalls(
        queues('calculator-service'),
        [{ arguments: {} }, { arguments: { expression: '1/0' } }],
        tg(),
      )
      expect(results[0]!.error).toEqual({
        type: 'invalid-arguments',
        message: 'invalid arguments: "expression" is required',
      })
      expect(results[1]!.error?.type).toBe('tool-service-error')
      expect(results[1]!.error?.message).toContain('division by zero')
    })

    it('answers 100 concurrent calls, each with its own result', async () => {
      const calls = Array.from({ length: 100 }, (_, i) => ({ arguments: { expression: `${i} * ${i} + 1` } }))
      const results = await trustgraphClientCalls(queues('calculator-service'), calls, tg())
      expect(results.map((r) => r.response)).toEqual(calls.map((_, i) => String(i * i + 1)))
      expect(results.every((r) => r.error === null)).toBe(true)
    })
  })

  describe("the bridge's client calling TrustGraph's joke service, as shipped", () => {
    let service: ChildProcess
    beforeAll(async () => {
      service = await new Promise<ChildProcess>((resolve, reject) => {
        const child = spawn(join(TRUSTGRAPH_VENV, 'bin/joke-service'), [
          '--pubsub-backend',
          'pulsar',
          '--pulsar-host',
          broker.url,
          '--pulsar-admin-url',
          broker.admin,
          '--no-metrics',
          '--no-loki-enabled',
        ])
        let log = ''
        const onData = (d: Buffer) => {
          log += d
          if (/Added consumer|Subscribed|consumer/i.test(log) && log.includes('joke')) resolve(child)
        }
        child.stdout.on('data', onData)
        child.stderr.on('data', onData)
        child.on('error', reject)
        child.on('exit', (code) => reject(new Error(`joke-service exited ${code}: ${log.slice(-2000)}`)))
      })
    })
    afterAll(() => {
      service?.kill('SIGKILL')
    })

    it('toolbridge invoke --broker pulsar:// prints its answer', async () => {
      const { stdout } = await run(
        process.execPath,
        [
          'bridge/cli/main.ts',
          'invoke',
          'tell-joke',
          '--arg',
          'topic=programming',
          '--broker',
          broker.url,
          '--timeout',
          '20',
        ],
        { timeout: 30_000 },
      )
      expect(stdout).toMatch(/^Here's a pun for you:\n\n\S.*\n$/)
    })
  })
})

/** Delivery (maxAge, answered once, dead letters) on RabbitMQ: test/support/delivery-contract.ts. Never stops the broker. */
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deadLetterMessage } from '../../bridge/core/dead-letters.ts'
import { DEAD_LETTER_SUBSCRIPTION } from '../../bridge/core/delivery-guard.ts'
import type { Transport } from '../../bridge/transports/transport.ts'
import { encodeRequest } from '../../shared/protocol.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { describeDelivery } from '../support/delivery-contract.ts'
import { describeOnBroker, RABBITMQ } from '../support/broker-setup.ts'
import { RABBITMQ_URL } from '../support/rabbitmq.ts'

describeOnBroker(RABBITMQ, () => {
  describeDelivery('RabbitMQ', { transport: () => createTransport(RABBITMQ.url), limitMs: 30_000, drop: RABBITMQ.drop })

  describe('toolbridge dead-letters, the command', () => {
    const run = randomUUID().slice(0, 8)
    const queue = `flow:tg:dlv-cli-${run}-dlq`
    const requestQueue = `flow:tg:dlv-cli-${run}-request`
    const deadLetterId = randomUUID()
    // The project whose tool service reads the request queue: replay sends only there.
    const project = mkdtempSync(join(tmpdir(), 'toolbridge-dlv-cli-'))
    const config = join(project, 'serverless.yml')
    writeFileSync(
      config,
      `service: dlv\nprovider: { name: aws, runtime: nodejs22.x }\nfunctions:\n  svc:\n    handler: svc.handler\n    toolService:\n      id: svc\n      requestQueue: ${requestQueue}\n      responseQueue: flow:tg:dlv-cli-${run}-response\n      tools: [{ name: svc, description: d }]\n`,
    )
    let transport: Transport
    const toolbridge = (...args: string[]) =>
      promisify(execFile)(process.execPath, ['bridge/cli/main.ts', '-c', config, 'dead-letters', ...args], {
        env: { PATH: process.env.PATH ?? '' },
      }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      )

    beforeAll(async () => {
      transport = await createTransport(RABBITMQ_URL)
      await transport.connect()
      // As a bridge does at start: the subscription that keeps the queue's messages.
      await (
        await transport.consume(queue, { subscription: DEAD_LETTER_SUBSCRIPTION, concurrency: 1 }, (d) => d.nack())
      ).close()
      const reason = {
        kind: 'too-large' as const,
        message: 'refused',
        service: 'svc',
        queue: requestQueue,
        attempts: 1,
      }
      const letter = deadLetterMessage(
        { body: encodeRequest({ arguments: { n: 1 } }), properties: { id: 'req-1' } },
        reason,
        deadLetterId,
        new Date(),
      )
      await transport.publish(queue, letter.body, letter.properties)
    }, 60_000)
    afterAll(async () => {
      await transport?.close()
      await RABBITMQ.drop(`dlv-cli-${run}`)
      rmSync(project, { recursive: true, force: true })
    })

    it('list prints each dead letter and takes nothing out; replay --id sends it back to its queue', async () => {
      const broker = ['--broker', RABBITMQ_URL, '--queue', queue, '--wait', '1']
      for (let i = 0; i < 2; i++) {
        const listed = await toolbridge('list', ...broker)
        expect(listed.code).toBe(0)
        expect(listed.stdout).toMatch(
          new RegExp(
            `^${deadLetterId}  \\S+  svc -> ${requestQueue}  too-large: refused  attempts 1  request id req-1\\n$`,
          ),
        )
        expect(listed.stderr).toBe(`toolbridge: 1 message in ${queue}\n`)
      }
      const replayed = await toolbridge('replay', ...broker, '--id', deadLetterId, 'nope')
      expect(replayed).toMatchObject({
        code: 1, // one asked for was not there
        stdout: `replayed ${deadLetterId} to ${requestQueue}\n`,
        stderr: `toolbridge: no dead letter nope in ${queue}\n`,
      })
      expect((await toolbridge('list', ...broker)).stderr).toBe(`toolbridge: 0 messages in ${queue}\n`)
    }, 60_000)

    it('refuses to run without a broker, without a queue, or with a nonsense limit', async () => {
      expect(await toolbridge('list', '--queue', queue)).toMatchObject({
        code: 2,
        stderr: 'toolbridge: --broker: dead letters live on a broker: give --broker (or TOOLBRIDGE_BROKER)\n',
      })
      expect(await toolbridge('list', '--broker', RABBITMQ_URL)).toMatchObject({
        code: 2,
        stderr: 'toolbridge: --queue: no dead-letter queue: give --queue (or TOOLBRIDGE_DEAD_LETTER_QUEUE)\n',
      })
      expect(await toolbridge('list', '--broker', RABBITMQ_URL, '--limit', '0', '--queue', queue)).toMatchObject({
        code: 2,
        stderr: 'toolbridge: --limit: "0" must be a positive integer\n',
      })
      expect((await toolbridge('replay', '--broker', RABBITMQ_URL, '--queue', 'request:tg:x')).stderr).toMatch(
        /"request:tg:x" is not persistent/,
      )
    }, 60_000)
  })
})

/**
 * `toolbridge dead-letters list` and `toolbridge dead-letters replay [--id ...]`,
 * as commands: their options; the broker client and the reading
 * (dead-letter-reader.ts) are loaded only when one of them runs.
 */
import type { Command } from 'commander'
import { UsageError } from '../../shared/errors.ts'
import { resolveSettings, type SettingFlags } from '../project/settings.ts'
import { example } from './examples.ts'
import { addBrokerOptions } from './options.ts'

interface DeadLetterFlags extends SettingFlags {
  queue?: string
  limit?: string
  wait?: string
  id?: string[]
  to?: string
}

/** The queue to read: --queue, else --dead-letter-queue / TOOLBRIDGE_DEAD_LETTER_QUEUE, else the one serverless.yml names. */
async function queueOf(flags: DeadLetterFlags, configFile: string): Promise<string> {
  const settings = resolveSettings({ ...flags, deadLetterQueue: flags.queue ?? flags.deadLetterQueue }, process.env, {
    gateway: false,
  })
  if (settings.delivery.deadLetterQueue !== undefined) return settings.delivery.deadLetterQueue
  const { loadProject } = await import('../project/project.ts')
  const named = new Set(loadProject(configFile).services.flatMap((s) => s.delivery?.deadLetterQueue ?? []))
  if (named.size === 1) return [...named][0]!
  throw new UsageError(
    '--queue',
    named.size === 0
      ? 'no dead-letter queue: give --queue (or TOOLBRIDGE_DEAD_LETTER_QUEUE)'
      : `serverless.yml names several dead-letter queues (${[...named].join(', ')}): give --queue`,
  )
}

/** Where replay may send dead letters: the request queues of the tool services serverless.yml declares, or --to. */
async function targetsOf(flags: DeadLetterFlags, configFile: string) {
  const { loadProject } = await import('../project/project.ts')
  const { replayTargets } = await import('../core/dead-letters.ts')
  const services = loadProject(configFile).services
  if (flags.to !== undefined) {
    const { parseQueueName } = await import('../../shared/queues.ts')
    try {
      parseQueueName(flags.to)
    } catch (err) {
      throw new UsageError('--to', (err as Error).message)
    }
  }
  return replayTargets(services, flags.to)
}

function readOptions(flags: DeadLetterFlags) {
  const positive = (flag: string, value: string) => {
    const n = Number(value)
    if (!Number.isInteger(n) || n < 1) throw new UsageError(flag, `"${value}" must be a positive integer`)
    return n
  }
  return {
    limit: flags.limit === undefined ? 1000 : positive('--limit', flags.limit),
    idleMs: flags.wait === undefined ? 2000 : positive('--wait', flags.wait) * 1000,
  }
}

async function connect(flags: DeadLetterFlags) {
  const settings = resolveSettings(flags, process.env, { gateway: false })
  if (settings.broker === undefined) {
    throw new UsageError('--broker', 'dead letters live on a broker: give --broker (or TOOLBRIDGE_BROKER)')
  }
  const { connectBroker } = await import('./connect.ts')
  return connectBroker(settings.broker, settings.pulsar)
}

export function addDeadLetterCommands(program: Command, configFile: () => string): void {
  const listExample =
    'toolbridge dead-letters list --broker kafka://127.0.0.1:9092 --queue flow:tg:booking-dead-letters'
  const group = program
    .command('dead-letters')
    .description('read and replay the requests kept in a dead-letter queue')
    .addHelpText('after', example(listExample))
  const common = (command: Command) =>
    addBrokerOptions(command)
      .option(
        '--queue <queue>',
        'the dead-letter queue (default: --dead-letter-queue, or the one serverless.yml names)',
      )
      .option('--dead-letter-queue <queue>', 'as --queue (env TOOLBRIDGE_DEAD_LETTER_QUEUE)')
      .option('--limit <n>', 'messages read at most (default 1000)')
      .option('--wait <seconds>', 'stop reading once nothing has arrived for this long (default 2)')

  common(group.command('list').description('print every dead letter, oldest first; nothing is taken out'))
    .addHelpText('after', example(listExample))
    .action(async (flags: DeadLetterFlags) => {
      const queue = await queueOf(flags, configFile())
      const targets = await targetsOf(flags, configFile())
      const transport = await connect(flags)
      try {
        const { listDeadLetters, describeDeadLetter } = await import('./dead-letter-reader.ts')
        const listed = await listDeadLetters(transport, queue, readOptions(flags))
        for (const item of listed) console.log(describeDeadLetter(item, targets))
        console.error(`toolbridge: ${listed.length} message${listed.length === 1 ? '' : 's'} in ${queue}`)
      } finally {
        await transport.close()
      }
    })

  common(
    group
      .command('replay')
      .description(
        'send dead letters back to the request queues of the tool services serverless.yml declares (all, or those of --id), to be run again, and take them out',
      ),
  )
    .option('--id <id...>', 'the dead letters to replay, by the id `list` prints')
    .option('--to <queue>', 'send them to this queue instead of the one each names (never a response queue)')
    .addHelpText(
      'after',
      example(
        'toolbridge dead-letters replay --broker kafka://127.0.0.1:9092 --queue flow:tg:booking-dead-letters --id <id>',
      ),
    )
    .action(async (flags: DeadLetterFlags) => {
      const queue = await queueOf(flags, configFile())
      const targets = await targetsOf(flags, configFile())
      const transport = await connect(flags)
      let result: Awaited<ReturnType<typeof import('./dead-letter-reader.ts').replayDeadLetters>>
      try {
        const { replayDeadLetters } = await import('./dead-letter-reader.ts')
        result = await replayDeadLetters(transport, queue, flags.id, targets, readOptions(flags))
      } finally {
        await transport.close()
      }
      for (const d of result.replayed) console.log(`replayed ${d.id} to ${d.queue}`)
      for (const r of result.refused) console.error(`toolbridge: left ${r.id} in ${queue}: ${r.reason}`)
      for (const id of result.notFound) console.error(`toolbridge: no dead letter ${id} in ${queue}`)
      if (result.refused.length > 0 || result.notFound.length > 0) process.exitCode = 1
    })
}

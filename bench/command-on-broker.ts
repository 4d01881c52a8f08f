/**
 * `toolbridge start` as users run it, on a broker, serving serverless.yml's
 * joke-service on a topic of its own with its concurrency the in-flight
 * level, driven by the broker benches' load client in a process of its own:
 * for the benches that measure the command's own process on a broker.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defaultQueues } from '../shared/queues.ts'
import { type ChildBridge, startChildBridge } from './child-bridge.ts'
import { jokeAnswer, loadJokeTool } from './joke-tool.ts'
import { type LoadClient, startLoadClient } from './load-client-process.ts'
import { ROOT } from './project-root.ts'

const STARTUP_TIMEOUT_MS = 60_000

export interface CommandOnBroker {
  bridge: ChildBridge
  client: LoadClient
  /** The client first, then the command. */
  stop(): Promise<void>
}

export async function startCommandOnBroker(options: {
  broker: string
  invoker: string
  /** The joke-service's topic, the command's own. */
  topic: string
  inFlight: number
  /** Options for node before the command. */
  nodeArgs?: string[]
}): Promise<CommandOnBroker> {
  const { broker, invoker, topic, inFlight, nodeArgs } = options
  const yml = resolve(ROOT, `.command-${process.pid}-${topic}.serverless.yml`)
  const text = readFileSync(resolve(ROOT, 'serverless.yml'), 'utf8').replace(
    /^( +)topic: joke$/m,
    (_, indent: string) => `${indent}topic: ${topic}\n${indent}concurrency: ${inFlight}`,
  )
  writeFileSync(yml, text)
  const bridge = await startChildBridge({ yml, invoker, broker, nodeArgs })
  const { request } = loadJokeTool()
  const queues = defaultQueues(topic)
  try {
    const client = await startLoadClient({
      broker,
      requestQueue: queues.request,
      responseQueue: queues.response,
      request,
      expected: await jokeAnswer(),
      startupInFlight: inFlight,
      startupTimeoutMs: STARTUP_TIMEOUT_MS,
      callTimeoutMs: 30_000,
    })
    return {
      bridge,
      client,
      stop: async () => {
        await client.stop()
        await bridge.stop()
      },
    }
  } catch (err) {
    await bridge.stop()
    throw err
  }
}

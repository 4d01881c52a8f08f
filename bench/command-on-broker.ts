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
import { type DrivenService, driveService } from './load-client-process.ts'
import { ROOT } from './project-root.ts'

const STARTUP_TIMEOUT_MS = 60_000

/** The command and the load client that drives it; stop() ends both, the client first. */
export interface CommandOnBroker extends DrivenService {
  bridge: ChildBridge
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
  const original = readFileSync(resolve(ROOT, 'serverless.yml'), 'utf8')
  const text = original.replace(
    /^( +)topic: joke$/m,
    (_, indent: string) => `${indent}topic: ${topic}\n${indent}concurrency: ${inFlight}`,
  )
  // Without a topic of its own, the command would share the joke-service's queue with anything else serving it.
  if (text === original)
    throw new Error('serverless.yml has no joke-service on topic "joke" to give a topic of its own')
  writeFileSync(yml, text)
  const bridge = await startChildBridge({ yml, invoker, broker, nodeArgs })
  const queues = defaultQueues(topic)
  const driven = await driveService(
    `toolbridge start --invoker ${invoker} on ${topic}`,
    {
      broker,
      requestQueue: queues.request,
      responseQueue: queues.response,
      request: loadJokeTool().request,
      expected: await jokeAnswer(),
      startupInFlight: inFlight,
      startupTimeoutMs: STARTUP_TIMEOUT_MS,
      callTimeoutMs: 30_000,
    },
    () => bridge.stop(),
  )
  return { ...driven, bridge }
}

/**
 * What a bench reads from the environment: numbers, lists, in-flight levels,
 * invoker kinds, the setups a bench serves the tool with, and the settings
 * that every bench measured in rounds reads alike, each checked with a line
 * naming the variable when it is wrong.
 */
import { resolve } from 'node:path'
import { INVOKERS, type InvokerKind } from '../bridge/project/settings.ts'
import { ROOT } from './project-root.ts'

/** A number of at least `min`; unset or empty means `fallback`. */
export function numberEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}="${raw}" must be a number >= ${min}`)
  return n
}

/** A comma-separated list; unset or empty means `fallback`. */
export function listEnv(name: string, fallback: string): string[] {
  return (process.env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

/** Numbers of requests in flight: positive integers, comma separated. */
export function inFlightEnv(name: string, fallback: string): number[] {
  return listEnv(name, fallback).map((s) => {
    const n = Number(s)
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: "${s}" is not a positive integer`)
    return n
  })
}

/** Invoker kinds, comma separated. */
export function invokersEnv(name: string, fallback: string): InvokerKind[] {
  return listEnv(name, fallback).map((s) => {
    if (!(INVOKERS as readonly string[]).includes(s))
      throw new Error(`${name}: "${s}" must be one of ${INVOKERS.join(', ')}`)
    return s as InvokerKind
  })
}

/** A bench's broker: BENCH_BROKER, else the shell's TOOLBRIDGE_BROKER, else `fallback`. */
export function brokerEnv(fallback: string): string {
  return process.env.BENCH_BROKER || process.env.TOOLBRIDGE_BROKER || fallback
}

/** RabbitMQ as scripts/rabbitmq.sh starts it on this machine. */
export const LOCAL_RABBITMQ = 'amqp://guest:guest@127.0.0.1:5672/'

/** What a bench measured in rounds of closed loops reads from the environment; each bench's header gives its defaults. */
export interface RoundsSettings {
  /** BENCH_SECONDS: measured seconds per cell. */
  seconds: number
  /** BENCH_WARMUP_SECONDS: warm-up seconds per cell. */
  warmupSeconds: number
  /** BENCH_ROUNDS: rounds per in-flight level. */
  rounds: number
  /** BENCH_INFLIGHT: in-flight levels. */
  inFlight: number[]
  /** BENCH_OUT: where the results are written. */
  out: string
}

/** `bench`'s RoundsSettings, each from its variable or else `defaults`; BENCH_OUT unset means bench/results/<bench>.json. */
export function roundsSettings(
  bench: string,
  defaults: { seconds: number; warmupSeconds: number; rounds: number; inFlight: string },
): RoundsSettings {
  return {
    seconds: numberEnv('BENCH_SECONDS', defaults.seconds, 0.1),
    warmupSeconds: numberEnv('BENCH_WARMUP_SECONDS', defaults.warmupSeconds, 0),
    rounds: Math.floor(numberEnv('BENCH_ROUNDS', defaults.rounds, 1)),
    inFlight: inFlightEnv('BENCH_INFLIGHT', defaults.inFlight),
    out: resolve(ROOT, process.env.BENCH_OUT || `bench/results/${bench}.json`),
  }
}

/**
 * What a bench serves the tool with: an invoker, or one of two setups of the
 * bench's own:
 * - `worker-threads-shared`, the worker threads with several invocations per
 *   worker (`invocationsPerWorker` BENCH_PER_WORKER, default 64);
 * - `pipeline-in-workers`, a prototype of another design: the whole bridge
 *   (consume, check, invoke in process, answer, ack) inside each of a few
 *   worker threads, one broker connection each, the main thread only
 *   starting and stopping them (bench/pipeline-workers.ts).
 */
export const SHARED_SETUP = 'worker-threads-shared'
export const PIPELINE_SETUP = 'pipeline-in-workers'
export const BENCH_SETUPS = [SHARED_SETUP, PIPELINE_SETUP] as const
export type BridgeSetup = InvokerKind | (typeof BENCH_SETUPS)[number]
export const PER_WORKER = Math.floor(numberEnv('BENCH_PER_WORKER', 64, 1))

export function setupsEnv(name: string, fallback: string): BridgeSetup[] {
  const known: readonly string[] = [...INVOKERS, ...BENCH_SETUPS]
  return listEnv(name, fallback).map((s) => {
    if (!known.includes(s)) throw new Error(`${name}: "${s}" must be one of ${known.join(', ')}`)
    return s as BridgeSetup
  })
}

/** The invoker a setup runs on, and its service's `invocationsPerWorker`. */
export function setupInvoker(setup: BridgeSetup): { invoker: InvokerKind; invocationsPerWorker: number } {
  if (setup === SHARED_SETUP) return { invoker: 'worker-threads', invocationsPerWorker: PER_WORKER }
  if (setup === PIPELINE_SETUP) return { invoker: 'in-process', invocationsPerWorker: 1 }
  return { invoker: setup, invocationsPerWorker: 1 }
}

/**
 * serverless.yml + flags + environment -> one validated configuration. The
 * only place that reads process.env or the file system for settings.
 */
import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import { ConfigError, readToolServices, type ToolServiceSpec } from '../shared/descriptors.ts'
import { LOG_LEVELS, type LogLevel } from './logger.ts'

export const INVOKERS = ['local', 'in-process'] as const
export type InvokerKind = (typeof INVOKERS)[number]

export interface Project {
  /** Directory of serverless.yml: handlers are relative to it. */
  baseDir: string
  services: ToolServiceSpec[]
}

/** Reads serverless.yml; a ConfigError names the file or the field at fault. */
export function loadProject(path: string): Project {
  const file = resolve(path)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(path, `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    if (err instanceof YAMLParseError) throw new ConfigError(path, `invalid YAML: ${err.message.split('\n')[0]}`)
    throw err
  }
  const services = readToolServices(doc)
  if (services.length === 0) throw new ConfigError(path, 'no function has a "toolService:" block')
  return { baseDir: dirname(file), services }
}

/** On the embedded broker nothing else can reach the bridge, so HTTP is on by default. */
export const EMBEDDED_DEFAULT_PORT = 8080

export interface Settings {
  broker: string | undefined
  port: number | undefined
  host: string
  invoker: InvokerKind
  drainTimeoutMs: number
  logLevel: LogLevel
}

export interface SettingFlags {
  broker?: string
  port?: string
  host?: string
  invoker?: string
  drainTimeout?: string
  logLevel?: string
}

type Env = Record<string, string | undefined>

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(flag, `"${value}" must be one of ${allowed.join(', ')}`)
  }
  return value as T
}

function integer(flag: string, value: string, min: number, max: number): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < min || n > max) throw new ConfigError(flag, `"${value}" must be an integer from ${min} to ${max}`)
  return n
}

/** Flags win over the environment (TOOLBRIDGE_BROKER, TOOLBRIDGE_PORT, ...), which wins over defaults. */
export function resolveSettings(flags: SettingFlags, env: Env = process.env): Settings {
  const broker = flags.broker ?? (env.TOOLBRIDGE_BROKER || undefined)
  const port = flags.port ?? env.TOOLBRIDGE_PORT ?? (broker === undefined ? String(EMBEDDED_DEFAULT_PORT) : undefined)
  const drain = flags.drainTimeout ?? env.TOOLBRIDGE_DRAIN_TIMEOUT
  return {
    broker,
    // '' or 'off' turns HTTP off.
    port: port === undefined || port === '' || port === 'off' ? undefined : integer('--port', port, 0, 65535),
    host: flags.host ?? env.TOOLBRIDGE_HOST ?? '127.0.0.1',
    invoker: oneOf('--invoker', flags.invoker ?? env.TOOLBRIDGE_INVOKER ?? 'local', INVOKERS),
    drainTimeoutMs: drain === undefined ? 30_000 : integer('--drain-timeout', drain, 0, 3600) * 1000,
    logLevel: oneOf('--log-level', flags.logLevel ?? env.TOOLBRIDGE_LOG_LEVEL ?? 'info', LOG_LEVELS),
  }
}

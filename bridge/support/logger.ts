/**
 * The logging surface the bridge depends on: pino's call shape, so a pino
 * logger fits, and tests can pass a silent one.
 */
import { createRequire } from 'node:module'
import type Pino from 'pino'
import type PinoPretty from 'pino-pretty'
import { bounded } from './bounded-text.ts'

// Loaded when a logger is made, not when the module is: `--help` and the
// commands that never log skip them. Both are CommonJS, so require() keeps
// createLogger synchronous.
const require = createRequire(import.meta.url)

type LogFn = (fields: object, message: string) => void

export interface Logger {
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/**
 * Structured JSON lines on stderr (stdout stays for what the commands
 * print); readable lines instead when stderr is a terminal, unless `json`.
 */
export function createLogger(level: LogLevel, options: { json?: boolean } = {}): Logger {
  const readable = !options.json && process.stderr.isTTY === true
  const pino = require('pino') as typeof Pino
  const destination = readable
    ? (require('pino-pretty') as typeof PinoPretty)({ destination: 2, sync: true, ignore: 'pid,hostname' })
    : pino.destination(2)
  return pino(
    {
      level,
      base: undefined,
      formatters: {
        log: (fields) =>
          Object.fromEntries(
            Object.entries(fields).map(([key, value]) => [key, typeof value === 'string' ? bounded(value) : value]),
          ),
      },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((arg) => (typeof arg === 'string' ? bounded(arg) : arg)) as Parameters<typeof method>,
          )
        },
      },
    },
    destination,
  )
}

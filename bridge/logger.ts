/**
 * The logging surface the bridge depends on: pino's call shape, so a pino
 * logger fits, and tests can pass a silent one.
 */
import pino from 'pino'

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

/** Structured JSON lines on stderr; stdout stays for what the commands print. */
export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: undefined }, pino.destination(2))
}

/**
 * The logging surface the bridge depends on: pino's call shape, so a pino
 * logger fits, and tests can pass a silent one.
 */
import pino from 'pino'
import pretty from 'pino-pretty'

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
  const destination = readable ? pretty({ destination: 2, sync: true, ignore: 'pid,hostname' }) : pino.destination(2)
  return pino({ level, base: undefined }, destination)
}

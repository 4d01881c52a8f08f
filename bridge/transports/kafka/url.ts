/**
 * The Kafka broker URL: bootstrap servers, security and the partition count
 * of topics the bridge creates, in one string (so `--broker` and
 * TOOLBRIDGE_BROKER carry all of it, as `amqps://` URLs do for RabbitMQ).
 *
 *   kafka://[user:password@]host:9092[,host2:9092...][?option=value&...]
 *
 * Options, named as TrustGraph's Kafka settings are (`--kafka-security-protocol`,
 * `--kafka-sasl-mechanism`, ...):
 * - `security_protocol`: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. Default:
 *   SASL_PLAINTEXT when the URL has a user, PLAINTEXT otherwise.
 * - `sasl_mechanism`: PLAIN (default), SCRAM-SHA-256 or SCRAM-SHA-512; the
 *   user and password come from the URL (percent-encoded).
 * - `ca`, `cert`, `key`: PEM files for TLS (read once, here); without `ca`,
 *   Node's own CA list. `servername` overrides the name checked.
 * - `partitions`: partitions of each topic the bridge has to create (default 1,
 *   as TrustGraph's topics have). Existing topics are never changed.
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import { ConfigError, messageOf } from '../../../shared/errors.ts'

export const KAFKA_DEFAULT_PORT = 9092
export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const
export const MAX_PARTITIONS = 10_000
const OPTIONS = ['security_protocol', 'sasl_mechanism', 'ca', 'cert', 'key', 'servername', 'partitions'] as const

export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number]
export type SaslMechanism = (typeof SASL_MECHANISMS)[number]

export interface KafkaConnection {
  brokers: { host: string; port: number }[]
  securityProtocol: SecurityProtocol
  sasl: { mechanism: SaslMechanism; username: string; password: string } | undefined
  tls: TlsOptions | undefined
  /** Partitions of each topic the bridge creates. */
  partitions: number
}

const KAFKA_URL = /^kafka:\/\/(?:([^@/?#]*)@)?([^/?#]+)\/?(?:\?([^#]*))?$/

const fail = (message: string): never => {
  throw new ConfigError('--broker', message)
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    return fail(`the ${what} in the URL is not valid percent-encoding`)
  }
}

function parseHost(spec: string): { host: string; port: number } {
  // [::1]:9092, host:9092 or host
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d+))?$/.exec(spec)
  if (!match) return fail(`"${spec}" is not host:port`)
  const port = match[2] === undefined ? KAFKA_DEFAULT_PORT : Number(match[2])
  if (port < 1 || port > 65535) fail(`port ${match[2]} of "${spec}" is out of range`)
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port }
}

function oneOf<T extends string>(option: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    fail(`${option}: "${value}" must be one of ${allowed.join(', ')}`)
  return value as T
}

function pemFile(option: string, path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    return fail(`${option}: cannot read "${path}": ${(err as NodeJS.ErrnoException).code ?? messageOf(err)}`)
  }
}

export function parseKafkaUrl(broker: string): KafkaConnection {
  const match = KAFKA_URL.exec(broker)
  if (!match) return fail('expected kafka://host:9092[,host2:9092][?options]')
  const [, userinfo, hostList, queryText] = match as unknown as [string, string | undefined, string, string | undefined]
  const brokers = hostList
    .split(',')
    .filter((s) => s !== '')
    .map(parseHost)
  if (brokers.length === 0) fail('no bootstrap server given')
  const query = new URLSearchParams(queryText ?? '')
  for (const name of query.keys()) {
    if (!(OPTIONS as readonly string[]).includes(name))
      fail(`unknown option "${name}" (options: ${OPTIONS.join(', ')})`)
  }

  let username: string | undefined
  let password = ''
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':')
    username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'user')
    password = colon < 0 ? '' : decode(userinfo.slice(colon + 1), 'password')
  }
  const protocolText = query.get('security_protocol') ?? (username === undefined ? 'PLAINTEXT' : 'SASL_PLAINTEXT')
  const securityProtocol = oneOf('security_protocol', protocolText.toUpperCase(), SECURITY_PROTOCOLS)
  const usesSasl = securityProtocol.startsWith('SASL_')
  const usesTls = securityProtocol.endsWith('SSL')

  if (usesSasl && !username)
    fail(`security_protocol ${securityProtocol} needs a user and password: kafka://user:password@host:9092`)
  if (!usesSasl && username !== undefined)
    fail(`a user in the URL needs security_protocol SASL_PLAINTEXT or SASL_SSL, not ${securityProtocol}`)
  if (!usesSasl && query.has('sasl_mechanism'))
    fail(`sasl_mechanism needs security_protocol SASL_PLAINTEXT or SASL_SSL`)
  const mechanism = oneOf('sasl_mechanism', (query.get('sasl_mechanism') ?? 'PLAIN').toUpperCase(), SASL_MECHANISMS)

  let tls: TlsOptions | undefined
  if (usesTls) {
    tls = {}
    const ca = query.get('ca')
    const cert = query.get('cert')
    const key = query.get('key')
    if (ca !== null) tls.ca = pemFile('ca', ca)
    if (cert !== null) tls.cert = pemFile('cert', cert)
    if (key !== null) tls.key = pemFile('key', key)
    const servername = query.get('servername')
    if (servername) tls.servername = servername
  } else {
    const tlsOnly = ['ca', 'cert', 'key', 'servername'].filter((name) => query.has(name))
    if (tlsOnly.length > 0) fail(`${tlsOnly.join(', ')} need security_protocol SSL or SASL_SSL`)
  }

  const partitionsText = query.get('partitions') ?? '1'
  const partitions = Number(partitionsText)
  if (!/^\d+$/.test(partitionsText) || partitions < 1 || partitions > MAX_PARTITIONS) {
    fail(`partitions: "${partitionsText}" must be an integer from 1 to ${MAX_PARTITIONS}`)
  }

  return {
    brokers,
    securityProtocol,
    sasl: usesSasl ? { mechanism, username: username!, password } : undefined,
    tls,
    partitions,
  }
}

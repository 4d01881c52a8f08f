/**
 * The amqp:// or amqps:// broker URL. TLS settings come from the URL query,
 * spelt like RabbitMQ's own URI query parameters
 * (https://www.rabbitmq.com/docs/uri-query-parameters): `cacertfile`,
 * `certfile`, `keyfile` (PEM file paths, read once when the transport is
 * created), `verify=verify_none` to skip certificate checks (default
 * `verify_peer`), `server_name_indication=<host>` to override SNI and the
 * name checked. Without `cacertfile`, Node's own CA list is used.
 * `heartbeat=<seconds>` in the query overrides the default of 10.
 */
import { readFileSync } from 'node:fs'
import type { SocketOptions } from 'amqplib'
import { ConfigError, messageOf } from '../../../shared/errors.ts'

export const DEFAULT_HEARTBEAT_SECONDS = 10

const TLS_PARAMS = ['cacertfile', 'certfile', 'keyfile', 'verify', 'server_name_indication'] as const

/** Splits the broker URL into what amqplib takes and TLS socket options. */
export function parseRabbitUrl(broker: string): { url: string; tls: SocketOptions; password: string } {
  const url = new URL(broker)
  const query = url.searchParams
  const tls: SocketOptions = {}
  const file = (param: string): Buffer | undefined => {
    const path = query.get(param)
    if (path === null) return undefined
    try {
      return readFileSync(path)
    } catch (err) {
      throw new ConfigError(
        '--broker',
        `${param}: cannot read "${path}": ${(err as NodeJS.ErrnoException).code ?? messageOf(err)}`,
      )
    }
  }
  if (url.protocol === 'amqps:') {
    const ca = file('cacertfile')
    const cert = file('certfile')
    const key = file('keyfile')
    if (ca) tls.ca = ca
    if (cert) tls.cert = cert
    if (key) tls.key = key
    const verify = query.get('verify')
    if (verify !== null && verify !== 'verify_peer' && verify !== 'verify_none') {
      throw new ConfigError('--broker', `verify: "${verify}" must be verify_peer or verify_none`)
    }
    if (verify === 'verify_none') tls.rejectUnauthorized = false
    const sni = query.get('server_name_indication')
    if (sni) tls.servername = sni
  } else if (TLS_PARAMS.some((p) => query.has(p))) {
    throw new ConfigError('--broker', `TLS settings (${TLS_PARAMS.join(', ')}) need an amqps:// URL`)
  }
  for (const param of TLS_PARAMS) query.delete(param)
  if (!query.has('heartbeat')) query.set('heartbeat', String(DEFAULT_HEARTBEAT_SECONDS))
  return { url: url.toString(), tls, password: decodeURIComponent(url.password) }
}

/**
 * The pulsar:// or pulsar+ssl:// broker URL, for both Pulsar transports. For
 * `pulsar+ssl://` URLs the query takes the parameters of Pulsar's own
 * clients: `tlsTrustCertsFilePath`, `tlsValidateHostname=true`,
 * `tlsAllowInsecureConnection=true`.
 */
import { existsSync } from 'node:fs'
import { ConfigError } from '../../../shared/errors.ts'

const TLS_PARAMS = ['tlsTrustCertsFilePath', 'tlsValidateHostname', 'tlsAllowInsecureConnection'] as const

/** The service URL and TLS settings from the broker URL's query. */
export function parsePulsarUrl(broker: string): {
  serviceUrl: string
  tls: { caFile?: string; validateHostname: boolean; allowInsecure: boolean } | undefined
} {
  const url = new URL(broker)
  const query = url.searchParams
  const flag = (name: string): boolean => {
    const value = query.get(name)
    if (value === null) return false
    if (value !== 'true' && value !== 'false')
      throw new ConfigError('--broker', `${name}: "${value}" must be true or false`)
    return value === 'true'
  }
  for (const key of query.keys()) {
    if (!(TLS_PARAMS as readonly string[]).includes(key))
      throw new ConfigError('--broker', `unknown setting "${key}" (known: ${TLS_PARAMS.join(', ')})`)
  }
  if (url.pathname !== '' && url.pathname !== '/')
    throw new ConfigError('--broker', `a Pulsar service URL has no path ("${url.pathname}"): pulsar://host:6650`)
  const serviceUrl = `${url.protocol}//${url.host}`
  if (url.protocol !== 'pulsar+ssl:') {
    if (query.size > 0)
      throw new ConfigError('--broker', `TLS settings (${TLS_PARAMS.join(', ')}) need a pulsar+ssl:// URL`)
    return { serviceUrl, tls: undefined }
  }
  const caFile = query.get('tlsTrustCertsFilePath') ?? undefined
  if (caFile !== undefined && !existsSync(caFile))
    throw new ConfigError('--broker', `tlsTrustCertsFilePath: cannot read "${caFile}"`)
  return {
    serviceUrl,
    tls: { caFile, validateHostname: flag('tlsValidateHostname'), allowInsecure: flag('tlsAllowInsecureConnection') },
  }
}

/** Broker URLs in logs and errors (bridge/transports/redact.ts): no secret survives, the rest stays readable. */
import { describe, expect, it } from 'vitest'
import { redact } from '../../bridge/transports/redact.ts'

describe('redact', () => {
  it('replaces a password and keeps the user, host and path', () => {
    expect(redact('amqp://tg:s3cret@rabbit:5672/vhost')).toBe('amqp://tg:***@rabbit:5672/vhost')
  })

  it('replaces a user name that stands alone, where a token is often put', () => {
    expect(redact('pulsar+ssl://eyJhbGciOi.token@pulsar:6651')).toBe('pulsar+ssl://***@pulsar:6651')
  })

  it('replaces query parameters that name a secret, and keeps the others', () => {
    expect(redact('amqps://tg@rabbit:5671/?password=s3cret&heartbeat=10')).toBe(
      'amqps://***@rabbit:5671/?password=***&heartbeat=10',
    )
    expect(redact('kafka://broker:9092?sasl_token=abc&client_id=tb')).toBe(
      'kafka://broker:9092?sasl_token=***&client_id=tb',
    )
    expect(redact('pulsar://p:6650?tlsTrustCertsFilePath=/etc/ca.pem')).toBe(
      'pulsar://p:6650?tlsTrustCertsFilePath=/etc/ca.pem',
    )
  })

  it('leaves a URL without secrets as it is', () => {
    expect(redact('amqp://rabbit:5672/')).toBe('amqp://rabbit:5672/')
  })

  it('still hides secrets in text that is not a URL', () => {
    expect(redact('not a url //user:pw@host?apiKey=k')).toBe('not a url //***@host?apiKey=***')
  })

  it('knows a secret parameter by any of its words, in any case', () => {
    const names = [
      'password',
      'sasl.PASSWORD',
      'passwd',
      'client_secret',
      'access_token',
      'api_key',
      'sslKey',
      'auth',
      'authParams',
      'credentials',
      'X-Amz-Signature',
      'sig',
    ]
    for (const name of names) {
      expect(redact(`pulsar://p:6650/?${name}=hidden&topic=t`)).toBe(`pulsar://p:6650/?${name}=***&topic=t`)
      expect(redact(`not a url ?topic=t&${name}=hidden&x=1`)).toBe(`not a url ?topic=t&${name}=***&x=1`)
    }
  })

  it('in text that is not a URL, hides every secret parameter and its whole value, and nothing else', () => {
    expect(redact('bad url ?token=a b c&user=tg&password=p w&port=1')).toBe(
      'bad url ?token=***&user=tg&password=***&port=1',
    )
    expect(redact('bad url ?password=')).toBe('bad url ?password=***')
    expect(redact('bad url ?topic=password')).toBe('bad url ?topic=password')
  })

  it('in text that is not a URL, hides the user part only, never an @ further on', () => {
    expect(redact('bad url //tok@host/path@x')).toBe('bad url //***@host/path@x')
    expect(redact('bad url //host/path@x')).toBe('bad url //host/path@x')
    expect(redact('bad url //@host')).toBe('bad url //***@host')
  })

  it('keeps the rest of a URL as it was written, escapes and all', () => {
    expect(redact('amqp://tg:pw@rabbit:5672/%2A%2A%2A?name=%2A%2A%2A')).toBe(
      'amqp://tg:***@rabbit:5672/%2A%2A%2A?name=%2A%2A%2A',
    )
  })
})

/**
 * The command line's shared options and the settings a command resolves:
 * each option defined once, --timeout read by one parser, and "no HTTP
 * gateway" as a setting rather than a pretend `--port off`.
 */
import { Command } from 'commander'
import { describe, expect, it } from 'vitest'
import { ConfigError, ToolbridgeError } from '../../shared/errors.ts'
import { EMBEDDED_DEFAULT_PORT, resolveSettings } from '../../bridge/project/settings.ts'
import { addBrokerOptions, addInvokerOptions, mcpEndpoint, timeoutMs, timeoutOption } from '../../bridge/cli/options.ts'
import { thrownBy } from '../support/thrown.ts'

describe('timeoutMs', () => {
  it('reads seconds, fractions included, as milliseconds', () => {
    expect(timeoutMs('60')).toBe(60_000)
    expect(timeoutMs('0.25')).toBe(250)
  })

  it.each(['0', '-1', 'soon', '', 'NaN'])('refuses %j as a config error naming --timeout', (value) => {
    const error = thrownBy(() => timeoutMs(value))
    expect(error).toBeInstanceOf(ToolbridgeError)
    expect(error).toMatchObject({
      kind: 'config',
      message: `--timeout: "${value}" must be a positive number of seconds`,
    })
  })

  it('is given its default in seconds, as the flag is spelled', () => {
    const command = new Command('x').addOption(timeoutOption('how long', 60)).exitOverride()
    command.parse([], { from: 'user' })
    expect(timeoutMs(command.opts<{ timeout: string }>().timeout)).toBe(60_000)
    command.parse(['--timeout', '2'], { from: 'user' })
    expect(timeoutMs(command.opts<{ timeout: string }>().timeout)).toBe(2_000)
  })
})

describe('mcpEndpoint', () => {
  it('is undefined without --mcp-url, and carries the token when there is one', () => {
    expect(mcpEndpoint(undefined, 't')).toBeUndefined()
    expect(mcpEndpoint('http://toolbridge:8080/mcp', undefined)).toStrictEqual({ url: 'http://toolbridge:8080/mcp' })
    expect(mcpEndpoint('https://tb/mcp', 't0k')).toStrictEqual({ url: 'https://tb/mcp', authToken: 't0k' })
  })

  it('refuses what is not an http(s) URL', () => {
    expect(() => mcpEndpoint('toolbridge:8080', undefined)).toThrow(
      '--mcp-url: "toolbridge:8080" must be an http:// or https:// URL',
    )
    expect(() => mcpEndpoint('not a url', undefined)).toThrow('--mcp-url: "not a url" is not a URL')
  })
})

describe('option groups', () => {
  const longs = (command: Command) => command.options.map((o) => o.long)

  it('--broker comes with the options of particular brokers', () => {
    expect(longs(addBrokerOptions(new Command('x')))).toStrictEqual([
      '--broker',
      '--pulsar-token',
      '--pulsar-listener',
      '--pulsar-client',
    ])
  })

  it('where functions run comes as --invoker with the Lambda options', () => {
    expect(longs(addInvokerOptions(new Command('x')))).toStrictEqual([
      '--invoker',
      '--lambda-endpoint',
      '--lambda-retry-window',
    ])
  })
})

describe('where functions run', () => {
  it("has one name per place, worker-threads by default; 0.2.0's name for it is refused with the new one", () => {
    expect(resolveSettings({}, {}).invoker).toBe('worker-threads')
    expect(resolveSettings({}, { TOOLBRIDGE_INVOKER: 'in-process' }).invoker).toBe('in-process')
    expect(resolveSettings({ invoker: 'lambda' }, { TOOLBRIDGE_INVOKER: 'in-process' }).invoker).toBe('lambda')
    expect((thrownBy(() => resolveSettings({}, { TOOLBRIDGE_INVOKER: 'local' })) as Error).message).toBe(
      '--invoker: "local" is now called "worker-threads": use --invoker worker-threads',
    )
  })
})

describe('the HTTP gateway in settings', () => {
  it('is on by default on the embedded broker, off by default on another', () => {
    expect(resolveSettings({}, {}).port).toBe(EMBEDDED_DEFAULT_PORT)
    expect(resolveSettings({ broker: 'amqp://localhost' }, {}).port).toBeUndefined()
  })

  it('is turned off by --port off or an empty --port, and by TOOLBRIDGE_PORT the same way', () => {
    expect(resolveSettings({ port: 'off' }, {}).port).toBeUndefined()
    expect(resolveSettings({ port: '' }, {}).port).toBeUndefined()
    expect(resolveSettings({}, { TOOLBRIDGE_PORT: 'off' }).port).toBeUndefined()
    expect(resolveSettings({}, { TOOLBRIDGE_PORT: '' }).port).toBeUndefined()
    expect(resolveSettings({ port: '0' }, {}).port).toBe(0)
    expect(() => resolveSettings({ port: 'eighty' }, {})).toThrow(ConfigError)
  })

  it('is never opened for a command that only calls tools, whatever --port or TOOLBRIDGE_PORT say', () => {
    expect(resolveSettings({}, {}, { gateway: false }).port).toBeUndefined()
    expect(resolveSettings({ port: '8081' }, {}, { gateway: false }).port).toBeUndefined()
    expect(resolveSettings({}, { TOOLBRIDGE_PORT: 'not-a-port' }, { gateway: false }).port).toBeUndefined()
    // Everything else is read as for `start`.
    expect(resolveSettings({ invoker: 'in-process' }, { TOOLBRIDGE_WORKSPACE: 'w' }, { gateway: false })).toMatchObject(
      { invoker: 'in-process', workspace: 'w' },
    )
  })
})

/**
 * An in-process function that fails after it returned (a timer that throws,
 * a promise left rejected) against `toolbridge start --invoker in-process`
 * in a child process: the error is the process's own, and the bridge must
 * log it and keep serving rather than exit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StartedBridge } from '../support/started-bridge.ts'

const HARDENING_YML = 'test/fixtures/hardening/serverless.yml'

describe('toolbridge start --invoker in-process, with a function that fails after returning', () => {
  const bridge = new StartedBridge([
    '--config',
    HARDENING_YML,
    'start',
    '--port',
    '0',
    '--log-level',
    'warn',
    '--invoker',
    'in-process',
  ])
  let url = ''

  const until = async (condition: () => boolean) => {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const logLines = () =>
    bridge.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; err?: string; uncaught?: number })
      .filter((line) => line.msg.includes('keeps serving'))
  const call = async (args: Record<string, unknown>) => {
    const response = await fetch(`${url}/tools/late-throw`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: args }),
    })
    return (await response.text()).trim()
  }

  beforeAll(async () => {
    url = await bridge.url()
  })
  afterAll(() => bridge.stop())

  it('logs an exception thrown from a timer after the answer, counts it, and keeps serving', async () => {
    expect(await call({})).toBe('{"response":"returned"}')
    await until(() => logLines().length >= 1 || !bridge.running)
    expect(bridge.running).toBe(true)
    expect(logLines()).toEqual([expect.objectContaining({ err: 'thrown later', uncaught: 1 })])
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })

  it('does the same for a promise the function left rejected', async () => {
    expect(await call({ reject: true })).toBe('{"response":"returned"}')
    await until(() => logLines().length >= 2 || !bridge.running)
    expect(bridge.running).toBe(true)
    expect(logLines()[1]).toMatchObject({ err: 'rejected later', uncaught: 2 })
    expect(await call({})).toBe('{"response":"returned"}')
  })
})

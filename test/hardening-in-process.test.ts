/**
 * An in-process function that fails after it returned (a timer that throws,
 * a promise left rejected) against `toolbridge start --invoker in-process`
 * in a child process: the error is the process's own, and the bridge must
 * log it and keep serving rather than exit.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const HARDENING_YML = 'test/fixtures/hardening/serverless.yml'
/** A fail-safe against a hung child, not a limit on how fast it must be. */
const CHILD_TIMEOUT_MS = 60_000

const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_')))

describe('toolbridge start --invoker in-process, with a function that fails after returning', () => {
  const child = spawn(
    process.execPath,
    [
      'bridge/cli/main.ts',
      '--config',
      HARDENING_YML,
      'start',
      '--port',
      '0',
      '--log-level',
      'warn',
      '--invoker',
      'in-process',
    ],
    { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'], timeout: CHILD_TIMEOUT_MS },
  )
  let stdout = ''
  let stderr = ''
  let exited = false
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text))
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text))
  child.once('exit', () => (exited = true))
  let url = ''

  const until = async (condition: () => boolean) => {
    while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const logLines = () =>
    stderr
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
    await until(() => /^ {2}HTTP: http:\/\/127\.0\.0\.1:\d+\/tools\b/m.test(stdout) || exited)
    const match = /^ {2}HTTP: (http:\/\/127\.0\.0\.1:\d+)\/tools\b/m.exec(stdout)
    if (!match) throw new Error(`toolbridge start exited before serving:\n${stdout}${stderr}`)
    url = match[1]!
  })
  afterAll(async () => {
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await gone
    }
  })

  it('logs an exception thrown from a timer after the answer, counts it, and keeps serving', async () => {
    expect(await call({})).toBe('{"response":"returned"}')
    await until(() => logLines().length >= 1 || exited)
    expect(exited).toBe(false)
    expect(logLines()).toEqual([expect.objectContaining({ err: 'thrown later', uncaught: 1 })])
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
  })

  it('does the same for a promise the function left rejected', async () => {
    expect(await call({ reject: true })).toBe('{"response":"returned"}')
    await until(() => logLines().length >= 2 || exited)
    expect(exited).toBe(false)
    expect(logLines()[1]).toMatchObject({ err: 'rejected later', uncaught: 2 })
    expect(await call({})).toBe('{"response":"returned"}')
  })
})

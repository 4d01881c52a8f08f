/**
 * What the command loads before it does anything: each broker client, the
 * MCP SDK, the AWS SDK, prom-client and pino are imported only by the
 * commands and settings that use them. Checked by the modules a child
 * process actually loads (recorded by a module hook), not by time.
 */
import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StartedBridge } from '../support/started-bridge.ts'
import { cleanEnv } from '../support/clean-env.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CHILD_TIMEOUT_MS = 30_000

/** Registered before the command's first module: prints every module URL it loads to stderr at exit. */
const RECORD_LOADS = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module'
const loaded = new Set()
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context) } })
process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify([...loaded]) + '\\n'))
`)}`

const HEAVY = [
  '@platformatic/kafka',
  'amqplib',
  'pulsar-client',
  '@modelcontextprotocol/sdk',
  '@aws-sdk',
  'prom-client',
  'pino',
  'pino-pretty',
]

/** The packages under node_modules a run of `toolbridge ...args` loaded, and its exit code. */
function packagesLoaded(...args: string[]): Promise<{ code: number; packages: Set<string>; stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', RECORD_LOADS, 'bridge/cli/toolbridge.js', ...args],
      { cwd: ROOT, env: cleanEnv(), timeout: CHILD_TIMEOUT_MS },
      (error, stdout, stderr) => {
        try {
          resolve({ code: error ? Number(error.code) : 0, packages: packagesIn(stderr), stdout })
        } catch (err) {
          reject(err)
        }
      },
    )
  })
}

/** The packages under node_modules in the record RECORD_LOADS printed. */
function packagesIn(stderr: string): Set<string> {
  const line = stderr.split('\n').find((l) => l.startsWith('LOADED '))
  if (!line) throw new Error(`no record of loaded modules; stderr:\n${stderr}`)
  const urls = JSON.parse(line.slice('LOADED '.length)) as string[]
  return new Set(urls.flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.slice(1) ?? []))
}

const heavyIn = (packages: Set<string>) =>
  HEAVY.filter((name) => [...packages].some((p) => p === name || p.startsWith(`${name}/`)))

describe('start-up loads only what the command needs', () => {
  let gateway: Server
  let url: string

  beforeAll(async () => {
    // Stands in for a running `toolbridge start`: /tools lists tell-joke, a call answers in one NDJSON line.
    gateway = createServer((req, res) => {
      res.setHeader('content-type', 'application/json')
      if (req.method === 'GET') return res.end(JSON.stringify({ tools: [{ name: 'tell-joke' }] }))
      res.end(JSON.stringify({ response: 'a joke' }) + '\n')
    })
    await new Promise<void>((listening) => gateway.listen(0, '127.0.0.1', listening))
    url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((closed) => gateway.close(() => closed())))

  it('--help loads commander and nothing heavy', async () => {
    const run = await packagesLoaded('--help')
    expect(run.code).toBe(0)
    expect(run.packages.has('commander')).toBe(true) // the hook does see packages
    expect(heavyIn(run.packages)).toEqual([])
    expect(run.packages.has('yaml')).toBe(false) // serverless.yml is not read for help
  })

  it('descriptors reads serverless.yml without any broker, MCP, AWS or metrics library', async () => {
    const run = await packagesLoaded('descriptors')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toHaveProperty('tool-service')
    expect(run.packages.has('yaml')).toBe(true)
    expect(heavyIn(run.packages)).toEqual([])
  })

  it('invoke --url calls through the running bridge without a broker client or the bridge itself', async () => {
    const run = await packagesLoaded('invoke', 'tell-joke', '-a', 'topic=x', '--url', url)
    expect(run.stdout).toBe('a joke\n')
    expect(run.code).toBe(0)
    expect(heavyIn(run.packages)).toEqual([])
  })

  it('start on the embedded broker loads prom-client and pino, and no broker client, MCP SDK or AWS SDK until /mcp is called', async () => {
    const bridge = new StartedBridge(['start', '--port', '0'], {
      entry: 'bridge/cli/toolbridge.js',
      nodeArgs: ['--import', RECORD_LOADS],
    })
    const url = await bridge.url()
    const answer = await fetch(`${url}/tools/tell-joke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"arguments":{"topic":"x"}}',
    })
    expect(answer.status).toBe(200)
    await answer.text()
    await bridge.stop('SIGTERM')
    expect(heavyIn(packagesIn(bridge.stderr))).toEqual(['prom-client', 'pino'])
  })
})

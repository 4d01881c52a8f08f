/**
 * The MCP project's own conformance suite (@modelcontextprotocol/conformance) against `/mcp`
 * of a running toolbridge, serving test/fixtures/mcp-conformance (the tools its scenarios
 * call, as ordinary functions in worker threads). Every server scenario of each revision the
 * suite knows runs; those outside a tool bridge are listed, with why, in expected-failures.yaml.
 * The suite's own baseline check fails the run on a scenario that fails or warns and is not
 * listed, and on one listed that now passes; each scenario expected to pass is also checked here
 * to have run and passed with no warning, so that a scenario the suite skipped cannot pass unseen.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp-conformance/', import.meta.url))
const BASELINE = join(FIXTURE, 'expected-failures.yaml')
const SUITE = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url),
)
const expected = new Set<string>((parse(readFileSync(BASELINE, 'utf8')) as { server: string[] }).server)

/** The scenarios of 2025-06-18 that apply to a tool bridge; each later revision keeps them. */
const FIRST_REVISION = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'tools-call-with-progress',
  'tools-call-with-logging',
  'logging-set-level',
]

/** What each revision's run must pass: the scenarios that apply to a tool bridge. */
const APPLICABLE: Record<string, string[]> = {
  '2025-06-18': FIRST_REVISION,
  '2025-11-25': [
    ...FIRST_REVISION,
    'json-schema-2020-12',
    'server-sse-polling',
    'server-sse-multiple-streams',
    'dns-rebinding-protection',
  ],
}

interface Check {
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO'
  id: string
  errorMessage?: string
}

function runSuite(url: string, specVersion: string, outputDir: string) {
  return new Promise<{ code: number; stdout: string }>((resolve) =>
    execFile(
      process.execPath,
      [SUITE, 'server', '--url', url, '--suite', 'all', '--spec-version', specVersion].concat([
        '--expected-failures',
        BASELINE,
        '-o',
        outputDir,
      ]),
      { maxBuffer: 16 * 1024 * 1024 },
      (err, stdout) => resolve({ code: err ? ((err.code as number | undefined) ?? 1) : 0, stdout }),
    ),
  )
}

/** Each scenario's checks, from the folders the suite wrote (`server-<scenario>-<time>/checks.json`). */
function checksByScenario(outputDir: string): Map<string, Check[]> {
  const found = new Map<string, Check[]>()
  for (const folder of readdirSync(outputDir)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(folder)?.[1]
    if (scenario === undefined) continue
    found.set(scenario, JSON.parse(readFileSync(join(outputDir, folder, 'checks.json'), 'utf8')) as Check[])
  }
  return found
}

describe('the MCP conformance suite against /mcp', () => {
  let runtime: Runtime
  const outputDirs: string[] = []
  beforeAll(async () => {
    runtime = await startRuntime(loadProject(join(FIXTURE, 'serverless.yml')), resolveSettings({ port: '0' }, {}))
  })
  afterAll(async () => {
    await runtime?.stop()
    for (const dir of outputDirs) rmSync(dir, { recursive: true, force: true })
  })

  for (const [specVersion, applicable] of Object.entries(APPLICABLE)) {
    it(`passes every scenario of ${specVersion} that applies to a tool bridge, with no warning`, async () => {
      const outputDir = mkdtempSync(join(tmpdir(), 'toolbridge-conformance-'))
      outputDirs.push(outputDir)
      // The suite's DNS-rebinding scenario needs a localhost URL: the gateway listens on 127.0.0.1.
      const { code, stdout } = await runSuite(`${runtime.gateway!.url}/mcp`, specVersion, outputDir)
      const summary = stdout.slice(stdout.indexOf('=== SUMMARY ==='))
      expect(summary, summary).toContain('Baseline check passed')
      expect(code, summary).toBe(0)
      const checks = checksByScenario(outputDir)
      for (const scenario of applicable) {
        expect(expected.has(scenario), `${scenario} is in the baseline`).toBe(false)
        const ran = checks.get(scenario) ?? []
        const faults = ran.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
        expect(faults, `${scenario}: ${JSON.stringify(faults)}`).toEqual([])
        expect(ran.filter((c) => c.status === 'SUCCESS').length, `${scenario} passed no check`).toBeGreaterThan(0)
      }
      // Nothing else ran unlisted: every scenario outside the applicable ones is one the baseline explains.
      for (const scenario of checks.keys()) if (!applicable.includes(scenario)) expect(expected).toContain(scenario)
    }, 180_000)
  }
})

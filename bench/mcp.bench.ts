/**
 * toolbridge's /mcp and /tools against a plain MCP server on the official
 * SDK that calls the same function directly, measured in the same run.
 *
 *   npm run bench:mcp
 *
 * Servers, each in a process of its own (bench/mcp-server.ts), so that the
 * CPU time read for a call is its server's alone:
 *
 * - `plain-sdk`: what a user writes without toolbridge: @modelcontextprotocol/server's
 *   createMcpHandler (stateless, an McpServer per request, in both eras) on
 *   node:http, the tell-joke tool registered with its JSON Schema, its
 *   callback calling functions/joke's Lambda handler in the same process.
 * - `toolbridge` on each invoker of BENCH_INVOKERS: startRuntime() on
 *   serverless.yml as it is (joke-service's concurrency and all), on the
 *   embedded broker. Its routes are measured as `toolbridge-mcp <invoker>`
 *   (/mcp) and `toolbridge-tools <invoker>` (POST /tools/tell-joke, NDJSON).
 *
 * The load is this process's: `in-flight` callers on node:http keep-alive
 * connections (one each), each sending its next request when its previous
 * answer has arrived whole; every answer is checked (status, and the joke's
 * text exactly; a wrong one counts as an error). Per era, what a client of
 * that era sends:
 *
 * - 2026-07-28: one POST per call, `tools/call` with the per-request `_meta`
 *   envelope and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers;
 *   no handshake, no session.
 * - 2025-11-25: `initialize` and `notifications/initialized` once per cell,
 *   not timed; then one POST per call with MCP-Protocol-Version and, when
 *   the server gave one (toolbridge does, the stateless plain server does
 *   not), Mcp-Session-Id; the session is deleted after the cell. Answers
 *   come as SSE.
 *
 * For each in-flight level, every route is measured once a round, the
 * order rotated every round; BENCH_ROUNDS rounds; the tables report the
 * median over rounds and the range of req/s. A cell is the shared closed
 * loop (bench/closed-loop.ts measure): a warm-up, then BENCH_SECONDS measured,
 * latency being performance.now() around each call, percentiles nearest-rank.
 * Server CPU per call is the server process's utime + stime
 * (/proc/<pid>/stat, all its threads, worker threads included) read just
 * before and just after the measured loop, over the calls answered; RSS is
 * read after each cell. Client CPU is this process's own.
 *
 * Targets (reported, never asserted): MCP through toolbridge on the
 * default invoker (worker-threads) at >= 1.0x the plain SDK server's req/s
 * and <= 1.0x its server CPU per call, in each era, at every in-flight
 * level. /tools rows are set against plain-sdk at 2026-07-28 (the cheapest
 * MCP call: one POST, no session).
 *
 * The client, the server and (worker-threads) its workers share the
 * machine's cores: at 16 and 64 in flight on a small machine, req/s is
 * bound by the CPU per call of client and server together; server CPU per
 * call moves far less with other load than req/s does.
 *
 * Environment:
 *   BENCH_SECONDS          measured seconds per cell (default 5)
 *   BENCH_WARMUP_SECONDS   warm-up seconds per cell (default 1)
 *   BENCH_ROUNDS           rounds per in-flight level (default 5)
 *   BENCH_INFLIGHT         in-flight levels, comma separated (default 1,16,64)
 *   BENCH_ERAS             MCP eras, comma separated (default 2026-07-28,2025-11-25)
 *   BENCH_INVOKERS         toolbridge invokers, comma separated (default worker-threads,in-process)
 *   BENCH_TOOLS            1 to measure POST /tools/<tool> too, 0 not to (default 1)
 *   BENCH_OUT              where to write the JSON (default bench/results/mcp.json, git-ignored)
 */
import { type ChildProcess, fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Agent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http'
import { resolve } from 'node:path'
import { LOCAL_INVOKERS, type InvokerKind } from '../bridge/project/settings.ts'
import { envWithoutToolbridgeSettings, stopForkedChild } from './child-processes.ts'
import { type Call, inRotation, type LoopStats, measure, type RoundsStats, roundsStats } from './closed-loop.ts'
import { processCpuUs, processCpuUsOf, rssMiB } from './cpu-and-memory.ts'
import { invokersEnv, listEnv, numberEnv, roundsSettings } from './env-settings.ts'
import { ARGUMENTS, jokeAnswer, loadJokeTool, SERVICE_ID, TOOL_NAME } from './joke-tool.ts'
import { describeMachine, loadAverage, machineInfo } from './machine.ts'
import type { ServerReady, ToServer } from './mcp-server.ts'
import { ROOT } from './project-root.ts'
import { writeBenchResults } from './results-file.ts'
import { runBench } from './run-bench.ts'
import { median } from './statistics.ts'
import { type Column, fmt, fmtInt, printTableByInFlight, throughputColumns } from './tables.ts'

// ---------------------------------------------------------------- settings

const MODERN = '2026-07-28'
const LEGACY = '2025-11-25'
const ERA_NAMES = [MODERN, LEGACY] as const
type Era = (typeof ERA_NAMES)[number]

const RUN = roundsSettings('mcp', { seconds: 5, warmupSeconds: 1, rounds: 5, inFlight: '1,16,64' })
const ERAS = listEnv('BENCH_ERAS', ERA_NAMES.join(',')).map((s) => {
  if (!(ERA_NAMES as readonly string[]).includes(s))
    throw new Error(`BENCH_ERAS: "${s}" must be one of ${ERA_NAMES.join(', ')}`)
  return s as Era
})
const INVOKERS = invokersEnv('BENCH_INVOKERS', LOCAL_INVOKERS.join(',')).map((s) => {
  if (!(LOCAL_INVOKERS as readonly string[]).includes(s))
    throw new Error(`BENCH_INVOKERS: "${s}" must be one of ${LOCAL_INVOKERS.join(', ')}`)
  return s
})
const WITH_TOOLS = numberEnv('BENCH_TOOLS', 1, 0) !== 0

const TARGETS = { throughputRatio: 1.0, cpuRatio: 1.0, invoker: 'worker-threads' as InvokerKind }
const STARTUP_TIMEOUT_MS = 60_000
const CALL_TIMEOUT_MS = 10_000

// ---------------------------------------------------------------- servers

type ServerName = 'plain-sdk' | `toolbridge ${InvokerKind}`

interface ServerProcess {
  name: ServerName
  pid: number
  url: URL
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()

/** bench/mcp-server.ts in a process of its own; resolves once it listens. */
async function startServer(name: ServerName): Promise<ServerProcess> {
  const args = name === 'plain-sdk' ? ['plain-sdk'] : ['toolbridge', name.slice('toolbridge '.length)]
  const child = fork(resolve(ROOT, 'bench/mcp-server.ts'), args, {
    cwd: ROOT,
    env: envWithoutToolbridgeSettings(),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  children.add(child)
  const ready = await new Promise<ServerReady>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not listening after 60 s`)), STARTUP_TIMEOUT_MS)
    child.once('message', (message: ServerReady) => {
      clearTimeout(timer)
      resolveReady(message)
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${name}: exited (${code}) before listening`))
    })
  })
  return {
    name,
    pid: child.pid!,
    url: new URL(ready.url),
    async stop() {
      await stopForkedChild(child, { type: 'stop' } satisfies ToServer, 10_000)
      children.delete(child)
    },
  }
}

// ---------------------------------------------------------------- the client

interface Answer {
  status: number
  sessionId: string | undefined
  text: string
}

/** One POST on `agent`'s keep-alive connections, its answer read whole. */
function post(agent: Agent, url: URL, path: string, headers: OutgoingHttpHeaders, body: string): Promise<Answer> {
  return new Promise<Answer>((resolveAnswer, reject) => {
    const req = httpRequest(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        timeout: CALL_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const session = res.headers['mcp-session-id']
          resolveAnswer({
            status: res.statusCode ?? 0,
            sessionId: typeof session === 'string' ? session : undefined,
            text: Buffer.concat(chunks).toString('utf8'),
          })
        })
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CALL_TIMEOUT_MS / 1000} s`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** A JSON-RPC message from a JSON body, or the last `data:` of an SSE stream. */
function jsonRpcOf(answer: Answer): { result?: Record<string, unknown>; error?: { message: string } } {
  if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${answer.text.slice(0, 200)}`)
  let json = answer.text
  if (!json.startsWith('{')) {
    const at = json.lastIndexOf('data: {')
    if (at < 0) throw new Error(`no JSON-RPC message in ${JSON.stringify(json.slice(0, 200))}`)
    const end = json.indexOf('\n', at)
    json = json.slice(at + 6, end < 0 ? undefined : end)
  }
  return JSON.parse(json)
}

function checkToolResult(answer: Answer, expected: string): void {
  const message = jsonRpcOf(answer)
  if (message.error) throw new Error(`JSON-RPC error: ${message.error.message}`)
  const result = message.result as { content?: { text?: string }[]; isError?: boolean } | undefined
  const text = result?.content?.[0]?.text
  if (result?.isError || text !== expected) throw new Error(`unexpected result ${JSON.stringify(result)}`)
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const CALL_PARAMS = { name: TOOL_NAME, arguments: ARGUMENTS }

/** A route's calls for one cell: `call` checked, `end` after the cell. */
interface Caller {
  call: Call
  end(): Promise<void>
}

let nextId = 1

/** The text of a tools/call with the next id; `params` already JSON. */
const toolsCall = (params: string) => `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":${params}}`

async function modernCaller(agent: Agent, url: URL, expected: string): Promise<Caller> {
  const params = JSON.stringify({
    ...CALL_PARAMS,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientInfo': { name: 'mcp-bench', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  })
  const headers = { ...JSON_HEADERS, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': TOOL_NAME }
  return {
    call: async () => checkToolResult(await post(agent, url, '/mcp', headers, toolsCall(params)), expected),
    end: async () => {},
  }
}

async function legacyCaller(agent: Agent, url: URL, expected: string): Promise<Caller> {
  const init = await post(
    agent,
    url,
    '/mcp',
    JSON_HEADERS,
    JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'mcp-bench', version: '1' } },
    }),
  )
  const protocolVersion = jsonRpcOf(init).result?.protocolVersion
  if (protocolVersion !== LEGACY) throw new Error(`initialize answered ${init.text.slice(0, 200)}`)
  const session = init.sessionId
  const headers = {
    ...JSON_HEADERS,
    'mcp-protocol-version': LEGACY,
    ...(session === undefined ? {} : { 'mcp-session-id': session }),
  }
  const initialized = await post(agent, url, '/mcp', headers, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  if (initialized.status !== 202) throw new Error(`notifications/initialized answered ${initialized.status}`)
  const params = JSON.stringify(CALL_PARAMS)
  return {
    call: async () => checkToolResult(await post(agent, url, '/mcp', headers, toolsCall(params)), expected),
    async end() {
      if (session === undefined) return
      await new Promise<void>((done) => {
        const req = httpRequest(
          { agent, host: url.hostname, port: url.port, path: '/mcp', method: 'DELETE', headers },
          (res) => res.resume().on('end', done),
        )
        req.on('error', () => done())
        req.end()
      })
    },
  }
}

async function toolsCaller(agent: Agent, url: URL, expected: string): Promise<Caller> {
  const body = JSON.stringify({ arguments: ARGUMENTS })
  const headers = { 'content-type': 'application/json' }
  const path = `/tools/${TOOL_NAME}`
  return {
    async call() {
      const answer = await post(agent, url, path, headers, body)
      if (answer.status !== 200) throw new Error(`HTTP ${answer.status}: ${answer.text.slice(0, 200)}`)
      const lines = answer.text.trimEnd().split('\n')
      const last = JSON.parse(lines[lines.length - 1]!) as { response?: string }
      if (last.response !== expected) throw new Error(`unexpected answer ${answer.text.slice(0, 200)}`)
    },
    end: async () => {},
  }
}

// ---------------------------------------------------------------- routes and cells

/** What a table groups rows by: an MCP era, or /tools. */
type Group = Era | 'tools'

interface Route {
  /** As the tables name it. */
  setup: string
  group: Group
  server: ServerName
  caller(agent: Agent, url: URL, expected: string): Promise<Caller>
}

function routes(): Route[] {
  const list: Route[] = []
  for (const era of ERAS) {
    const caller = era === MODERN ? modernCaller : legacyCaller
    list.push({ setup: 'plain-sdk', group: era, server: 'plain-sdk', caller })
    for (const invoker of INVOKERS)
      list.push({ setup: `toolbridge-mcp ${invoker}`, group: era, server: `toolbridge ${invoker}`, caller })
  }
  if (WITH_TOOLS)
    for (const invoker of INVOKERS)
      list.push({
        setup: `toolbridge-tools ${invoker}`,
        group: 'tools',
        server: `toolbridge ${invoker}`,
        caller: toolsCaller,
      })
  return list
}

interface Cell extends Omit<LoopStats, 'p999Ms'> {
  setup: string
  group: Group
  inFlight: number
  round: number
  /** Position in the round, 0 first. */
  position: number
  /** The server process's CPU (all threads) per answered call. */
  serverCpuUsPerCall: number
  /** Its CPU use over the cell, in cores. */
  serverCpuCores: number
  /** This process's CPU (the load) per answered call. */
  clientCpuUsPerCall: number
  /** The server process's resident memory after the cell. */
  serverRssMiB: number
}

async function measureCell(
  route: Route,
  server: ServerProcess,
  inFlight: number,
  expected: string,
): Promise<Omit<Cell, 'setup' | 'group' | 'inFlight' | 'round' | 'position'>> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight })
  try {
    const caller = await route.caller(agent, server.url, expected)
    try {
      const {
        used,
        p999Ms: _,
        ...stats
      } = await measure(caller.call, inFlight, {
        seconds: RUN.seconds,
        warmupSeconds: RUN.warmupSeconds,
        probes: { server: () => processCpuUsOf(server.pid), client: processCpuUs },
      })
      return {
        ...stats,
        serverCpuUsPerCall: used.server / stats.requests,
        serverCpuCores: used.server / 1e6 / stats.seconds,
        clientCpuUsPerCall: used.client / stats.requests,
        serverRssMiB: rssMiB(server.pid),
      }
    } finally {
      await caller.end()
    }
  } finally {
    agent.destroy()
  }
}

// ---------------------------------------------------------------- report

interface Row extends RoundsStats {
  setup: string
  group: Group
  inFlight: number
  serverCpuUsPerCall: number
  serverCpuCores: number
  clientCpuUsPerCall: number
  serverRssMiB: number
  errors: number
  /** Against plain-sdk in the same era (for /tools, at 2026-07-28), same in-flight level: median req/s over median req/s. */
  throughputRatio: number
  /** Per round: this cell's req/s over the same round's plain-sdk cell. */
  roundRatios: number[]
  /** Median server CPU per call over plain-sdk's. */
  cpuRatio: number
  /** For the rows the targets are about (MCP on the default invoker); null for the others. */
  throughputMet: boolean | null
  cpuMet: boolean | null
}

const isPlain = (row: Row) => row.setup === 'plain-sdk'
const verdict = (met: boolean | null) => (met === null ? '' : met ? 'yes' : 'NO')

const COLUMNS: Column<Row>[] = [
  ...throughputColumns<Row>(30, 3),
  { title: 'x req/s', width: 7, cell: (r) => (isPlain(r) ? '1' : fmt(r.throughputRatio, 2)) },
  { title: 'per round', width: 14, cell: (r) => r.roundRatios.map((x) => fmt(x, 2)).join('/') },
  { title: 'srv us/call', width: 11, cell: (r) => fmt(r.serverCpuUsPerCall, 0) },
  { title: 'x cpu', width: 5, cell: (r) => (isPlain(r) ? '1' : fmt(r.cpuRatio, 2)) },
  { title: 'srv cores', width: 9, cell: (r) => fmt(r.serverCpuCores, 2) },
  { title: 'client us/call', width: 14, cell: (r) => fmt(r.clientCpuUsPerCall, 0) },
  { title: 'srv RSS MiB', width: 11, cell: (r) => fmt(r.serverRssMiB, 0) },
  { title: '>=1.0x', width: 6, cell: (r) => verdict(r.throughputMet) },
  { title: '<=1.0x cpu', width: 10, cell: (r) => verdict(r.cpuMet) },
]

function rowsOf(cells: Cell[], list: Route[]): Row[] {
  const rows: Row[] = []
  const groups: Group[] = [...ERAS, ...(WITH_TOOLS ? (['tools'] as const) : [])]
  for (const group of groups) {
    const baseGroup: Era = group === 'tools' ? (ERAS.includes(MODERN) ? MODERN : ERAS[0]!) : group
    for (const inFlight of RUN.inFlight) {
      const base = cells.filter((c) => c.group === baseGroup && c.setup === 'plain-sdk' && c.inFlight === inFlight)
      const baseReq = median(base.map((c) => c.reqPerSec))
      const baseCpu = median(base.map((c) => c.serverCpuUsPerCall))
      for (const route of list.filter((r) => r.group === group)) {
        const mine = cells.filter((c) => c.group === group && c.setup === route.setup && c.inFlight === inFlight)
        const medianOf = (pick: (c: Cell) => number) => median(mine.map(pick))
        const stats = roundsStats(mine)
        const serverCpuUsPerCall = medianOf((c) => c.serverCpuUsPerCall)
        const targeted = route.group !== 'tools' && route.setup === `toolbridge-mcp ${TARGETS.invoker}`
        rows.push({
          setup: route.setup,
          group,
          inFlight,
          ...stats,
          serverCpuUsPerCall,
          serverCpuCores: medianOf((c) => c.serverCpuCores),
          clientCpuUsPerCall: medianOf((c) => c.clientCpuUsPerCall),
          serverRssMiB: medianOf((c) => c.serverRssMiB),
          errors: mine.reduce((n, c) => n + c.errors, 0),
          throughputRatio: stats.reqPerSec / baseReq,
          roundRatios: mine.map((c) => c.reqPerSec / (base.find((b) => b.round === c.round)?.reqPerSec ?? Number.NaN)),
          cpuRatio: serverCpuUsPerCall / baseCpu,
          throughputMet: targeted ? stats.reqPerSec / baseReq >= TARGETS.throughputRatio : null,
          cpuMet: targeted ? serverCpuUsPerCall / baseCpu <= TARGETS.cpuRatio : null,
        })
      }
    }
  }
  return rows
}

/** One line per target: met everywhere, or where not. */
function verdictLines(rows: Row[]): string[] {
  const targeted = rows.filter((r) => r.throughputMet !== null)
  const who = `MCP through toolbridge (${TARGETS.invoker})`
  if (targeted.length === 0) return [`targets: not measured (BENCH_INVOKERS has no ${TARGETS.invoker})`]
  const line = (what: string, missed: Row[], show: (r: Row) => string) =>
    missed.length === 0
      ? `target ${what}: met in all ${targeted.length} (era, in-flight) cells`
      : `target ${what}: missed in ${missed.length} of ${targeted.length}: ` +
        missed.map((r) => `${r.group}@${r.inFlight} (${show(r)})`).join(', ')
  return [
    line(
      `${who} req/s >= ${TARGETS.throughputRatio.toFixed(1)}x plain-sdk`,
      targeted.filter((r) => !r.throughputMet),
      (r) => `${fmt(r.throughputRatio, 2)}x`,
    ),
    line(
      `${who} server CPU per call <= ${TARGETS.cpuRatio.toFixed(1)}x plain-sdk`,
      targeted.filter((r) => !r.cpuMet),
      (r) => `${fmt(r.cpuRatio, 2)}x`,
    ),
  ]
}

function packageVersion(name: string): string {
  try {
    return (
      JSON.parse(readFileSync(resolve(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
    ).version
  } catch {
    return 'unknown'
  }
}

// ---------------------------------------------------------------- main

/** toolbridge's count of MCP tool calls by what answered them, from its /metrics. */
async function toolCallPaths(url: URL): Promise<{ direct: number; sdk: number }> {
  const text = await (await fetch(new URL('/metrics', url))).text()
  const count = (path: string) =>
    Number(new RegExp(`^toolbridge_mcp_tool_calls_total\\{path="${path}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  return { direct: count('direct'), sdk: count('sdk') }
}

async function main(): Promise<void> {
  const loadBefore = loadAverage()
  const { spec, tool } = loadJokeTool()
  const expected = await jokeAnswer()
  const list = routes()

  const machine = machineInfo({ mcpServerSdk: packageVersion('@modelcontextprotocol/server') })
  console.log(describeMachine(machine))
  console.log(`node ${machine.node}, ${machine.platform}; @modelcontextprotocol/server ${machine.mcpServerSdk}`)
  console.log(
    `load average before: ${loadBefore.join(' / ')} (1 / 5 / 15 min); with other work on the machine, numbers are unreliable`,
  )
  console.log(
    `tool: ${TOOL_NAME} of ${SERVICE_ID} (config ${JSON.stringify(tool.config)}, arguments ${JSON.stringify(ARGUMENTS)}); ` +
      `toolbridge on serverless.yml as it is (concurrency ${spec.concurrency}), embedded broker`,
  )
  console.log(
    `cells: ${RUN.warmupSeconds}s warm-up + ${RUN.seconds}s measured, closed loop; in-flight ${RUN.inFlight.join(', ')}; ` +
      `${RUN.rounds} round(s) per level, order rotated; eras ${ERAS.join(', ')}; invokers ${INVOKERS.join(', ')}` +
      (WITH_TOOLS ? '; /tools too' : ''),
  )
  console.log('')

  const serverNames = [...new Set(list.map((r) => r.server))]
  const servers = new Map<ServerName, ServerProcess>()
  const cells: Cell[] = []
  const lanes: Record<string, { direct: number; sdk: number }> = {}
  try {
    for (const name of serverNames) servers.set(name, await startServer(name))
    // Every route answers right before anything is timed.
    for (const route of list) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      const caller = await route.caller(agent, servers.get(route.server)!.url, expected)
      await caller
        .call()
        .catch((err: unknown) => {
          throw new Error(`${route.setup} (${route.group}): ${(err as Error).message}`)
        })
        .finally(() => caller.end().finally(() => agent.destroy()))
    }
    for (const name of serverNames)
      console.log(`${name}: pid ${servers.get(name)!.pid}, ${servers.get(name)!.url.origin}, answers checked`)
    console.log('')

    for (const inFlight of RUN.inFlight) {
      for (let round = 0; round < RUN.rounds; round++) {
        const order = inRotation(list, round)
        const parts: string[] = []
        for (const [position, route] of order.entries()) {
          const stats = await measureCell(route, servers.get(route.server)!, inFlight, expected)
          cells.push({ setup: route.setup, group: route.group, inFlight, round, position, ...stats })
          const era = route.group === 'tools' ? '' : ` ${route.group.slice(0, 4)}`
          parts.push(`${route.setup}${era} ${fmtInt(stats.reqPerSec)}/s`)
        }
        console.log(`in-flight ${String(inFlight).padStart(2)} round ${round + 1}/${RUN.rounds}: ${parts.join(' | ')}`)
      }
    }
    // Which path answered toolbridge's MCP calls: the direct lane (2026-07-28) or the SDK.
    for (const [name, server] of servers) {
      if (name === 'plain-sdk') continue
      const paths = await toolCallPaths(server.url)
      lanes[name] = paths
      console.log(`${name}: tools/call answered by the direct lane ${paths.direct}, by the SDK ${paths.sdk}`)
    }
  } finally {
    for (const server of servers.values()) await server.stop()
  }

  const rows = rowsOf(cells, list)
  console.log('')
  console.log(
    'median over rounds; "x req/s" = req/s over plain-sdk req/s (same era; /tools against 2026-07-28), ' +
      '"per round" = the same against the same round\'s plain-sdk;',
  )
  console.log(
    '"srv us/call" = CPU of the server process (all threads) per call, "x cpu" = that over plain-sdk\'s, ' +
      '"srv cores" = its CPU use; "client us/call" = the load\'s CPU (this process)',
  )
  for (const group of [...ERAS, ...(WITH_TOOLS ? (['tools'] as const) : [])]) {
    console.log('')
    console.log(
      group === 'tools' ? `POST /tools/${TOOL_NAME} (NDJSON), against plain-sdk at ${MODERN}` : `MCP ${group}`,
    )
    printTableByInFlight(
      COLUMNS,
      rows.filter((r) => r.group === group),
    )
  }
  console.log('')
  for (const line of verdictLines(rows)) console.log(line)
  const errors = rows.reduce((n, r) => n + r.errors, 0)
  if (errors > 0) console.log(`WARNING: ${errors} call(s) failed during measurement`)

  writeBenchResults(RUN.out, 'mcp', machine, loadBefore, {
    settings: {
      service: SERVICE_ID,
      tool: TOOL_NAME,
      config: tool.config,
      arguments: ARGUMENTS,
      expected,
      concurrency: spec.concurrency,
      eras: ERAS,
      invokers: INVOKERS,
      tools: WITH_TOOLS,
      inFlight: RUN.inFlight,
      rounds: RUN.rounds,
      warmupSeconds: RUN.warmupSeconds,
      seconds: RUN.seconds,
      loadGenerator:
        'closed loop in the bench process: in-flight callers on node:http keep-alive connections, every answer read whole and checked',
      servers:
        'each in a process of its own (bench/mcp-server.ts); CPU from /proc/<pid>/stat around the measured loop, RSS after each cell',
      plainSdk:
        'createMcpHandler (stateless both eras), McpServer per request, registerTool with fromJsonSchema, handler called in process; node:http, parsedBody',
      aggregation: 'median over rounds; rounds rotate the order of routes',
      targets: TARGETS,
    },
    toolCallPaths: lanes,
    rows,
    cells,
  })
}

await runBench(main, () => {
  for (const child of children) child.kill('SIGKILL')
})

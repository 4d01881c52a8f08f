/**
 * The picture in docs/tracing.md: one streamed call of the
 * example tell-story tool, traced into a running Jaeger (scripts/jaeger.sh
 * start), read back from Jaeger's query API and drawn as a timeline, which
 * headless Chromium photographs. Drawn here because Jaeger built from its Go
 * module has no UI assets (they come from a separate npm build of
 * jaeger-ui): its page on :16686 is a placeholder, its API is complete.
 *
 *   node scripts/trace-screenshot.ts [out.png]   (default docs/tracing-jaeger.png)
 *
 * Needs Chromium (`apt-get install -y chromium`; CHROMIUM names another binary).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import { loadProject } from '../bridge/project/project.ts'
import { resolveSettings } from '../bridge/project/settings.ts'
import { startRuntime } from '../bridge/runtime.ts'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'

const ROOT = resolve(import.meta.dirname, '..')
const OUT = resolve(process.argv[2] ?? resolve(ROOT, 'docs/tracing-jaeger.png'))
const JAEGER = 'http://127.0.0.1:16686'

const project = loadProject(resolve(ROOT, 'serverless.yml'))
const spec = project.services.find((s) => s.id === 'story-service')
if (!spec) throw new Error('serverless.yml has no story-service')
const runtime = await startRuntime(project, resolveSettings({ port: 'off', invoker: 'worker-threads' }, {}), {
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SERVICE_NAME: 'toolbridge' },
})
const traceId = randomBytes(16).toString('hex')
try {
  const client = new RequestClient(await runtime.connectClient(), spec)
  await client.start()
  // As an agent that traces would call: its own span as the parent.
  const story = await client.call(
    { arguments: { hero: 'Ada', place: 'a broker', sentences: 3 } },
    { onChunk: () => {}, traceContext: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } },
  )
  console.log(story)
  await client.close()
} finally {
  await runtime.stop() // exports what is left
}

interface Span {
  spanID: string
  operationName: string
  startTime: number
  duration: number
  references: { refType: string; spanID: string }[]
  tags: { key: string; value: unknown }[]
}

let spans: Span[] = []
for (let tries = 0; spans.length < 6; tries++) {
  if (tries > 100) throw new Error(`trace ${traceId} did not reach Jaeger`)
  await new Promise((r) => setTimeout(r, 200))
  const response = await fetch(`${JAEGER}/api/traces/${traceId}`)
  if (response.ok) spans = ((await response.json()) as { data: { spans: Span[] }[] }).data[0]?.spans ?? []
}

const indexOf = (s: Span) => Number(s.tags.find((t) => t.key === 'toolbridge.response.index')?.value ?? 0)

/** Parents before children, siblings by start (then by message index): the order of Jaeger's own timeline. */
function ordered(): { span: Span; depth: number }[] {
  const ids = new Set(spans.map((s) => s.spanID))
  const parentOf = (s: Span) => s.references.find((r) => r.refType === 'CHILD_OF' && ids.has(r.spanID))?.spanID
  const out: { span: Span; depth: number }[] = []
  const visit = (parent: string | undefined, depth: number) => {
    for (const span of spans
      .filter((s) => parentOf(s) === parent)
      .sort((a, b) => a.startTime - b.startTime || indexOf(a) - indexOf(b))) {
      out.push({ span, depth })
      visit(span.spanID, depth + 1)
    }
  }
  visit(undefined, 0)
  return out
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
const start = Math.min(...spans.map((s) => s.startTime))
const total = Math.max(...spans.map((s) => s.startTime + s.duration)) - start
const SHOWN = [
  'messaging.system',
  'messaging.message.conversation_id',
  'faas.invocation_id',
  'faas.coldstart',
  'toolbridge.invoker',
  'toolbridge.response.index',
  'toolbridge.response.final',
  'toolbridge.outcome',
]
const rows = ordered()
  .map(({ span, depth }) => {
    const tags = Object.fromEntries(span.tags.map((t) => [t.key, t.value]))
    const kind = String(tags['span.kind'] ?? '')
    const left = ((span.startTime - start) / total) * 100
    const width = Math.max((span.duration / total) * 100, 0.3)
    const shown = SHOWN.filter((k) => k in tags)
      .map((k) => `${k}=${String(tags[k])}`)
      .join('  ')
    return `<div class="row"><div class="name" style="padding-left:${depth * 18 + 8}px"><b>${escapeHtml(span.operationName)}</b> <i>${kind}, ${(span.duration / 1000).toFixed(2)} ms</i><br><small>${escapeHtml(shown)}</small></div>
<div class="lane"><div class="bar ${kind}" style="left:${left}%;width:${width}%"></div></div></div>`
  })
  .join('\n')
const html = `<!doctype html><meta charset="utf-8"><style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:16px;margin:0 0 4px}p{margin:0 0 12px;color:#555}
.row{display:flex;border-top:1px solid #e4e4e4;min-height:44px;align-items:center}.name{width:46%;overflow:hidden}
.name small{color:#666}.name i{color:#888;font-style:normal;font-size:11px}.lane{position:relative;width:54%;height:44px}
.bar{position:absolute;top:14px;height:14px;border-radius:2px}.consumer{background:#1f77b4}.client{background:#2ca02c}.producer{background:#ff7f0e}
</style>
<h1>Trace ${traceId}: toolbridge, one streamed tell-story call</h1>
<p>${spans.length} spans, ${(total / 1000).toFixed(2)} ms, read from Jaeger ${escapeHtml(JAEGER)}/api/traces/${traceId}; the parent of the top span is the caller's.</p>
${rows}`

const dir = mkdtempSync(join(tmpdir(), 'toolbridge-trace-'))
try {
  const page = join(dir, 'trace.html')
  writeFileSync(page, html)
  execFileSync(
    process.env.CHROMIUM ?? 'chromium',
    [
      '--headless',
      '--no-sandbox',
      '--hide-scrollbars',
      `--window-size=1400,${120 + spans.length * 45}`,
      `--screenshot=${OUT}`,
      `file://${page}`,
    ],
    { stdio: ['ignore', 'inherit', 'ignore'] },
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(`trace ${traceId}: ${OUT}`)

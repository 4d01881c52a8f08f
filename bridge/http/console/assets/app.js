// The console's script: no framework and no build. Everything from
// serverless.yml or an answer is set as text (textContent, attribute values),
// never parsed as HTML, so a tool description with markup shows as written.
import { AwaitedReports } from './awaited-reports.js'

/** A streamed answer is shown up to this many characters; the call itself goes on to its end. */
const RENDER_LIMIT = 200_000
const LOG_ROWS = 500
/** Calls whose timing the bridge has not reported yet, at most this many (a report may never come: the bridge restarted). */
const AWAITED_REPORTS = 100
const SVG = 'http://www.w3.org/2000/svg'

const $ = (selector) => document.querySelector(selector)

/** An element with attributes and children (strings become text nodes). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === undefined) continue
    node.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children) if (child !== undefined) node.append(child)
  return node
}

// The token: from the address's fragment (`toolbridge dev` prints it there; it never reaches a server), kept for this tab.
const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token')
if (fromFragment !== null) {
  sessionStorage.setItem('toolbridge-token', fromFragment)
  history.replaceState(null, '', location.pathname)
}
const headers = (extra = {}) => {
  const token = sessionStorage.getItem('toolbridge-token')
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra
}

function askForToken() {
  const form = $('#token-form')
  form.hidden = false
  form.onsubmit = (event) => {
    event.preventDefault()
    sessionStorage.setItem('toolbridge-token', $('#token').value)
    location.reload()
  }
}

async function getJson(path) {
  const res = await fetch(path, { headers: headers() })
  if (res.status === 401) {
    askForToken()
    throw new Error('bearer token required')
  }
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`)
  return res.json()
}

function copyButton(label, text) {
  const button = el('button', { type: 'button' }, label)
  button.onclick = async () => {
    await navigator.clipboard.writeText(text).then(
      () => (button.textContent = 'Copied'),
      () => (button.textContent = 'Copy failed: select the text'),
    )
    setTimeout(() => (button.textContent = label), 1500)
  }
  return button
}

/** Milliseconds as the console shows them: tenths below 10 ms. */
const ms = (value) => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`

/** Broker timestamps are whole milliseconds: no tenths for the wait they measure. */
const queued = (entry, unknown) => (entry.queueMs === undefined ? unknown : `${Math.round(entry.queueMs)} ms`)

function bytes(n) {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

function jsonBlock(title, value) {
  const text = JSON.stringify(value, null, 2)
  return el('div', {}, el('strong', {}, title), ' ', copyButton('Copy', text), el('pre', {}, text))
}

/** The input for one declared argument, by its type. */
function argumentInput(tool, arg) {
  const id = `arg-${tool.name}-${arg.name}`
  const common = { id, name: arg.name, 'data-type': arg.type, 'aria-describedby': `${id}-hint` }
  if (arg.type === 'boolean') {
    return el(
      'select',
      common,
      el('option', { value: '' }, '(not set)'),
      el('option', {}, 'true'),
      el('option', {}, 'false'),
    )
  }
  if (arg.type === 'object' || arg.type === 'array')
    return el('textarea', { ...common, placeholder: arg.type === 'object' ? '{"key": "value"}' : '[1, 2]' })
  if (arg.type === 'number' || arg.type === 'integer')
    return el('input', { ...common, type: 'number', step: arg.type === 'integer' ? '1' : 'any' })
  return el('input', { ...common, type: 'text' })
}

/** The form's arguments as JSON values; empty fields are left out (the bridge says which are required). */
function readArguments(form) {
  const args = {}
  for (const field of form.querySelectorAll('[data-type]')) {
    const raw = field.value
    if (raw === '') continue
    const type = field.dataset.type
    if (type === 'number' || type === 'integer') args[field.name] = Number(raw)
    else if (type === 'boolean') args[field.name] = raw === 'true'
    else if (type === 'object' || type === 'array') {
      try {
        args[field.name] = JSON.parse(raw)
      } catch {
        throw new Error(`${field.name}: not valid JSON`)
      }
    } else args[field.name] = raw
  }
  return args
}

function toolSection(tool) {
  const form = el('form', { class: 'call', novalidate: true, 'aria-label': `Call ${tool.name}` })
  for (const arg of tool.arguments) {
    const id = `arg-${tool.name}-${arg.name}`
    form.append(
      el('label', { for: id }, `${arg.name}${arg.required ? ' *' : ''}`),
      argumentInput(tool, arg),
      el(
        'span',
        { class: 'hint', id: `${id}-hint` },
        `${arg.type}${arg.required ? ', required' : ''}${arg.description ? `: ${arg.description}` : ''}`,
      ),
    )
  }
  form.append(
    el('label', { for: `user-${tool.name}` }, 'user'),
    el('input', { id: `user-${tool.name}`, name: 'user', type: 'text' }),
  )
  for (const [name, value] of Object.entries(tool.config)) {
    const id = `config-${tool.name}-${name}`
    form.append(el('label', { for: id }, `config ${name}`), el('input', { id, type: 'text', value, readonly: true }))
  }
  const answer = el('div', { class: 'answer', 'aria-live': 'polite' })
  const call = el('button', { type: 'submit', value: 'single' }, 'Call')
  const streaming = el('button', { type: 'submit', value: 'stream' }, 'Call streaming')
  form.append(el('div', { class: 'buttons' }, call, streaming))
  form.onsubmit = (event) => {
    event.preventDefault()
    void runCall(tool, form, answer, event.submitter?.value === 'stream')
  }
  const summary = el('summary', {}, tool.name, ' ', el('span', { class: 'description' }, tool.description))
  return el(
    'details',
    { class: 'tool', 'data-tool': tool.name },
    summary,
    form,
    answer,
    el(
      'details',
      {},
      el('summary', {}, 'Descriptors'),
      jsonBlock('TrustGraph tool', tool.descriptor),
      jsonBlock('MCP tool', tool.mcp),
    ),
  )
}

/** Calls POST /tools/<name> and shows its NDJSON answer as it arrives. */
async function runCall(tool, form, answer, streaming) {
  answer.className = 'answer'
  answer.replaceChildren()
  let args
  try {
    args = readArguments(form)
  } catch (err) {
    answer.className = 'answer error'
    answer.append(el('p', { class: 'error-text' }, `invalid-arguments: ${err.message}`))
    return
  }
  const user = form.elements.user.value
  const chunks = el('pre', { class: 'chunks' })
  const timing = el('p', { class: 'timing' }, 'calling…')
  const split = el('dl', { class: 'split', hidden: true })
  answer.append(timing, split, chunks)
  let requestId
  const started = performance.now()
  let firstChunkMs
  let chunkCount = 0
  let shown = 0
  let cut = false
  const show = (text) => {
    if (cut) return
    if (shown + text.length > RENDER_LIMIT) {
      cut = true
      answer.append(
        el(
          'p',
          { class: 'cut' },
          `Showing the first ${RENDER_LIMIT} characters; the call goes on and its end is shown below.`,
        ),
      )
      return
    }
    shown += text.length
    chunks.append(text)
  }
  const finish = (line) => {
    const total = Math.round(performance.now() - started)
    const first = firstChunkMs === undefined ? '' : `, first chunk ${firstChunkMs} ms, ${chunkCount} chunks`
    const size = line.error ? '' : `, ${line.response.length} characters`
    timing.textContent = `${total} ms total${first}${size}`
    // What the bridge saw of this call, from its report in the live log (before or after this answer).
    if (requestId) awaited.await(requestId, log, (entry) => showSplit(split, entry, total))
    if (line.error) {
      answer.className = 'answer error'
      answer.append(el('p', { class: 'error-text' }, `${line.error.type}: ${line.error.message}`))
    } else {
      answer.className = 'answer ok'
      if (chunkCount === 0 || !streaming) {
        chunks.replaceChildren()
        shown = 0
        show(line.response)
      }
    }
  }
  try {
    const res = await fetch(`/tools/${encodeURIComponent(tool.name)}`, {
      method: 'POST',
      headers: headers({ 'content-type': 'application/json' }),
      body: JSON.stringify(user ? { arguments: args, user } : { arguments: args }),
    })
    if (res.status === 401) askForToken()
    requestId = res.headers.get('toolbridge-request-id') ?? undefined
    for await (const text of pieces(res, '\n')) {
      if (text === '') continue
      const line = JSON.parse(text)
      if (line.chunk !== undefined) {
        chunkCount++
        firstChunkMs ??= Math.round(performance.now() - started)
        if (streaming) show(line.chunk)
        timing.textContent = `${chunkCount} chunks so far…`
      } else finish(line)
    }
  } catch (err) {
    finish({ error: { type: 'unavailable', message: err.message } })
  }
}

/** Where the time of a call went: waiting on the broker, the function, the rest of the bridge, and the way back. */
function showSplit(split, entry, total) {
  const parts = [
    ['Queue', 'queue', queued(entry, 'unknown (no broker timestamp)')],
    ['Invoke', 'invoke', entry.invokeMs === undefined ? 'not invoked' : ms(entry.invokeMs)],
    ['In the bridge', 'bridge', ms(entry.ms)],
    ['Total', 'total', `${total} ms`],
    ['Answer', 'size', bytes(entry.bytes)],
  ]
  split.replaceChildren(
    ...parts.flatMap(([label, part, text]) => [el('dt', {}, label), el('dd', { 'data-part': part }, text)]),
  )
  split.hidden = false
}

function renderServices(services) {
  const root = $('#services')
  root.replaceChildren()
  const filter = $('#filter-tool')
  filter.replaceChildren(el('option', { value: '' }, 'all'))
  for (const service of services) {
    const params = service.configParams.map((p) => `${p.name}${p.required ? ' (required)' : ''}`).join(', ') || 'none'
    root.append(
      el(
        'section',
        { class: 'service', 'aria-label': service.id },
        el('h3', {}, service.id),
        el(
          'p',
          { class: 'meta' },
          `function ${service.functionName} · ${service.response} · concurrency ${service.concurrency} · timeout ${service.timeoutMs / 1000} s · config params: ${params}`,
        ),
        el(
          'details',
          {},
          el('summary', {}, 'Tool service descriptor'),
          jsonBlock('TrustGraph tool-service', service.descriptor),
        ),
        ...service.tools.map((tool) => toolSection(tool)),
      ),
    )
    for (const tool of service.tools) filter.append(el('option', { value: tool.name }, tool.name))
  }
}

// The request log, fed by server-sent events (read with fetch, so that the token can go in a header).
const log = []
let lastSeq = 0
const awaited = new AwaitedReports(AWAITED_REPORTS)

const splitTitle = (entry) =>
  `queue ${queued(entry, 'unknown')}, invoke ${entry.invokeMs === undefined ? 'none' : ms(entry.invokeMs)}`

function logRow(entry) {
  const ok = entry.outcome === 'ok'
  return el(
    'tr',
    { 'data-tool': entry.tool, 'data-outcome': entry.outcome },
    el('td', {}, new Date(entry.at).toLocaleTimeString()),
    el('td', {}, entry.tool || '(unknown)'),
    el('td', { class: ok ? 'outcome-ok' : 'outcome-error' }, entry.outcome),
    el('td', { title: splitTitle(entry) }, ms(entry.ms)),
    el('td', {}, bytes(entry.bytes)),
  )
}

function renderLog() {
  const tool = $('#filter-tool').value
  const outcome = $('#filter-outcome').value
  const rows = log
    .filter(
      (e) =>
        (!tool || e.tool === tool) && (!outcome || (outcome === 'error' ? e.outcome !== 'ok' : e.outcome === outcome)),
    )
    .slice(-LOG_ROWS)
    .reverse()
    .map(logRow)
  $('#log tbody').replaceChildren(...rows)
}

function showStatus(status) {
  const node = $('#status')
  const where = status.file ? `${status.file}${status.line ? `:${status.line}` : ''}: ` : ''
  node.textContent = status.state === 'ok' ? status.message : `${where}${status.message}`
  node.className = status.state
}

let statsTimer
function onEvent(type, data) {
  if (type === 'request') {
    lastSeq = Math.max(lastSeq, data.seq)
    log.push(data)
    if (log.length > LOG_ROWS) log.shift()
    awaited.reported(data)
    const outcome = $('#filter-outcome')
    if (data.outcome !== 'ok' && ![...outcome.options].some((o) => o.value === data.outcome))
      outcome.append(el('option', { value: data.outcome }, data.outcome))
    renderLog()
    clearTimeout(statsTimer)
    statsTimer = setTimeout(loadStats, 500)
  } else if (type === 'status') {
    const wasOk = $('#status').className !== 'broken'
    showStatus(data)
    // A restarted bridge (serverless.yml changed) may serve other tools.
    if (data.state === 'ok' && wasOk && /serverless\.yml/.test(data.message)) void loadTools()
  }
}

/** A response body's text as it arrives, cut at each `separator` (a last piece without one is dropped). */
async function* pieces(res, separator) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffered = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffered += value
    const cut = buffered.split(separator)
    buffered = cut.pop()
    yield* cut
  }
}

async function followEvents() {
  for (;;) {
    try {
      const res = await fetch(`/console/api/events?after=${lastSeq}`, { headers: headers() })
      if (res.status === 401) return askForToken()
      for await (const block of pieces(res, '\n\n')) {
        let type = 'message'
        let data = ''
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) type = line.slice(7)
          else if (line.startsWith('data: ')) data += line.slice(6)
        }
        if (data) onEvent(type, JSON.parse(data))
      }
    } catch {
      // The bridge restarted or went away: try again shortly.
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

/** Small bar charts per tool: requests (errors in red) per minute, with p50 and p99 latency lines. */
function chart(tool, minutes) {
  const width = 300
  const height = 48
  const slot = width / minutes.length
  const maxCount = Math.max(1, ...minutes.map((m) => m.requests))
  const maxMs = Math.max(1, ...minutes.map((m) => m.p99 ?? 0))
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`)
  svg.setAttribute('preserveAspectRatio', 'none')
  svg.setAttribute('role', 'img')
  const total = minutes.reduce((n, m) => n + m.requests, 0)
  const errors = minutes.reduce((n, m) => n + m.errors, 0)
  const last = minutes.findLast((m) => m.requests > 0)
  const summary = `${tool}: ${total} requests, ${errors} errors; last busy minute p50 ${last?.p50?.toFixed(1) ?? '–'} ms, p99 ${last?.p99?.toFixed(1) ?? '–'} ms`
  svg.setAttribute('aria-label', summary)
  const rect = (x, h, cls) => {
    const r = document.createElementNS(SVG, 'rect')
    for (const [k, v] of Object.entries({ x, y: height - h, width: slot * 0.8, height: h, class: cls }))
      r.setAttribute(k, v)
    svg.append(r)
  }
  minutes.forEach((m, i) => {
    rect(i * slot, (m.requests / maxCount) * height * 0.5, 'bar')
    if (m.errors) rect(i * slot, (m.errors / maxCount) * height * 0.5, 'bar err')
  })
  // p50 and p99 as a tick across each minute's slot: visible from the first busy minute on.
  minutes.forEach((m, i) => {
    for (const key of ['p50', 'p99']) {
      if (m[key] === undefined) continue
      const y = height - (m[key] / maxMs) * height * 0.95
      const tick = document.createElementNS(SVG, 'line')
      for (const [k, v] of Object.entries({ x1: i * slot, x2: i * slot + slot * 0.8, y1: y, y2: y, class: key }))
        tick.setAttribute(k, v)
      svg.append(tick)
    }
  })
  return el('div', { class: 'chart', 'data-tool': tool }, el('p', {}, summary), svg)
}

async function loadStats() {
  const { tools } = await getJson('/console/api/stats')
  $('#charts').replaceChildren(...Object.entries(tools).map(([tool, minutes]) => chart(tool, minutes)))
}

async function loadTools() {
  const { services } = await getJson('/console/api/tools')
  renderServices(services)
}

$('#filter-tool').onchange = renderLog
$('#filter-outcome').onchange = renderLog
await loadTools()
void followEvents()
void loadStats()
setInterval(() => void loadStats().catch(() => {}), 15_000)
document.body.dataset.ready = 'true'

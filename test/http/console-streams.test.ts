/**
 * The console's event streams on a real gateway and real sockets: how many
 * may be open, that the probes answer while they all are, and that a reader
 * that never reads is told and closed instead of holding the bridge's memory.
 */
import { request, type IncomingMessage } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConsoleFeed } from '../../bridge/http/console/console-feed.ts'
import { MAX_EVENT_STREAMS } from '../../bridge/http/console/event-streams.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'
import { stoppedAfterEach } from '../support/stopped-after-each.ts'

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'dev-project', 'serverless.yml')
const stopped = stoppedAfterEach<Runtime>()

async function start() {
  const feed = new ConsoleFeed()
  const settings = { ...resolveSettings({ port: '0', invoker: 'in-process' }, {}), broker: undefined }
  const runtime = stopped(await startRuntime(loadProject(FIXTURE), settings, { console: feed }))
  return { feed, url: new URL(runtime.gateway!.url) }
}

/** Opens an event stream; resolves once its head is in, with the response. */
const openStream = (url: URL) =>
  new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(new URL('/console/api/events', url), { agent: false }, resolve)
    req.on('error', reject)
    req.end()
  })

const body = (res: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = ''
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => (text += chunk))
    res.on('close', () => resolve(text))
  })

describe('console event streams', () => {
  it(`opens at most ${MAX_EVENT_STREAMS} at once, says why it refuses another, and answers the probes meanwhile`, async () => {
    const { feed, url } = await start()
    const open = await Promise.all(Array.from({ length: MAX_EVENT_STREAMS }, () => openStream(url)))
    expect(open.map((res) => res.statusCode)).toEqual(Array(MAX_EVENT_STREAMS).fill(200))
    expect(feed.streams.size).toBe(MAX_EVENT_STREAMS)

    const refused = await openStream(url)
    expect(refused.statusCode).toBe(503)
    expect(refused.headers['retry-after']).toBe('10')
    expect(JSON.parse(await body(refused)).error.message).toBe(
      `${MAX_EVENT_STREAMS} console event streams are open, the most there may be at once; ` +
        'close a console tab, or try again once one has closed',
    )
    expect((await fetch(new URL('/healthz', url))).status).toBe(200)
    expect((await fetch(new URL('/readyz', url))).status).toBe(200)

    // Every open stream gets each event.
    const texts = open.map(body)
    feed.setStatus({ state: 'ok', at: 1, message: 'to all' })
    open[0]!.destroy()
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(feed.streams.size).toBe(MAX_EVENT_STREAMS - 1)
    const again = await openStream(url)
    expect(again.statusCode).toBe(200)
    for (const res of [...open.slice(1), again]) res.destroy()
    for (const text of (await Promise.all(texts)).slice(1)) expect(text).toContain('"message":"to all"')
  })

  it('answers the probes while one client holds 5,000 connections asking for streams', async () => {
    const { feed, url } = await start()
    const sockets = await Promise.all(
      Array.from(
        { length: 5000 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(Number(url.port), url.hostname, () => {
              socket.write(`GET /console/api/events HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`)
              resolve(socket)
            })
            socket.on('error', () => {})
          }),
      ),
    )
    try {
      for (let tries = 0; tries < 200 && feed.streams.size < MAX_EVENT_STREAMS; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(feed.streams.size).toBe(MAX_EVENT_STREAMS)
      expect((await fetch(new URL('/healthz', url))).status).toBe(200)
      expect((await fetch(new URL('/readyz', url))).status).toBe(200)
      // Past the connection cap the idle ones (refused streams kept alive) made room; the streams stand.
      const metrics = await (await fetch(new URL('/metrics', url))).text()
      expect(metrics).toMatch(/toolbridge_http_connections_closed_total\{reason="evicted-idle"\} [1-9]/)
      expect(feed.streams.size).toBe(MAX_EVENT_STREAMS)
    } finally {
      for (const socket of sockets) socket.destroy()
    }
  })

  it('closes a stream whose reader fell 1 MiB behind, with a last event saying so, and keeps serving the others', async () => {
    const { feed, url } = await start()
    // A reader that does not read: its socket is paused from the start.
    const socket = connect(Number(url.port), url.hostname)
    socket.pause()
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(`GET /console/api/events HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`)
    const reading = await openStream(url)
    const readingText = body(reading)
    for (let tries = 0; tries < 100 && feed.streams.size < 2; tries++) await new Promise((r) => setTimeout(r, 20))
    expect(feed.streams.size).toBe(2)

    // Status events of 10 kB each: the kernel's buffers fill, then the stream's own.
    const message = 'x'.repeat(10_000)
    for (let i = 0; i < 2000 && feed.streams.size === 2; i++) {
      feed.setStatus({ state: 'ok', at: i, message })
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(feed.streams.size).toBe(1)

    // Read at last: the stream ends with the note.
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.resume()
    await new Promise((resolve) => socket.once('end', resolve))
    const text = Buffer.concat(chunks).toString('utf8')
    const dropped = text.lastIndexOf('event: dropped\ndata: {"message":"this stream fell ')
    expect(dropped).toBeGreaterThan(0)
    expect(dropped).toBe(text.lastIndexOf('event: ')) // the last event
    expect(text.slice(dropped)).toContain(
      'bytes behind and was closed; the console page reconnects from where it stopped',
    )
    socket.destroy()

    feed.setStatus({ state: 'ok', at: 0, message: 'still here' })
    await new Promise((resolve) => setTimeout(resolve, 100))
    reading.destroy()
    expect(await readingText).toContain('"message":"still here"')
  })
})

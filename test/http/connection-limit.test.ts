/**
 * The gateway's connection cap on a real server and real sockets: past the
 * cap the longest-idle connection makes room, a connection answering a
 * request is never the one closed, and only when all are busy is the new
 * one turned away.
 */
import { createServer, request, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ConnectionLimit } from '../../bridge/http/connection-limit.ts'

let server: Server | undefined
const sockets: Socket[] = []

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

/** A server whose `/hold` requests are answered only when told; every other path at once. */
async function start(max: number) {
  const held: ServerResponse[] = []
  const closed = { evicted: 0, refused: 0 }
  server = createServer((req, res) => {
    if (req.url === '/hold') return void held.push(res)
    res.end('ok')
  })
  const limit = new ConnectionLimit(max, { evicted: () => closed.evicted++, refused: () => closed.refused++ })
  limit.attach(server)
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, held, closed, limit }
}

/** A connection that sends nothing; resolves once the server has taken it. */
async function idleConnection(port: number, limit: ConnectionLimit, expectedOpen: number) {
  const socket = connect(port, '127.0.0.1')
  sockets.push(socket)
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  await until(() => limit.open === expectedOpen || socket.destroyed)
  return socket
}

const isClosed = (socket: Socket) =>
  new Promise<boolean>((resolve) => {
    if (socket.destroyed || socket.readableEnded) return resolve(true)
    socket.once('close', () => resolve(true))
    setTimeout(() => resolve(false), 300)
  })

async function until(done: () => boolean) {
  for (let tries = 0; tries < 200 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 5))
}

const get = (port: number, path: string) =>
  new Promise<{ status: number | undefined }>((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, agent: false }, (res) => {
      res.resume()
      resolve({ status: res.statusCode })
    })
    req.on('error', reject)
    req.end()
  })

describe('connection cap', () => {
  it('closes the longest-idle connection to take a new one, so a probe always gets in', async () => {
    const { port, closed, limit } = await start(3)
    const first = await idleConnection(port, limit, 1)
    const second = await idleConnection(port, limit, 2)
    const third = await idleConnection(port, limit, 3)

    expect(await get(port, '/healthz')).toEqual({ status: 200 })
    expect(await isClosed(first)).toBe(true)
    expect(closed).toEqual({ evicted: 1, refused: 0 })
    expect(await isClosed(second)).toBe(false)
    expect(await isClosed(third)).toBe(false)
    expect(limit.open).toBeLessThanOrEqual(3)
  })

  it('never closes a connection while it answers a request, and turns the new one away when all are busy', async () => {
    const { port, held, closed, limit } = await start(2)
    const answers = [get(port, '/hold'), get(port, '/hold')]
    await until(() => held.length === 2)

    await expect(get(port, '/healthz')).rejects.toThrow(/ECONNRESET|socket hang up/)
    expect(closed).toEqual({ evicted: 0, refused: 1 })

    // Once one busy connection is answered it counts as idle again, and makes room.
    for (const res of held) res.end('done')
    expect(await Promise.all(answers)).toEqual([{ status: 200 }, { status: 200 }])
    await until(() => limit.open === 0)
    expect(await get(port, '/healthz')).toEqual({ status: 200 })
  })

  it('counts a kept-alive connection as idle between requests', async () => {
    const { port, closed, limit } = await start(1)
    const kept = connect(port, '127.0.0.1')
    sockets.push(kept)
    kept.on('error', () => {})
    const replies: string[] = []
    kept.on('data', (chunk: Buffer) => replies.push(chunk.toString('utf8')))
    kept.write('GET /one HTTP/1.1\r\nHost: x\r\n\r\n')
    await until(() => replies.join('').includes('ok'))
    expect(limit.open).toBe(1)

    expect(await get(port, '/healthz')).toEqual({ status: 200 })
    expect(await isClosed(kept)).toBe(true)
    expect(closed.evicted).toBe(1)
  })
})

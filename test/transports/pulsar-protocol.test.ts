/**
 * The Pulsar client against scripted brokers: sockets that speak the binary
 * protocol and answer as a multi-broker cluster, a Pulsar proxy, a broker
 * with token authentication, a TLS listener, a silent peer would — what one
 * standalone broker cannot show. test/transports/pulsar.test.ts covers the real broker.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, Socket as NetSocket, type AddressInfo, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer as createTlsServer } from 'node:tls'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { PulsarTransport } from '../../bridge/transports/pulsar/pulsar-transport.ts'
import { PulsarClient, PulsarError } from '../../lib/pulsar-client/index.ts'
import { Connection } from '../../lib/pulsar-client/connection.ts'
import { FrameDecoder, parseFrame, simpleFrame } from '../../lib/pulsar-client/frame.ts'
import { decodeCommand, encodeCommand, type CommandName } from '../../lib/pulsar-client/proto.ts'
import type { ToolbridgeError } from '../../shared/errors.ts'

/** A command as the scripted broker reads it. */
interface Seen {
  type: string
  body: Record<string, unknown>
}

type Reply = (name: CommandName, fields: object) => void

interface FakeBroker {
  url: string
  seen: Seen[]
  sockets: Socket[]
  close(): Promise<void>
}

/** Answers CONNECT with CONNECTED (unless `handle` answers it), then hands every command to `handle`. */
function serve(socket: Socket, seen: Seen[], handle: (command: Seen, reply: Reply) => void): void {
  const decoder = new FrameDecoder(1 << 20)
  const reply: Reply = (name, fields) => void socket.write(simpleFrame(encodeCommand(name, fields)))
  socket.on('data', (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) {
      const command = decodeCommand(parseFrame(frame).command) as unknown as Seen
      seen.push(command)
      handle(command, reply)
    }
  })
  socket.on('error', () => {})
}

const brokers: FakeBroker[] = []

async function fakeBroker(
  handle: (command: Seen, reply: Reply) => void,
  tls?: { key: Buffer; cert: Buffer },
): Promise<FakeBroker> {
  const seen: Seen[] = []
  const sockets: Socket[] = []
  const onSocket = (socket: Socket) => {
    sockets.push(socket)
    serve(socket, seen, handle)
  }
  const server: Server = tls ? createTlsServer(tls, onSocket) : createServer(onSocket)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const broker: FakeBroker = {
    url: `${tls ? 'pulsar+ssl' : 'pulsar'}://127.0.0.1:${port}`,
    seen,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  brokers.push(broker)
  return broker
}

/** A broker that accepts the handshake and answers lookups with `lookup`. */
const answering =
  (lookup: (command: Seen) => object, more: (command: Seen, reply: Reply) => void = () => {}) =>
  (command: Seen, reply: Reply) => {
    if (command.type === 'connect') reply('connected', { server_version: 'scripted', protocol_version: 19 })
    else if (command.type === 'lookup')
      reply('lookup_response', { request_id: command.body.request_id, ...lookup(command) })
    else more(command, reply)
  }

const clients: PulsarClient[] = []
function client(options: ConstructorParameters<typeof PulsarClient>[0]): PulsarClient {
  const created = new PulsarClient(options)
  clients.push(created)
  return created
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
  await Promise.all(brokers.splice(0).map((b) => b.close()))
})

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err as PulsarError,
  )

describe('lookup', () => {
  it('follows a redirect to the broker that owns the topic, asking it authoritatively, with the listener name', async () => {
    const owner: FakeBroker = await fakeBroker(answering(() => ({ response: 1, brokerServiceUrl: owner.url })))
    const entry = await fakeBroker(answering(() => ({ response: 0, brokerServiceUrl: owner.url, authoritative: true })))
    const c = client({ serviceUrl: entry.url, listenerName: 'internal' })
    expect(await c.lookup('non-persistent://tg/request/joke')).toEqual({ logical: owner.url, physical: owner.url })
    expect(entry.seen.find((s) => s.type === 'lookup')!.body).toMatchObject({
      authoritative: false,
      advertised_listener_name: 'internal',
    })
    const asked = owner.seen.filter((s) => s.type === 'lookup')
    expect(asked).toHaveLength(1)
    expect(asked[0]!.body).toMatchObject({
      topic: 'non-persistent://tg/request/joke',
      authoritative: true,
      advertised_listener_name: 'internal',
    })
  })

  it('goes through the service URL when the answer says proxy_through_service_url, naming the broker in CONNECT', async () => {
    const proxy = await fakeBroker(
      answering(() => ({
        response: 1,
        brokerServiceUrl: 'pulsar://broker-7.internal:6650',
        proxy_through_service_url: true,
      })),
    )
    const c = client({ serviceUrl: proxy.url })
    expect(await c.lookup('persistent://tg/flow/x')).toEqual({
      logical: 'pulsar://broker-7.internal:6650',
      physical: proxy.url,
    })
    await c.connectionFor('persistent://tg/flow/x')
    const connects = proxy.seen.filter((s) => s.type === 'connect')
    expect(connects.map((s) => s.body.proxy_to_broker_url)).toEqual([undefined, 'broker-7.internal:6650'])
  })

  it("fails with the broker's error code when the lookup fails, and gives up on endless redirects", async () => {
    const failing = await fakeBroker(answering(() => ({ response: 2, error: 11, message: 'topic does not exist' })))
    const error = await failure(client({ serviceUrl: failing.url }).lookup('persistent://tg/flow/none'))
    expect(error).toBeInstanceOf(PulsarError)
    expect(error!.code).toBe('TopicNotFound')
    expect(error!.message).toContain('topic does not exist')

    const loop: FakeBroker = await fakeBroker(answering(() => ({ response: 0, brokerServiceUrl: loop.url })))
    expect((await failure(client({ serviceUrl: loop.url }).lookup('persistent://tg/flow/x')))!.code).toBe(
      'TooManyRedirects',
    )
  })
})

describe('the connection', () => {
  it('sends the token with CONNECT, answers an auth challenge with the current token, and reports a refusal as AuthenticationError', async () => {
    let token = 'first-token'
    const broker: FakeBroker = await fakeBroker((command, reply) => {
      if (command.type === 'connect') {
        if (Buffer.from(command.body.auth_data as Uint8Array).toString() !== 'first-token') {
          reply('error', { request_id: 0, error: 3, message: 'bad token' })
          return
        }
        reply('connected', { server_version: 'scripted', protocol_version: 19 })
      } else if (command.type === 'lookup') {
        // A broker re-checks credentials whenever it likes: here, before answering a lookup.
        reply('auth_challenge', {
          server_version: 'scripted',
          challenge: { auth_method_name: 'token', auth_data: new Uint8Array(0) },
        })
        reply('lookup_response', { request_id: command.body.request_id, response: 1, brokerServiceUrl: broker.url })
      }
    })
    const c = client({ serviceUrl: broker.url, token: () => token })
    await c.connect()
    const connect = broker.seen.find((s) => s.type === 'connect')!
    expect(connect.body.auth_method_name).toBe('token')
    token = 'refreshed-token'
    await c.lookup('persistent://tg/flow/x')
    await waitFor(() => broker.seen.some((s) => s.type === 'auth_response'))
    const response = broker.seen.find((s) => s.type === 'auth_response')!.body.response as { auth_data: Uint8Array }
    expect(Buffer.from(response.auth_data).toString()).toBe('refreshed-token')

    const refused = await failure(client({ serviceUrl: broker.url, token: 'wrong' }).connect())
    expect(refused!.code).toBe('AuthenticationError')
    expect(refused!.retriable).toBe(false)

    const transport = new PulsarTransport(broker.url, { token: 'wrong-and-secret' })
    const error = (await transport.connect().catch((err: unknown) => err)) as ToolbridgeError
    await transport.close()
    expect(error.kind).toBe('config')
    expect(error.message).toMatch(/AuthenticationError: bad token/)
    expect(error.message).not.toContain('wrong-and-secret')
  })

  it('answers the broker’s pings and closes a connection whose peer stops answering its own', async () => {
    let silent = false
    const broker = await fakeBroker((command, reply) => {
      if (command.type === 'connect') {
        reply('connected', { server_version: 'scripted' })
        reply('ping', {})
      }
      if (command.type === 'ping' && !silent) reply('pong', {})
    })
    const c = client({ serviceUrl: broker.url, keepAliveMs: 50 })
    await c.connect()
    await waitFor(() => broker.seen.some((s) => s.type === 'pong'))
    await waitFor(() => broker.seen.filter((s) => s.type === 'ping').length >= 2)
    silent = true
    const socket = broker.sockets[0]!
    await waitFor(() => socket.destroyed || socket.readableEnded)
  })

  it('fails an operation the broker never answers with Timeout', async () => {
    const broker = await fakeBroker((command, reply) => {
      if (command.type === 'connect') reply('connected', { server_version: 'scripted' })
    })
    const error = await failure(
      client({ serviceUrl: broker.url, operationTimeoutMs: 100 }).lookup('persistent://tg/flow/x'),
    )
    expect(error!.code).toBe('Timeout')
    expect(error!.retriable).toBe(true)
  })

  it('sends the frames written in one turn of the event loop in one write, also when separate callbacks wrote them', async () => {
    const broker = await fakeBroker((command, reply) => {
      if (command.type === 'connect') reply('connected', { server_version: 'scripted' })
    })
    const connection = await Connection.open({
      logicalAddress: broker.url,
      physicalAddress: broker.url,
      tls: undefined,
      auth: undefined,
      connectTimeoutMs: 5_000,
      operationTimeoutMs: 5_000,
      keepAliveMs: 60_000,
      logger: { debug() {}, warn() {} },
    })
    const brokerPort = Number(new URL(broker.url).port)
    // Each flush of the client's socket to the system, by the frames it carries.
    const flushes: number[] = []
    const socketWrites = NetSocket.prototype as unknown as SocketWrites
    const { _write, _writev } = socketWrites
    socketWrites._write = function (this: Socket, ...args) {
      if (this.remotePort === brokerPort) flushes.push(1)
      return _write.apply(this, args)
    }
    socketWrites._writev = function (this: Socket, ...args) {
      if (this.remotePort === brokerPort) flushes.push(args[0].length)
      return _writev.apply(this, args)
    }
    try {
      // Two callbacks of one phase, as two worker threads' answers read in one turn.
      await new Promise<void>((resolve) => {
        setImmediate(() => connection.write('ping', {}))
        setImmediate(() => connection.write('ping', {}))
        setImmediate(() => setImmediate(resolve))
      })
    } finally {
      Object.assign(socketWrites, { _write, _writev })
      connection.close()
    }
    expect(flushes).toEqual([2])
    await waitFor(() => broker.seen.filter((s) => s.type === 'ping').length === 2)
  })

  it('fails the handshake with Timeout when CONNECTED never comes', async () => {
    const broker = await fakeBroker(() => {})
    const error = await failure(client({ serviceUrl: broker.url, connectTimeoutMs: 100 }).connect())
    expect(error!.code).toBe('Timeout')
  })
})

describe('TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulsar-tls-'))
  let material: { key: Buffer; cert: Buffer; caFile: string } | undefined
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-subj',
        '/CN=broker.example',
        '-addext',
        'subjectAltName=DNS:broker.example',
      ],
      { stdio: 'ignore' },
    )
    material = {
      key: readFileSync(join(dir, 'key.pem')),
      cert: readFileSync(join(dir, 'cert.pem')),
      caFile: join(dir, 'cert.pem'),
    }
  } catch {
    console.warn('skipping the Pulsar TLS tests: openssl is needed to make a certificate')
  }
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const connected = (command: Seen, reply: Reply) => {
    if (command.type === 'connect') reply('connected', { server_version: 'scripted-tls' })
  }

  it.runIf(material)(
    'connects over pulsar+ssl:// with the CA file, checking the host name only when asked',
    async () => {
      const broker = await fakeBroker(connected, material)
      await client({ serviceUrl: broker.url, tls: { caFile: material!.caFile } }).connect()
      const checked = await failure(
        client({ serviceUrl: broker.url, tls: { caFile: material!.caFile, validateHostname: true } }).connect(),
      )
      expect(checked!.code).toBe('ConnectError')
      expect(checked!.retriable).toBe(false)
      expect(checked!.message).toMatch(/broker\.example|altnames|IP/)
    },
  )

  it.runIf(material)(
    'refuses a certificate it cannot trust, unless told to accept any; the transport reads the settings from the URL',
    async () => {
      const broker = await fakeBroker(connected, material)
      const untrusted = await failure(client({ serviceUrl: broker.url }).connect())
      expect(untrusted!.code).toBe('ConnectError')
      expect(untrusted!.retriable).toBe(false)
      await client({ serviceUrl: broker.url, tls: { allowInsecure: true } }).connect()

      const transport = new PulsarTransport(
        `${broker.url}?tlsTrustCertsFilePath=${encodeURIComponent(material!.caFile)}`,
      )
      await transport.connect()
      await transport.close()
      const strict = new PulsarTransport(
        `${broker.url}?tlsTrustCertsFilePath=${encodeURIComponent(material!.caFile)}&tlsValidateHostname=true`,
        {
          connectRetry: { retries: 0 },
        },
      )
      const error = (await strict.connect().catch((err: unknown) => err)) as ToolbridgeError
      await strict.close()
      expect(error.kind).toBe('config')
    },
  )
})

/** How a stream hands its bytes to the system: one chunk, or several buffered while it was corked. */
interface SocketWrites {
  _write(this: Socket, chunk: Buffer, encoding: string, done: (error?: Error | null) => void): void
  _writev(this: Socket, chunks: { chunk: Buffer }[], done: (error?: Error | null) => void): void
}

async function waitFor(condition: () => boolean, limitMs = 5_000): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

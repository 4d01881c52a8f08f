/**
 * Runs a zip that `sls package` built the way AWS Lambda's Node.js runtime
 * would run it (Lambda itself cannot run here), behind FakeLambda, which
 * speaks the Lambda API's real wire format:
 *
 * - The bundle is unpacked and imported with the runtime's `awslambda` global
 *   in place, so `lambdaStreaming` wraps the handler for response streaming
 *   exactly as it does on Lambda. The global is removed once imported: the
 *   same test process also runs the handlers in process, where there is none.
 * - Invoke: the handler is called as `(event, context)` and the payload is
 *   its result's JSON; a throw is FunctionError `Unhandled` with
 *   `{errorType, errorMessage, trace}`. A streaming handler is called with a
 *   response stream and what it writes is the payload, buffered.
 * - InvokeWithResponseStream: a streaming handler's writes are PayloadChunks
 *   as they happen; a plain handler's result is one chunk. A failure ends the
 *   stream with InvokeComplete carrying the error type and message.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Writable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import JSZip from 'jszip'
import type { Reply, Script, StreamStep } from './fake-lambda.ts'

type Handler = (event: unknown, ...rest: unknown[]) => unknown

/** How the runtime marks a handler passed to `awslambda.streamifyResponse`. */
const STREAMING = Symbol('streaming handler')
type MaybeStreaming = Handler & { [STREAMING]?: true }

const CONTEXT = { functionName: 'packaged', awsRequestId: 'local', getRemainingTimeInMillis: () => 30_000 }

export interface PackagedFunction {
  /** The Lambda API behaviour of this function, for `FakeLambda.script`. */
  script: Script
  /** Whether the handler was wrapped for response streaming. */
  streaming: boolean
}

/** Unpacks `bundlePath` from the zip and imports `exportName` from it, as the runtime does. */
export async function loadPackagedFunction(zipFile: string, handlerSpec: string): Promise<PackagedFunction> {
  const dot = handlerSpec.lastIndexOf('.')
  const bundlePath = `${handlerSpec.slice(0, dot)}.mjs`
  const exportName = handlerSpec.slice(dot + 1)
  const zip = await JSZip.loadAsync(await readFile(zipFile))
  const entry = zip.file(bundlePath)
  if (!entry) throw new Error(`${zipFile} has no ${bundlePath}`)
  const dir = await mkdtemp(join(tmpdir(), 'toolbridge-lambda-task-'))
  try {
    const file = join(dir, bundlePath)
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, await entry.async('nodebuffer'))
    const runtime = globalThis as { awslambda?: unknown }
    runtime.awslambda = {
      streamifyResponse: (handler: MaybeStreaming) => Object.assign(handler, { [STREAMING]: true as const }),
    }
    let handler: MaybeStreaming
    try {
      handler = ((await import(pathToFileURL(file).href)) as Record<string, MaybeStreaming>)[exportName]!
    } finally {
      delete runtime.awslambda
    }
    if (typeof handler !== 'function') throw new Error(`${bundlePath} exports no function "${exportName}"`)
    const streaming = handler[STREAMING] === true
    return {
      script: (call) => answer(handler, streaming, call.streaming, JSON.parse(call.payload.toString('utf8'))),
      streaming,
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const errorOf = (err: unknown) => ({
  errorType: err instanceof Error ? err.name : 'Error',
  errorMessage: err instanceof Error ? err.message : String(err),
})

/**
 * A response stream whose writes come out as an async iterable of chunks,
 * until it ends or `end()` (the handler settled without ending it).
 */
function responseStream(): { stream: Writable; chunks: AsyncIterable<Uint8Array>; end(): void } {
  const queue: Uint8Array[] = []
  let wake: (() => void) | undefined
  let ended = false
  const end = () => {
    ended = true
    wake?.()
  }
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      queue.push(new Uint8Array(chunk))
      wake?.()
      done()
    },
    final(done) {
      end()
      done()
    },
    destroy(err, done) {
      end()
      done(err)
    },
  })
  async function* chunks() {
    for (;;) {
      if (queue.length > 0) yield queue.shift()!
      else if (ended) return
      else await new Promise<void>((resolve) => (wake = resolve))
    }
  }
  return { stream, chunks: chunks(), end }
}

async function answer(
  handler: MaybeStreaming,
  streamingHandler: boolean,
  streamingCall: boolean,
  event: unknown,
): Promise<Reply> {
  if (!streamingHandler) {
    let result: unknown
    try {
      result = await handler(event, CONTEXT)
    } catch (err) {
      const body = JSON.stringify({ ...errorOf(err), trace: [] })
      return streamingCall
        ? streamReply([], Promise.resolve(err))
        : { type: 'payload', functionError: 'Unhandled', body }
    }
    const body = JSON.stringify(result ?? null)
    return streamingCall ? { type: 'stream', steps: [body] } : { type: 'payload', body }
  }

  const { stream, chunks, end } = responseStream()
  const run = Promise.resolve()
    .then(() => handler(event, stream, CONTEXT))
    .then(
      () => undefined,
      (err: unknown) => err,
    )
    .finally(end)
  if (!streamingCall) {
    // Invoke on a streaming function: Lambda buffers what it writes.
    const parts: Uint8Array[] = []
    for await (const chunk of chunks) parts.push(chunk)
    const failure = await run
    if (failure !== undefined)
      return { type: 'payload', functionError: 'Unhandled', body: JSON.stringify({ ...errorOf(failure), trace: [] }) }
    return { type: 'payload', body: Buffer.concat(parts).toString('utf8') }
  }
  return streamReply(chunks, run)
}

/** The chunks, then an InvokeComplete that reports `failure` if the handler failed (it resolves to undefined if not). */
function streamReply(chunks: AsyncIterable<Uint8Array> | StreamStep[], failure: Promise<unknown>): Reply {
  let error: { code: string; details: string } | undefined
  async function* steps(): AsyncGenerator<StreamStep> {
    yield* chunks
    const failed = await failure
    if (failed !== undefined) {
      const { errorType, errorMessage } = errorOf(failed)
      error = { code: errorType, details: errorMessage }
    }
  }
  return {
    type: 'stream',
    steps: steps(),
    get error() {
      return error
    },
  }
}

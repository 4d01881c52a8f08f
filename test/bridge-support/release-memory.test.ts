/**
 * Memory given back when the bridge goes quiet: V8's full collection
 * (bridge/support/full-collection.ts) on this thread, and `toolbridge start`
 * collecting after a burst once --release-memory-after has passed without a
 * request (bridge/support/idle-collection.ts, started by the runtime).
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { getHeapStatistics } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { collectFullyAndRelease } from '../../bridge/support/full-collection.ts'
import { StartedBridge } from '../support/started-bridge.ts'

const MiB = 2 ** 20

const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('a full collection that releases memory', () => {
  it('collects what nothing reaches', async () => {
    const ref = new WeakRef({ payload: 'x'.repeat(1000) })
    await turn() // a WeakRef holds its target until the end of the turn that made it
    collectFullyAndRelease()
    expect(ref.deref()).toBeUndefined()
  })

  it('gives the freed heap back: the heap returns near its size before the garbage (a regular collection keeps the pages)', async () => {
    collectFullyAndRelease()
    const before = getHeapStatistics().total_heap_size
    // About 40 MB of small objects: old-space pages, not large objects (which any collection frees with their pages).
    let held: { i: number }[][] | undefined = Array.from({ length: 200 }, () =>
      Array.from({ length: 5000 }, (_, i) => ({ i })),
    )
    await turn()
    expect(getHeapStatistics().total_heap_size).toBeGreaterThan(before + 32 * MiB)
    expect(held.length).toBe(200)
    held = undefined
    collectFullyAndRelease()
    expect(getHeapStatistics().total_heap_size).toBeLessThan(before + 8 * MiB)
  })

  it('leaves no gc function to the code around it: not this context, a new one, or a worker started later', async () => {
    collectFullyAndRelease()
    expect('gc' in globalThis).toBe(false)
    expect(runInNewContext('typeof gc')).toBe('undefined')
    const worker = new Worker('require("node:worker_threads").parentPort.postMessage(typeof gc)', { eval: true })
    const seen = await new Promise((resolve) => worker.once('message', resolve))
    await worker.terminate()
    expect(seen).toBe('undefined')
  })
})

describe('the idle collection', () => {
  it('never keeps a process alive that has nothing else to do', async () => {
    const module = fileURLToPath(new URL('../../bridge/support/idle-collection.ts', import.meta.url))
    const script = `
      import { startIdleCollection } from ${JSON.stringify(module)}
      startIdleCollection({ periodMs: 3_600_000, taken: () => 0, heapBytes: () => 0, collect() {}, logger: console })
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' })
    const exit = await new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
    expect(exit).toStrictEqual({ code: 0, signal: null })
  })
})

describe('toolbridge start after a burst', () => {
  it('collects in full once it has taken no request for --release-memory-after seconds, and says so at debug level', async () => {
    const bridge = new StartedBridge(
      [
        '-c',
        'test/fixtures/idle/serverless.yml',
        'start',
        '--invoker',
        'in-process',
        '--port',
        '0',
        '--release-memory-after',
        '1',
        '--log-level',
        'debug',
      ],
      { entry: 'bridge/cli/toolbridge.js' },
    )
    try {
      const url = await bridge.url()
      for (let call = 0; call < 8; call++) {
        const response = await fetch(`${url}/tools/litter`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"arguments":{}}',
        })
        expect(await response.json()).toStrictEqual({ response: 'ok' })
      }
      const line = await new Promise<Record<string, unknown>>((resolve) => {
        const look = () => {
          const found = bridge.stderr
            .split('\n')
            .filter((text) => text.includes('heap collected in full'))
            .map((text) => JSON.parse(text) as Record<string, unknown>)[0]
          if (found) resolve(found)
          else setTimeout(look, 100)
        }
        look()
      })
      expect(line).toMatchObject({ msg: 'idle: heap collected in full and its free pages given back' })
      expect(line.heapMiBAfter as number).toBeLessThan(line.heapMiBBefore as number)
    } finally {
      await bridge.stop()
    }
  })
})

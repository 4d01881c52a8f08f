/** The pieces of `toolbridge dev`'s reload that need no bridge: which files, which functions, when, and where it broke. */
import { describe, expect, it } from 'vitest'
import { ChangeBatches } from '../../bridge/dev/change-batches.ts'
import { affectedFunctions, moduleFiles, relativeSpecifiers } from '../../bridge/dev/module-graph.ts'
import { describeLoadError, loadErrorPlace, splitLoadError } from '../../bridge/invokers/load-error.ts'

describe('relativeSpecifiers', () => {
  it('finds static, dynamic, re-export and side-effect imports of relative paths, not packages', () => {
    const text = [
      "import { a } from './a.ts'",
      'import b from "../lib/b.mjs"',
      "export { c } from './c.js'",
      "import './side.ts'",
      "const d = await import('./d.ts')",
      "const e = await import ( './spaced.ts' )",
      "import { z } from 'zod'",
      "import fs from 'node:fs'",
      "// see '../not-an-import.ts'",
    ].join('\n')
    expect(relativeSpecifiers(text)).toEqual(['./a.ts', '../lib/b.mjs', './c.js', './side.ts', './d.ts', './spaced.ts'])
  })
})

describe('moduleFiles', () => {
  it('follows relative imports from the entry through every file it reaches, once each, skipping missing ones', () => {
    const files: Record<string, string> = {
      '/p/fn/handler.ts': "import { x } from './x.ts'\nimport { y } from '../lib/y.ts?v=1'\nimport './gone.ts'",
      '/p/fn/x.ts': "import { y } from '../lib/y.ts'\nimport { handler } from './handler.ts'",
      '/p/lib/y.ts': 'export const y = 1',
      '/p/other.ts': 'export const o = 1',
    }
    expect([...moduleFiles('/p/fn/handler.ts', (f) => files[f])].sort()).toEqual([
      '/p/fn/handler.ts',
      '/p/fn/x.ts',
      '/p/lib/y.ts',
    ])
    expect(moduleFiles('/p/none.ts', (f) => files[f]).size).toBe(0)
  })
})

describe('affectedFunctions', () => {
  it('names the functions made of a changed file', () => {
    const graph = new Map([
      ['joke', new Set(['/p/joke.ts', '/p/shared.ts'])],
      ['story', new Set(['/p/story.ts', '/p/shared.ts'])],
    ])
    expect(affectedFunctions(['/p/joke.ts'], graph)).toEqual(['joke'])
    expect(affectedFunctions(new Set(['/p/shared.ts']), graph)).toEqual(['joke', 'story'])
    expect(affectedFunctions(['/p/README.md'], graph)).toEqual([])
    expect(affectedFunctions(['/p/README.md', '/p/story.ts'], graph)).toEqual(['story'])
  })
})

describe('ChangeBatches', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  it('hands on the files changed once no change has come for quietMs, each file once', async () => {
    const batches: string[][] = []
    const b = new ChangeBatches(40, async (files) => void batches.push([...files]))
    b.add('a')
    await sleep(20)
    b.add('b')
    b.add('a')
    await sleep(20)
    expect(batches).toEqual([]) // the quiet spell began again with each change
    await sleep(50)
    expect(batches).toEqual([['a', 'b']])
  })

  it('handles one batch at a time: changes during one make the next', async () => {
    const events: string[] = []
    let release = () => {}
    const b = new ChangeBatches(5, async (files) => {
      events.push(`start ${[...files].join()}`)
      if (files.has('first')) await new Promise<void>((resolve) => (release = resolve))
      events.push(`end ${[...files].join()}`)
    })
    b.add('first')
    await sleep(20)
    b.add('second')
    await sleep(20)
    expect(events).toEqual(['start first'])
    release()
    await sleep(5)
    await b.idle()
    expect(events).toEqual(['start first', 'end first', 'start second', 'end second'])
  })

  it('drops what is pending when stopped', async () => {
    const batches: string[][] = []
    const b = new ChangeBatches(10, async (files) => void batches.push([...files]))
    b.add('a')
    b.stop()
    await sleep(30)
    expect(batches).toEqual([])
    b.add('b')
    await sleep(30)
    expect(batches).toEqual([['b']])
  })

  /** A handler whose first batch waits to be released; it records each batch's start and end. */
  function blockingBatches() {
    const events: string[] = []
    let release = () => {}
    const b = new ChangeBatches(5, async (files) => {
      const names = [...files].join()
      events.push(`start ${names}`)
      if (files.has('first')) await new Promise<void>((resolve) => (release = resolve))
      events.push(`end ${names}`)
    })
    return { b, events, release: () => release() }
  }

  it('gathers every change made during a batch into one next batch, never an empty one', async () => {
    const { b, events, release } = blockingBatches()
    b.add('first')
    await sleep(20)
    b.add('second')
    await sleep(20) // its quiet spell is over while the first batch runs
    b.add('third')
    await sleep(20)
    release()
    await sleep(30)
    await b.idle()
    expect(events).toEqual(['start first', 'end first', 'start second,third', 'end second,third'])
  })

  it('waits for the quiet spell of a change made just as a batch ends', async () => {
    const { b, events, release } = blockingBatches()
    b.add('first')
    await sleep(20)
    b.add('second')
    await sleep(20)
    b.add('third') // its quiet spell has not begun to run out when the first batch ends
    release()
    await sleep(30)
    await b.idle()
    expect(events).toEqual(['start first', 'end first', 'start second,third', 'end second,third'])
  })
})

describe('load errors', () => {
  const withStack = (stack: string, message = 'boom') => Object.assign(new Error(message), { stack })

  it('takes file and line of a syntax error from the first line of its stack', () => {
    const err = withStack('/p/fn/handler.ts:3\n  const x = ;\n            ^\n\nSyntaxError: Expression expected')
    expect(loadErrorPlace(err)).toEqual({ file: '/p/fn/handler.ts', line: 3 })
    expect(loadErrorPlace(withStack('file:///p/a%20b.mjs:12\nx'))).toEqual({ file: '/p/a b.mjs', line: 12 })
  })

  it("takes the first frame of a file on disk for an error thrown by a module's own code", () => {
    const err = withStack(
      [
        'Error: no key',
        '    at readKey (file:///p/fn/config.ts:7:11)',
        '    at file:///p/fn/handler.ts:2:1',
        '    at ModuleJob.run (node:internal/modules/esm/module_job:271:25)',
      ].join('\n'),
    )
    expect(loadErrorPlace(err)).toEqual({ file: '/p/fn/config.ts', line: 7 })
    expect(loadErrorPlace(withStack('Error: x\n    at file:///p/h.ts:9:3'))).toEqual({ file: '/p/h.ts', line: 9 })
  })

  it('reads places with many-digit lines, and Windows paths', () => {
    expect(loadErrorPlace(withStack('/p/h.ts:123\nx'))).toEqual({ file: '/p/h.ts', line: 123 })
    expect(loadErrorPlace(withStack('C:\\p\\h.ts:7\nx'))).toEqual({ file: 'C:\\p\\h.ts', line: 7 })
    expect(loadErrorPlace(withStack('Error: x\n    at file:///p/h.ts:12:3'))).toEqual({ file: '/p/h.ts', line: 12 })
  })

  it('takes a place only from a whole first line or a whole frame', () => {
    expect(loadErrorPlace(withStack('see /p/h.ts:3\nx'))).toBeUndefined()
    expect(loadErrorPlace(withStack('/p/h.ts:3 and more\nx'))).toBeUndefined()
    expect(loadErrorPlace(withStack('Error: x\n    at file:///p/h.ts:9:3 and more'))).toBeUndefined()
  })

  it('has no place for an error whose stack names no file, or for what is not an Error', () => {
    expect(loadErrorPlace(withStack('Error: x\n    at node:internal/foo:1:1'))).toBeUndefined()
    expect(loadErrorPlace('a string')).toBeUndefined()
    expect(loadErrorPlace(Object.assign(new Error('x'), { stack: undefined }))).toBeUndefined()
  })

  it('says where in the message, and takes it apart again', () => {
    const text = describeLoadError(withStack('/p/h.ts:3\nx', 'Expression expected'))
    expect(text).toBe('Expression expected (at /p/h.ts:3)')
    expect(splitLoadError(text)).toEqual({ message: 'Expression expected', place: { file: '/p/h.ts', line: 3 } })
    expect(describeLoadError(withStack('Error: x', 'no handler'))).toBe('no handler')
    expect(splitLoadError('no handler')).toEqual({ message: 'no handler' })
    expect(splitLoadError('x (at /p/h.ts:3) and more')).toEqual({ message: 'x (at /p/h.ts:3) and more' })
    expect(splitLoadError('x (at /p/h.ts:42)')).toEqual({ message: 'x', place: { file: '/p/h.ts', line: 42 } })
  })
})

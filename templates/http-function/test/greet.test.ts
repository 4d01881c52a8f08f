import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { server } from '../functions/greet/server.ts'

let url: string
beforeAll(async () => {
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/greet`
})
afterAll(() => new Promise((resolve) => server.close(resolve)))

describe('POST /greet', () => {
  it('greets by name', async () => {
    const response = await fetch(url, { method: 'POST', body: JSON.stringify({ name: 'Ada' }) })
    expect(response.status).toBe(200)
    expect(await response.text()).toBe('Hello, Ada!')
  })

  it('answers 400 without a name', async () => {
    const response = await fetch(url, { method: 'POST', body: '{}' })
    expect(response.status).toBe(400)
  })
})

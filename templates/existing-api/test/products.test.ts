import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { app } from '../functions/products/app.ts'

let server: Server
let base: string
beforeAll(async () => {
  server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise((resolve) => server.close(resolve)))

describe('GET /products/{sku}', () => {
  it('answers a product with its price in the currency asked for', async () => {
    const response = await fetch(`${base}/products/SKU-1?currency=USD`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ sku: 'SKU-1', name: 'Kettle', price: 32.4, currency: 'USD' })
  })

  it('answers 404 for an unknown SKU', async () => {
    const response = await fetch(`${base}/products/SKU-9`)
    expect(response.status).toBe(404)
  })
})

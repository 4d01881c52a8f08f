/**
 * A product catalogue API as a team might already run it: a plain Express
 * app, written for HTTP and API Gateway, with nothing in it about tools.
 * toolbridge serves it as a tool through `event: apigw-v2` (serverless.yml
 * of test/fixtures/byof); handler.ts wraps it for Lambda.
 */
import express, { type Request, type Response } from 'express'

interface Product {
  sku: string
  name: string
  /** In cents of EUR. */
  priceCents: number
  stock: number
}

const PRODUCTS: Product[] = [
  { sku: 'KB-101', name: 'Mechanical keyboard', priceCents: 8900, stock: 12 },
  { sku: 'MS-220', name: 'Wireless mouse', priceCents: 2950, stock: 0 },
  { sku: 'MN-270', name: '27-inch monitor', priceCents: 21900, stock: 4 },
]

/** Exchange rates from EUR, fixed for the example. */
const RATES: Record<string, number> = { EUR: 1, USD: 1.08, GBP: 0.85 }

export const app = express()
app.use(express.json())

function priced(product: Product, currency: string) {
  const price = Math.round(product.priceCents * RATES[currency]!) / 100
  return { sku: product.sku, name: product.name, price, currency, inStock: product.stock > 0 }
}

function currencyOf(req: Request, res: Response): string | undefined {
  const currency = String(req.query.currency ?? 'EUR').toUpperCase()
  if (RATES[currency] !== undefined) return currency
  res.status(400).json({ error: `unknown currency ${currency}; use one of ${Object.keys(RATES).join(', ')}` })
  return undefined
}

app.get('/products', (req, res) => {
  const currency = currencyOf(req, res)
  if (!currency) return
  const q = String(req.query.q ?? '').toLowerCase()
  res.json(PRODUCTS.filter((p) => p.name.toLowerCase().includes(q)).map((p) => priced(p, currency)))
})

app.get('/products/:sku', (req, res) => {
  const currency = currencyOf(req, res)
  if (!currency) return
  const product = PRODUCTS.find((p) => p.sku === req.params.sku)
  if (!product) return void res.status(404).json({ error: `no product ${req.params.sku}` })
  res.json(priced(product, currency))
})

app.post('/orders', (req, res) => {
  const { sku, quantity } = req.body as { sku?: unknown; quantity?: unknown }
  const product = PRODUCTS.find((p) => p.sku === sku)
  if (!product) return void res.status(404).json({ error: `no product ${String(sku)}` })
  if (!Number.isInteger(quantity) || (quantity as number) < 1)
    return void res.status(422).json({ error: 'quantity must be a positive integer' })
  if ((quantity as number) > product.stock)
    return void res.status(409).json({ error: `only ${product.stock} of ${product.sku} in stock` })
  res.status(201).json({ sku: product.sku, quantity, totalEur: (product.priceCents * (quantity as number)) / 100 })
})

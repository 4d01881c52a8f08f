import express from 'express'

const PRODUCTS = {
  'SKU-1': { sku: 'SKU-1', name: 'Kettle', priceEur: 30 },
  'SKU-2': { sku: 'SKU-2', name: 'Teapot', priceEur: 24 },
}
const EUR_IN = { EUR: 1, USD: 1.08 }

export const app = express()

app.get('/products/:sku', (req, res) => {
  const product = PRODUCTS[req.params.sku]
  if (!product) return void res.status(404).json({ error: `no product ${req.params.sku}` })
  const currency = typeof req.query.currency === 'string' ? req.query.currency : 'EUR'
  const rate = EUR_IN[currency]
  if (rate === undefined) return void res.status(400).json({ error: `unknown currency ${currency}: EUR or USD` })
  res.json({ sku: product.sku, name: product.name, price: Math.round(product.priceEur * rate * 100) / 100, currency })
})

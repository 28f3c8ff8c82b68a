// Baseline for measurement 2: a bare pass-through proxy, Hono + an undici Pool, no waiting-room logic.
// Every request goes to BENCH_ORIGIN; hop-by-hop headers stop here; bodies stream both ways, the
// response through a pull-based web stream (Readable.toWeb can crash on client aborts on Node 20).
import { Readable } from 'node:stream'
import type { ReadableStream as NodeReadableStream } from 'node:stream/web'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { Pool } from 'undici'
// Only the stream conversion is shared with the edge's origin adapter; no waiting-room logic.
import { toWebStream } from '../src/adapters/undici/origin.js'

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
])

const pool = new Pool(new URL(process.env.BENCH_ORIGIN ?? '').origin, { connections: 128 })

const app = new Hono()
app.all('*', async (c) => {
  const url = new URL(c.req.url)
  const headers: Record<string, string> = {}
  c.req.raw.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) headers[name] = value
  })
  const method = c.req.method
  const bodyless = method === 'GET' || method === 'HEAD'
  const res = await pool.request({
    path: url.pathname + url.search,
    method: method as 'GET',
    headers,
    body: bodyless || c.req.raw.body === null ? null : Readable.fromWeb(c.req.raw.body as NodeReadableStream),
  })
  const out = new Headers()
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue
    if (Array.isArray(value)) for (const v of value) out.append(name, v)
    else out.set(name, value)
  }
  if (method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304) {
    res.body.resume()
    return new Response(null, { status: res.statusCode, headers: out })
  }
  return new Response(toWebStream(res.body), { status: res.statusCode, headers: out })
})

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.BENCH_PORT) })
process.once('SIGTERM', () => {
  server.close()
  void pool.close().finally(() => process.exit(0))
})

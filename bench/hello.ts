// Baseline server for measurement 1: a bare Hono hello-world on @hono/node-server, one route returning
// text, served the same way as the edge (its own Node process on 127.0.0.1). Port from BENCH_PORT.
import { serve } from '@hono/node-server'
import { Hono } from 'hono'

const app = new Hono()
app.get('/', (c) => c.text('Hello, world!'))

const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: Number(process.env.BENCH_PORT) })
process.once('SIGTERM', () => {
  server.close()
  process.exit(0)
})

// The Node edge reads its per-request headers from Node's raw header list
// (src/adapters/node/headers.ts) instead of through Hono. An origin or a check that read them
// differently would be a way around the line, so this compares the two readings over real HTTP/1.1
// on Node's server, for spellings a client may choose: case, repeats, spaces, tabs, empty values.
import { connect } from 'node:net'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeVisitorHeaders } from '../src/adapters/node/headers.js'
import { POW_HEADER } from '../src/core/pow.js'
import { honoHeaders } from '../src/http/request.js'
import { type Served, serveOnFreePort } from './support/serve.js'

let server: Served
let port: number

beforeAll(async () => {
  const app = new Hono()
  app.all('*', (c) => {
    return c.json({ hono: honoHeaders(c), node: nodeVisitorHeaders(c) ?? null })
  })
  app.onError((err, c) => c.json({ error: err.message }, 400))
  server = await serveOnFreePort(app.fetch)
  port = server.port
})

afterAll(async () => {
  await server.close()
})

/** Sends the header lines as written and returns the status and body. */
function send(lines: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => socket.write(['GET /x HTTP/1.1', ...lines, 'Connection: close', '', ''].join('\r\n')))
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') reject(err)
    })
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('latin1')
      const split = all.indexOf('\r\n\r\n')
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(all)?.[1] ?? 0), body: split === -1 ? '' : all.slice(split + 4) })
    })
  })
}

const CASES: Record<string, string[]> = {
  'a poll as wrk sends it': ['Host: shop.example', 'Accept: application/json', 'Cookie: anteroom_q_line=q1.line.abc'],
  'no headers but Host': ['Host: shop.example'],
  'two Host fields': ['Host: shop.example', 'Host: evil.example'],
  'Host in other cases, twice': ['HOST: shop.example', 'host: shop.example'],
  'two Cookie fields': ['Host: a', 'Cookie: a=1', 'cookie: b=2'],
  'two Accept fields and two answers': [
    'Host: a',
    'Accept: text/html',
    'ACCEPT: application/json',
    `${POW_HEADER}: 1.2`,
    'Anteroom-POW: 3',
  ],
  'spaces and tabs around values': ['Host:   shop.example  ', 'Accept:\tapplication/json\t', 'Cookie:  a=1 ; b=2  '],
  'empty values': ['Host: a', 'Accept:', 'Cookie: ', `${POW_HEADER}:`],
  'names of the same lengths': [
    'Host: a',
    'Hosts: b',
    'Origin: c',
    'Pragma: no-cache',
    'Anteroom-Pox: d',
    'Accepts: e',
    'Accept-Encoding: gzip',
  ],
  'Accept-Language twice, in other cases, with q-values': ['Host: a', 'Accept-Language: de-AT, de;q=0.9', 'ACCEPT-LANGUAGE:  en;q=0.5 '],
}

describe("the Node edge's header reading", () => {
  for (const [name, lines] of Object.entries(CASES)) {
    it(`reads what Hono reads: ${name}`, async () => {
      const reply = await send(lines)
      expect(reply.status).toBe(200)
      const { hono, node } = JSON.parse(reply.body) as { hono: Record<string, unknown>; node: Record<string, unknown> | null }
      expect(node).not.toBeNull()
      expect(node).toEqual(hono)
    })
  }

  it('reads two Host fields as one value with a comma, which the edge refuses', async () => {
    const { body } = await send(['Host: shop.example', 'Host: evil.example'])
    expect(JSON.parse(body).node.host).toBe('shop.example, evil.example')
  })

  it('a NUL or a bare CR in a value is refused by Node before the app, with a 4xx', async () => {
    for (const bad of ['Cookie: a=\u00001', 'Accept: a\rb']) {
      const reply = await send(['Host: a', bad])
      expect(reply.status, bad).toBeGreaterThanOrEqual(400)
      expect(reply.status, bad).toBeLessThan(500)
    }
  })
})

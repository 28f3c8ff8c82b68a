// The proxy end to end: the real edge on @hono/node-server in front of real HTTP origins on loopback.
// Bodies stream both ways, hop-by-hop headers stop at the edge, our cookies and headers never reach
// the origin, origin failures become clear 502/504 pages, and nothing a request says can point the
// edge at any host but the configured origin.
import { createHash } from 'node:crypto'
import { createServer as createHttpServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http'
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { UndiciOrigin } from '../src/adapters/undici/origin.js'
import { loadConfig } from '../src/config/index.js'
import { buildEdge, type Edge } from '../src/entry/build.js'
import { createEdgeApp } from '../src/http/app.js'
import { type OriginHandler, type OriginServer, startOrigin } from './support/origin-server.js'
import { freePort } from './support/redis-server.js'
import { type Served, serveOnFreePort } from './support/serve.js'

const ROOM = 'shop'
const ADMISSION_COOKIE = `anteroom_a_${ROOM}`
const QUEUE_COOKIE = `anteroom_q_${ROOM}`

// ---------------------------------------------------------------------------------------------
// Helpers

interface Reply {
  status: number
  headers: IncomingHttpHeaders
  rawHeaders: string[]
  body: Buffer
}

/** One request over a fresh connection (no agent), so nothing is shared between tests. */
function send(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string | string[]>; body?: Buffer | string },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
        )
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

interface RawReply {
  /** 0 when the server closed the connection without a response. */
  status: number
  head: string
  headers: Map<string, string[]>
  body: string
}

/** Writes `text` as-is over a TCP socket and reads until the server closes (or 3 s pass). */
function raw(port: number, text: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket: Socket = connect(port, '127.0.0.1', () => socket.write(text))
    const timer = setTimeout(() => socket.destroy(), 3000)
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after the server refused the request is an answer too: keep what arrived.
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err)
    })
    socket.on('close', () => {
      clearTimeout(timer)
      const all = Buffer.concat(chunks).toString('latin1')
      const split = all.indexOf('\r\n\r\n')
      const head = split === -1 ? all : all.slice(0, split)
      const lines = head.split('\r\n')
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0)
      const headers = new Map<string, string[]>()
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':')
        if (colon <= 0) continue
        const name = line.slice(0, colon).trim().toLowerCase()
        headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()])
      }
      const rest = split === -1 ? '' : all.slice(split + 4)
      resolve({ status, head, headers, body: headers.get('transfer-encoding')?.includes('chunked') ? dechunk(rest) : rest })
    })
  })
}

/** Decodes a chunked body (no trailers expected). */
function dechunk(text: string): string {
  let out = ''
  let at = 0
  for (;;) {
    const eol = text.indexOf('\r\n', at)
    if (eol === -1) return out
    const size = Number.parseInt(text.slice(at, eol), 16)
    if (!(size > 0)) return out
    out += text.slice(eol + 2, eol + 2 + size)
    at = eol + 2 + size + 2
  }
}

function json<T = Record<string, unknown>>(body: Buffer | string): T {
  return JSON.parse(body.toString()) as T
}

interface Echo {
  method: string
  url: string
  headers: IncomingHttpHeaders
  bodyLength: number
}

function setCookies(headers: IncomingHttpHeaders): string[] {
  const v = headers['set-cookie']
  return v === undefined ? [] : v
}

function cookieValue(cookies: string[], name: string): string | undefined {
  for (const c of cookies) {
    const first = c.split(';')[0] ?? ''
    if (first.startsWith(`${name}=`)) return first.slice(name.length + 1)
  }
  return undefined
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** Resolves with 'timeout' instead of hanging when `p` does not settle in time. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([p, delay(ms).then(() => 'timeout' as const)])
}

// ---------------------------------------------------------------------------------------------
// The origin: echoes by default, with a few special paths.

const echo: OriginHandler = (req, res, body) => {
  res.setHeader('content-type', 'application/json')
  res.setHeader('connection', 'keep-alive, x-secret-hop')
  res.setHeader('x-secret-hop', 'should not pass')
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bodyLength: body.length }))
}

/** State of the one chunked response on /stream-out. */
const streamOut = {
  release: deferred<'signal'>(),
  finished: false,
  releasedBy: '' as 'signal' | 'timeout' | '',
}

/** Responses the origin holds without answering (for the 504 test); released in afterAll. */
const held: { end(): void }[] = []

/** One promise per response on /stream-big, settled when that response is closed (finished or aborted). */
const streamBigClosed: Promise<void>[] = []

const originHandler: OriginHandler = (req, res, body) => {
  const path = req.url ?? ''
  if (path === '/stream-out') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first chunk\n')
    // Without a signal from the client, finish anyway after a while, so a buffering proxy fails
    // the test instead of hanging it.
    void within(streamOut.release.promise, 3000).then((how) => {
      streamOut.releasedBy = how
      streamOut.finished = true
      res.end('the rest\n')
    })
    return
  }
  if (path === '/stream-big') {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    const chunk = Buffer.alloc(16 * 1024, 0x7a)
    let left = 2000
    const pump = () => {
      while (left > 0 && !res.destroyed) {
        left--
        if (!res.write(chunk)) {
          res.once('drain', pump)
          return
        }
      }
      if (!res.destroyed) res.end()
    }
    streamBigClosed.push(
      new Promise((resolve) =>
        res.on('close', () => {
          left = 0
          resolve()
        }),
      ),
    )
    pump()
    return
  }
  if (path.startsWith('/slow')) {
    held.push(res)
    return
  }
  if (path === '/hop-response') {
    res.setHeader('content-type', 'text/plain')
    res.setHeader('connection', 'keep-alive, x-secret-hop, x-other-hop')
    res.setHeader('keep-alive', 'timeout=99, max=7')
    res.setHeader('x-secret-hop', 'should not pass')
    res.setHeader('x-other-hop', 'should not pass either')
    res.setHeader('proxy-authenticate', 'Basic realm="origin"')
    res.setHeader('proxy-authentication-info', 'nextnonce="abc"')
    res.setHeader('proxy-connection', 'keep-alive')
    res.setHeader('upgrade', 'h2c')
    res.setHeader('trailer', 'x-checksum')
    res.setHeader('x-origin', 'kept')
    res.end('hop')
    return
  }
  if (path.startsWith('/shop/set-cookie') || path === '/set-cookie') {
    res.setHeader('content-type', 'text/plain')
    res.setHeader('set-cookie', ['origin_a=1; Path=/', 'origin_b=2; Path=/'])
    res.end('cookies')
    return
  }
  echo(req, res, body)
}

// ---------------------------------------------------------------------------------------------
// Set-up: one edge (embedded store), a few servers in front of it.

const logged: { event: string; fields: Record<string, unknown> }[] = []
let origin: OriginServer
let edge: Edge
let main: Served
/** The same edge, but its origin is a closed port. */
let refused: Served
let refusedOrigin: UndiciOrigin
/** The same edge, with a 200 ms headers timeout towards the main origin. */
let impatient: Served
let impatientOrigin: UndiciOrigin
/** A raw origin that reports when the first request bytes arrive, with an edge in front. */
let uploadOrigin: Server
let uploadOriginPort: number
let uploadFirstBytes = deferred()
let uploadProxy: UndiciOrigin
let upload: Served
/** Nothing may ever connect here. */
let evil: NetServer
let evilPort: number
let evilConnections = 0
const consoleError = vi.spyOn(console, 'error')

beforeAll(async () => {
  origin = await startOrigin(originHandler)
  const config = loadConfig({
    ANTEROOM_ROOMS: JSON.stringify([
      { id: ROOM, paths: ['/shop'], totalActiveUsers: 1_000_000, newUsersPerMinute: 1_000_000, refreshSeconds: 5 },
    ]),
    // The streaming tests send 8 MB bodies.
    ANTEROOM_MAX_BODY_BYTES: String(16 * 1024 * 1024),
  })
  edge = await buildEdge(config, { originUrl: origin.url, log: (event, fields) => logged.push({ event, fields }) })
  main = await serveOnFreePort(edge.app.fetch)

  refusedOrigin = new UndiciOrigin({ url: `http://127.0.0.1:${await freePort()}` })
  refused = await serveOnFreePort(createEdgeApp({ ...edge.deps, origin: refusedOrigin }).fetch)

  impatientOrigin = new UndiciOrigin({ url: origin.url, headersTimeout: 200 })
  impatient = await serveOnFreePort(createEdgeApp({ ...edge.deps, origin: impatientOrigin }).fetch)

  uploadOrigin = createHttpServer((req, res) => {
    const hash = createHash('sha256')
    let bytes = 0
    req.on('data', (c: Buffer) => {
      if (bytes === 0) uploadFirstBytes.resolve()
      bytes += c.length
      hash.update(c)
    })
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') }))
    })
  })
  await new Promise<void>((r) => uploadOrigin.listen(0, '127.0.0.1', r))
  uploadOriginPort = (uploadOrigin.address() as { port: number }).port
  uploadProxy = new UndiciOrigin({ url: `http://127.0.0.1:${uploadOriginPort}` })
  upload = await serveOnFreePort(createEdgeApp({ ...edge.deps, origin: uploadProxy }).fetch)

  evil = createNetServer((socket) => {
    evilConnections++
    socket.destroy()
  })
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r))
  evilPort = (evil.address() as { port: number }).port
})

afterAll(async () => {
  for (const res of held.splice(0)) res.end()
  streamOut.release.resolve('signal')
  await Promise.all([main?.close(), refused?.close(), impatient?.close(), upload?.close()])
  await Promise.all([refusedOrigin?.close(), impatientOrigin?.close(), uploadProxy?.close()])
  await edge?.close()
  await origin?.close()
  await new Promise<void>((r) => {
    if (uploadOrigin === undefined) r()
    else {
      uploadOrigin.closeAllConnections()
      uploadOrigin.close(() => r())
    }
  })
  await new Promise<void>((r) => (evil === undefined ? r() : evil.close(() => r())))
  consoleError.mockRestore()
})

// Every test on its own: none may log an internal error or print to console.error.
afterEach(() => {
  try {
    expect(logged.filter((l) => l.event === 'error')).toEqual([])
    expect(consoleError).not.toHaveBeenCalled()
  } finally {
    logged.length = 0
    consoleError.mockClear()
  }
})

/** Admits a fresh visitor on the protected path and returns their admission token. */
async function admit(): Promise<string> {
  const first = await send(main.port, { path: '/shop/start' })
  expect(first.status).toBe(200)
  const token = cookieValue(setCookies(first.headers), ADMISSION_COOKIE)
  expect(token).toBeTruthy()
  return token as string
}

// ---------------------------------------------------------------------------------------------

describe('streaming', () => {
  it('passes a large chunked POST body to the origin whole', async () => {
    const size = 12 * 1024 * 1024
    const before = origin.requests.length
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: main.port,
          method: 'POST',
          path: '/upload',
          agent: false,
          headers: { 'content-type': 'application/octet-stream' }, // no length: chunked
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
          )
        },
      )
      req.on('error', reject)
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      let sent = 0
      const pump = () => {
        while (sent < size) {
          sent += chunk.length
          if (!req.write(chunk)) {
            req.once('drain', pump)
            return
          }
        }
        req.end()
      }
      pump()
    })
    expect(reply.status).toBe(200)
    const seen = json<Echo>(reply.body)
    expect(seen.method).toBe('POST')
    expect(seen.url).toBe('/upload')
    expect(seen.bodyLength).toBe(size)
    expect(origin.requests.length).toBe(before + 1)
  })

  it('passes a large POST with Content-Length and Expect: 100-continue (as curl sends it) to an admitted visitor', async () => {
    const token = await admit()
    const body = Buffer.alloc(6 * 1024 * 1024, 0x62)
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: main.port,
          method: 'PUT',
          path: '/shop/upload',
          agent: false,
          headers: {
            'content-length': String(body.length),
            expect: '100-continue',
            cookie: `${ADMISSION_COOKIE}=${token}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
          )
        },
      )
      req.on('error', reject)
      req.on('continue', () => req.end(body))
    })
    expect(reply.status).toBe(200)
    const seen = json<Echo>(reply.body)
    expect(seen.bodyLength).toBe(body.length)
    expect(seen.headers['anteroom-admission']).toBe(token)
    expect(seen.headers.expect).toBeUndefined()
  })

  it('streams the request body: the origin gets the first bytes before the client sends the rest', async () => {
    uploadFirstBytes = deferred()
    const first = Buffer.alloc(64 * 1024, 0x31)
    const rest = Buffer.alloc(8 * 1024 * 1024, 0x32)
    const expected = createHash('sha256').update(first).update(rest).digest('hex')
    let originHadFirstBytes: boolean | undefined
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: upload.port, method: 'POST', path: '/in', agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
        )
      })
      req.on('error', reject)
      req.flushHeaders()
      req.write(first)
      // The rest goes only once the origin saw the first bytes (or after 3 s, failing the test).
      void within(uploadFirstBytes.promise, 3000).then((r) => {
        originHadFirstBytes = r !== 'timeout'
        req.end(rest)
      })
    })
    expect(originHadFirstBytes).toBe(true)
    expect(reply.status).toBe(200)
    expect(json(reply.body)).toEqual({ bytes: first.length + rest.length, sha256: expected })
  })

  it('streams the response body: the client gets the first chunk before the origin has finished', async () => {
    streamOut.release = deferred<'signal'>()
    streamOut.finished = false
    streamOut.releasedBy = ''
    let finishedWhenFirstChunkArrived: boolean | undefined
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: main.port, path: '/stream-out', agent: false }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          if (finishedWhenFirstChunkArrived === undefined) {
            finishedWhenFirstChunkArrived = streamOut.finished
            streamOut.release.resolve('signal')
          }
          body += c
        })
        res.on('end', () => resolve(body))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    })
    expect(finishedWhenFirstChunkArrived).toBe(false)
    expect(streamOut.releasedBy).toBe('signal')
    expect(text).toBe('first chunk\nthe rest\n')
  })

  it('survives clients that hang up mid-response, and keeps serving', async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: main.port, path: '/stream-big', agent: false }, (res) => {
          let got = 0
          res.on('data', (c: Buffer) => {
            got += c.length
            if (got > 256 * 1024 * (i + 1)) {
              req.destroy()
              resolve()
            }
          })
          res.on('end', () => reject(new Error(`the whole body came (status ${res.statusCode})`)))
        })
        req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)))
        req.end()
      })
    }
    // Each hang-up reached the origin: the edge closed every one of its responses.
    expect(streamBigClosed).toHaveLength(5)
    await Promise.all(streamBigClosed)
    const after = await send(main.port, { path: '/after-abort' })
    expect(after.status).toBe(200)
    expect(json<Echo>(after.body).url).toBe('/after-abort')
  })
})

describe('headers across the proxy', () => {
  it('drops hop-by-hop request headers, and those named in Connection, and sets X-Forwarded-*', async () => {
    const before = origin.requests.length
    const reply = await raw(
      main.port,
      [
        'GET /hop?x=1 HTTP/1.1',
        'Host: shop.example:8443',
        'Connection: close, X-Secret-Hop, x-other-hop',
        'Keep-Alive: timeout=5, max=100',
        'TE: trailers',
        'Upgrade: h2c',
        'Trailer: x-checksum',
        'Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==',
        'Proxy-Connection: keep-alive',
        'Proxy-Authentication-Info: nextnonce="x"',
        'X-Secret-Hop: must not pass',
        'X-Other-Hop: must not pass',
        'X-Kept: yes',
        'X-Forwarded-For: 203.0.113.7',
        'X-Forwarded-Proto: https',
        'X-Forwarded-Host: spoofed.example',
        '',
        '',
      ].join('\r\n'),
    )
    expect(reply.status).toBe(200)
    expect(origin.requests.length).toBe(before + 1)
    const seen = origin.requests.at(-1)!
    expect(seen.url).toBe('/hop?x=1')
    const h = seen.headers
    for (const name of [
      'keep-alive',
      'te',
      'upgrade',
      'trailer',
      'transfer-encoding',
      'proxy-authorization',
      'proxy-connection',
      'proxy-authentication-info',
      'x-secret-hop',
      'x-other-hop',
    ]) {
      expect(h[name], name).toBeUndefined()
    }
    // undici speaks for its own connection to the origin; nothing of the visitor's survives.
    expect(h.connection === undefined || h.connection === 'keep-alive', `connection: ${h.connection}`).toBe(true)
    expect(h['x-kept']).toBe('yes')
    expect(h.host).toBe(`127.0.0.1:${origin.port}`)
    // The client's own X-Forwarded-* never pass: the edge says what it saw.
    expect(h['x-forwarded-for']).toBe('127.0.0.1')
    expect(h['x-forwarded-proto']).toBe('http')
    expect(h['x-forwarded-host']).toBe('shop.example:8443')
  })

  it('sets every client-address header from the socket; what the client sent, CF-Connecting-IP included, is dropped', async () => {
    const reply = await raw(
      main.port,
      [
        'GET /addr HTTP/1.1',
        'Host: shop.example',
        'Connection: close',
        'CF-Connecting-IP: 6.6.6.6',
        'True-Client-IP: 6.6.6.6',
        'X-Real-IP: 6.6.6.6',
        'X_Real_IP: 6.6.6.6',
        'Forwarded: for=6.6.6.6',
        'anteroom_admission: forged',
        'ANTEROOM_ADMISSION: forged',
        'X-Original-URL: /shop/secret',
        '',
        '',
      ].join('\r\n'),
    )
    const h = JSON.parse(reply.body).headers as Echo['headers']
    expect(h['cf-connecting-ip']).toBeUndefined()
    expect(h['true-client-ip']).toBeUndefined()
    expect(h['x-original-url']).toBeUndefined()
    expect(h.anteroom_admission).toBeUndefined()
    expect(h['anteroom-admission']).toBeUndefined()
    expect(h['x-real-ip']).toBe('127.0.0.1')
    expect(h['x-forwarded-for']).toBe('127.0.0.1')
    expect(h.forwarded).toBe('for=127.0.0.1;proto=http;host=shop.example')
  })

  it('answers TRACE and TRACK with 405 and two Host headers with 400, and forwards none of them', async () => {
    const before = origin.requests.length
    for (const method of ['TRACE', 'TRACK']) {
      for (const path of ['/shop/x', '/free']) {
        const reply = await raw(main.port, `${method} ${path} HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n`)
        // Node's HTTP parser refuses TRACK itself (400); TRACE reaches the edge, which answers 405.
        expect(method === 'TRACE' ? [405] : [400, 405], `${method} ${path}: ${reply.head}`).toContain(reply.status)
        if (reply.status === 405) expect(reply.headers.get('allow')?.[0]).toContain('GET')
      }
    }
    const twoHosts = await raw(main.port, 'GET /shop/x HTTP/1.1\r\nHost: shop.example\r\nHost: evil.example\r\nConnection: close\r\n\r\n')
    expect(twoHosts.status).toBe(400)
    expect(twoHosts.body).toContain('more than one Host header')
    expect(origin.requests.length).toBe(before)
  })

  it('sets X-Forwarded-For to the client address when none came in', async () => {
    const reply = await send(main.port, { path: '/xff', headers: { host: 'www.example.com' } })
    const h = json<Echo>(reply.body).headers
    expect(h['x-forwarded-for']).toBe('127.0.0.1')
    expect(h['x-forwarded-host']).toBe('www.example.com')
    expect(h['x-forwarded-proto']).toBe('http')
  })

  it('passes a WebSocket upgrade attempt on as a plain request without the upgrade headers', async () => {
    const before = origin.requests.length
    const reply = await raw(
      main.port,
      ['GET /ws HTTP/1.1', 'Host: a.example', 'Connection: Upgrade, close', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', '', ''].join(
        '\r\n',
      ),
    )
    expect(reply.status).toBe(200)
    expect(origin.requests.length).toBe(before + 1)
    const seen = origin.requests[before]!
    expect(seen.url).toBe('/ws')
    expect(seen.headers.upgrade).toBeUndefined()
    expect(seen.headers.connection === undefined || seen.headers.connection === 'keep-alive').toBe(true)
    const after = await send(main.port, { path: '/after-ws' })
    expect(after.status).toBe(200)
  })

  it('drops hop-by-hop response headers and those the origin named in Connection', async () => {
    const reply = await raw(main.port, ['GET /hop-response HTTP/1.1', 'Host: a.example', 'Connection: close', '', ''].join('\r\n'))
    expect(reply.status).toBe(200)
    expect(reply.body).toBe('hop')
    const h = reply.headers
    for (const name of [
      'x-secret-hop',
      'x-other-hop',
      'proxy-authenticate',
      'proxy-authentication-info',
      'proxy-connection',
      'upgrade',
      'trailer',
    ]) {
      expect(h.get(name), name).toBeUndefined()
    }
    // The edge's own server speaks for the visitor's connection: Connection: close, no origin values.
    expect(h.get('connection')).toEqual(['close'])
    expect(h.get('keep-alive')).toBeUndefined()
    expect(h.get('x-origin')).toEqual(['kept'])
  })

  it("drops the default echo origin's own hop-by-hop headers on a keep-alive connection", async () => {
    const reply = await send(main.port, { path: '/plain' })
    expect(reply.status).toBe(200)
    expect(reply.headers['x-secret-hop']).toBeUndefined()
    expect(String(reply.headers.connection ?? '')).not.toMatch(/x-secret-hop/i)
    expect(reply.headers['content-type']).toBe('application/json')
  })
})

describe('cookies and the admission header', () => {
  it('removes anteroom_* cookies and keeps the others on an unprotected path', async () => {
    const reply = await send(main.port, {
      path: '/account',
      headers: { cookie: `theme=dark; ${QUEUE_COOKIE}=abc; ${ADMISSION_COOKIE}=xyz; anteroom_js=1; sid=42; anteroom_a_other=zzz` },
    })
    expect(json<Echo>(reply.body).headers.cookie).toBe('theme=dark; sid=42')
  })

  it('removes anteroom_* cookies sent in several Cookie header lines', async () => {
    const reply = await raw(
      main.port,
      [
        'GET /two-cookie-lines HTTP/1.1',
        'Host: a.example',
        'Cookie: a=1',
        `Cookie: ${ADMISSION_COOKIE}=secret; b=2`,
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
    )
    expect(reply.status).toBe(200)
    expect(json<Echo>(reply.body).headers.cookie).toBe('a=1; b=2')
  })

  it('sends no Cookie header at all when only anteroom_* cookies came', async () => {
    const reply = await send(main.port, { path: '/only-ours', headers: { cookie: `${QUEUE_COOKIE}=abc; anteroom_js=1` } })
    expect(json<Echo>(reply.body).headers.cookie).toBeUndefined()
  })

  it('never passes a visitor-supplied Anteroom-Admission header on an unprotected path', async () => {
    const reply = await send(main.port, {
      path: '/free',
      headers: { 'Anteroom-Admission': 'forged.token.value', 'ANTEROOM-ADMISSION': 'again' },
    })
    expect(reply.status).toBe(200)
    const seen = json<Echo>(reply.body)
    expect(seen.url).toBe('/free')
    expect(seen.headers['anteroom-admission']).toBeUndefined()
  })

  it("admits on the first request: forwards with the edge's own admission header and sets the cookie", async () => {
    const before = origin.requests.length
    const first = await send(main.port, {
      path: '/shop/item?id=7',
      headers: { cookie: 'theme=dark', 'anteroom-admission': 'forged.token.value' },
    })
    expect(first.status).toBe(200)
    expect(origin.requests.length).toBe(before + 1)
    const cookies = setCookies(first.headers)
    const token = cookieValue(cookies, ADMISSION_COOKIE)
    expect(token).toBeTruthy()
    expect(cookies.some((c) => c.startsWith(`${QUEUE_COOKIE}=;`) && c.includes('Max-Age=0'))).toBe(true)
    const seen = json<Echo>(first.body)
    expect(seen.url).toBe('/shop/item?id=7')
    expect(seen.headers['anteroom-admission']).toBe(token)
    expect(seen.headers.cookie).toBe('theme=dark')
    const claims = await edge.deps.admissionTokens.verify(token, ROOM, Date.now())
    expect(claims?.room).toBe(ROOM)

    // Coming back with the admission cookie: the origin sees the token as a header, not the cookie.
    const second = await send(main.port, {
      path: '/shop/cart',
      headers: { cookie: `theme=dark; ${ADMISSION_COOKIE}=${token}`, 'anteroom-admission': 'forged.token.value' },
    })
    expect(second.status).toBe(200)
    const again = json<Echo>(second.body)
    expect(again.url).toBe('/shop/cart')
    expect(again.headers.cookie).toBe('theme=dark')
    expect(again.headers['anteroom-admission']).toBe(token)
  })

  it("keeps the origin's Set-Cookie headers next to the edge's own", async () => {
    const reply = await send(main.port, { path: '/shop/set-cookie' })
    expect(reply.status).toBe(200)
    const cookies = setCookies(reply.headers)
    expect(cookies).toContain('origin_a=1; Path=/')
    expect(cookies).toContain('origin_b=2; Path=/')
    expect(cookieValue(cookies, ADMISSION_COOKIE)).toBeTruthy()
  })
})

describe('origin failures', () => {
  it('answers 502 with an HTML page when the origin refuses connections', async () => {
    const reply = await send(refused.port, { path: '/', headers: { accept: 'text/html' } })
    expect(reply.status).toBe(502)
    expect(reply.headers['content-type']).toMatch(/^text\/html/)
    expect(reply.headers['cache-control']).toBe('no-store')
    expect(reply.body.toString()).toContain('not reachable')
  })

  it('answers 502 in JSON when the visitor asks for JSON', async () => {
    const reply = await send(refused.port, { path: '/api/items', headers: { accept: 'application/json' } })
    expect(reply.status).toBe(502)
    expect(reply.headers['content-type']).toMatch(/^application\/json/)
    expect(json<{ error: { code: string } }>(reply.body).error.code).toBe('ERR_ORIGIN_UNREACHABLE')
  })

  it('answers 502 to an admitted visitor and to a POST with a body', async () => {
    const page = await send(refused.port, { path: '/shop/x' })
    expect(page.status).toBe(502)
    const post = await send(refused.port, { method: 'POST', path: '/form', body: Buffer.alloc(256 * 1024, 0x63) })
    expect(post.status).toBe(502)
  })

  it('answers 504 when the origin does not answer in time (HTML and JSON)', async () => {
    const html = await send(impatient.port, { path: '/slow/page' })
    expect(html.status).toBe(504)
    expect(html.headers['content-type']).toMatch(/^text\/html/)
    expect(html.body.toString()).toContain('too long')
    const api = await send(impatient.port, { path: '/slow/api', headers: { accept: 'application/json' } })
    expect(api.status).toBe(504)
    expect(json<{ error: { code: string } }>(api.body).error.code).toBe('ERR_ORIGIN_TIMEOUT')
    // The origin did get both requests: the edge gave up waiting, it did not fail to connect.
    expect(origin.requests.map((r) => r.url)).toEqual(expect.arrayContaining(['/slow/page', '/slow/api']))
  })

  it('keeps serving after origin failures', async () => {
    for (const served of [refused, impatient]) {
      const health = await send(served.port, { path: '/_anteroom/health' })
      expect(health.status).toBe(200)
    }
    const ok = await send(impatient.port, { path: '/quick' })
    expect(ok.status).toBe(200)
    expect(json<Echo>(ok.body).url).toBe('/quick')
    const again = await send(refused.port, { path: '/' })
    expect(again.status).toBe(502)
  })
})

describe('only the configured origin is ever contacted', () => {
  const forwarded = (): { name: string; request: string; path: string }[] => [
    {
      name: 'absolute-form request line to another host:port',
      request: `GET http://127.0.0.1:${evilPort}/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}`,
      path: '/x?y=1',
    },
    { name: 'absolute-form request line to a named host', request: 'GET http://evil.example/x HTTP/1.1\r\nHost: evil.example', path: '/x' },
    {
      name: 'absolute-form with https and user info',
      request: `GET https://user:pw@127.0.0.1:${evilPort}/secure HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}`,
      path: '/secure',
    },
    {
      name: 'absolute-form on a protected path',
      request: `GET http://127.0.0.1:${evilPort}/shop/abs HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}`,
      path: '/shop/abs',
    },
    { name: 'Host with an odd port', request: 'GET /odd-host HTTP/1.1\r\nHost: evil.example:99', path: '/odd-host' },
    { name: 'Host 127.0.0.1:1', request: 'GET /port-one HTTP/1.1\r\nHost: 127.0.0.1:1', path: '/port-one' },
    { name: 'Host naming the evil listener', request: `GET /evil-host HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}`, path: '/evil-host' },
    {
      name: 'network-path reference //host/path',
      request: `GET //127.0.0.1:${evilPort}/path HTTP/1.1\r\nHost: a.example`,
      // Repeated slashes are collapsed: rooms are matched on, and the origin gets, the same path.
      path: `/127.0.0.1:${evilPort}/path`,
    },
    { name: '//evil.example/path', request: 'GET //evil.example/path HTTP/1.1\r\nHost: a.example', path: '/evil.example/path' },
    { name: 'dot-dot segments', request: 'GET /a/../../etc/passwd HTTP/1.1\r\nHost: a.example', path: '/etc/passwd' },
    { name: 'encoded dot-dot segments', request: 'GET /a/%2e%2e/%2E%2E/etc/passwd HTTP/1.1\r\nHost: a.example', path: '/etc/passwd' },
    { name: 'mixed dot segments', request: 'GET /a/.%2e/b/%2e./c/./d HTTP/1.1\r\nHost: a.example', path: '/c/d' },
    { name: 'dot-dot out of a protected path', request: 'GET /shop/../etc/passwd HTTP/1.1\r\nHost: a.example', path: '/etc/passwd' },
  ]

  it('forwards odd but valid requests to the configured origin only, with the path normalized', async () => {
    const cases = forwarded()
    for (const c of cases) {
      const before = origin.requests.length
      const reply = await raw(main.port, `${c.request}\r\nConnection: close\r\n\r\n`)
      expect(reply.status, c.name).toBe(200)
      expect(origin.requests.length, c.name).toBe(before + 1)
      const seen = origin.requests.at(-1)!
      expect(seen.url, c.name).toBe(c.path)
      expect(seen.headers.host, c.name).toBe(`127.0.0.1:${origin.port}`)
      expect(json<Echo>(reply.body).url, c.name).toBe(c.path)
    }
    expect(evilConnections).toBe(0)
  })

  it('refuses malformed requests with a 400 (or by closing), never a 500, and contacts nobody', async () => {
    const malformed = [
      { name: 'asterisk-form', request: 'OPTIONS * HTTP/1.1\r\nHost: a.example' },
      { name: 'unknown scheme', request: `GET ftp://127.0.0.1:${evilPort}/x HTTP/1.1\r\nHost: a.example` },
      { name: 'broken absolute URL', request: 'GET http://[::1/x HTTP/1.1\r\nHost: a.example' },
      { name: 'backslash in path', request: 'GET /\\127.0.0.1\\x HTTP/1.1\r\nHost: a.example' },
      { name: 'Host with a path', request: `GET /x HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}/y` },
      { name: 'Host with user info', request: `GET /x HTTP/1.1\r\nHost: a@127.0.0.1:${evilPort}` },
      { name: 'no Host header', request: 'GET /x HTTP/1.1' },
      { name: 'CONNECT tunnel', request: `CONNECT 127.0.0.1:${evilPort} HTTP/1.1\r\nHost: 127.0.0.1:${evilPort}` },
      { name: 'path without slash', request: 'GET x HTTP/1.1\r\nHost: a.example' },
      // Encoded slashes cannot be made unambiguous: one origin decodes them, another does not.
      { name: 'encoded slashes', request: 'GET /a/..%2f..%2fetc/passwd HTTP/1.1\r\nHost: a.example' },
    ]
    const before = origin.requests.length
    for (const c of malformed) {
      const reply = await raw(main.port, `${c.request}\r\nConnection: close\r\n\r\n`)
      expect([0, 400], `${c.name}: ${reply.head}`).toContain(reply.status)
    }
    expect(origin.requests.length).toBe(before)
    expect(evilConnections).toBe(0)
    const ok = await send(main.port, { path: '/still-serving' })
    expect(ok.status).toBe(200)
  })
})

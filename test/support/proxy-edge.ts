// The proxy tests' rig: one edge (embedded store) on @hono/node-server in front of a real echo origin with a few special paths, more edges in front of failing origins, a listener nothing may reach, and the helpers the tests send and read requests with.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, expect, type MockInstance, vi } from 'vitest'
import { UndiciOrigin } from '../../src/adapters/undici/origin.js'
import { loadConfig } from '../../src/config/index.js'
import { buildEdge, type Edge } from '../../src/entry/build.js'
import { createEdgeApp } from '../../src/http/app.js'
import { type OriginHandler, type OriginServer, startOrigin } from './origin-server.js'
import { freePort } from './redis-server.js'
import { type Served, serveOnFreePort } from './serve.js'

export const ROOM = 'shop'
export const ADMISSION_COOKIE = `anteroom_a_${ROOM}`
export const QUEUE_COOKIE = `anteroom_q_${ROOM}`

// ---------------------------------------------------------------------------------------------
// Helpers

export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  rawHeaders: string[]
  body: Buffer
}

/** One request over a fresh connection (no agent), so nothing is shared between tests. */
export function send(
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

export interface RawReply {
  /** 0 when the server closed the connection without a response. */
  status: number
  head: string
  headers: Map<string, string[]>
  body: string
}

/** Writes `text` as-is over a TCP socket and reads until the server closes (or 3 s pass). */
export function raw(port: number, text: string): Promise<RawReply> {
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

export function json<T = Record<string, unknown>>(body: Buffer | string): T {
  return JSON.parse(body.toString()) as T
}

export interface Echo {
  method: string
  url: string
  headers: IncomingHttpHeaders
  bodyLength: number
}

export function setCookies(headers: IncomingHttpHeaders): string[] {
  const v = headers['set-cookie']
  return v === undefined ? [] : v
}

export function cookieValue(cookies: string[], name: string): string | undefined {
  for (const c of cookies) {
    const first = c.split(';')[0] ?? ''
    if (first.startsWith(`${name}=`)) return first.slice(name.length + 1)
  }
  return undefined
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** Resolves with 'timeout' instead of hanging when `p` does not settle in time. */
export function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
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
export const streamOut = {
  release: deferred<'signal'>(),
  finished: false,
  releasedBy: '' as 'signal' | 'timeout' | '',
}

/** Responses the origin holds without answering (for the 504 test); released in afterAll. */
const held: { end(): void }[] = []

/** One promise per response on /stream-big, settled when that response is closed (finished or aborted). */
export const streamBigClosed: Promise<void>[] = []

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
// Set-up: one edge (embedded store), a few servers in front of it. The servers are live bindings,
// set once useProxyEdge's beforeAll has run.

const logged: { event: string; fields: Record<string, unknown> }[] = []
export let origin: OriginServer
export let edge: Edge
export let main: Served
/** The same edge, but its origin is a closed port. */
export let refused: Served
let refusedOrigin: UndiciOrigin
/** The same edge, with a 200 ms headers timeout towards the main origin. */
export let impatient: Served
let impatientOrigin: UndiciOrigin
/** Nothing may ever connect here. */
let evil: NetServer
export let evilPort: number
export let evilConnections = 0
let consoleError: MockInstance<typeof console.error>

/**
 * Starts the rig for the calling test file (beforeAll), closes it (afterAll), and checks after every
 * test on its own that none logged an internal error or printed to console.error.
 */
export function useProxyEdge(): void {
  consoleError = vi.spyOn(console, 'error')
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
    await Promise.all([main?.close(), refused?.close(), impatient?.close()])
    await Promise.all([refusedOrigin?.close(), impatientOrigin?.close()])
    await edge?.close()
    await origin?.close()
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
}

/** Admits a fresh visitor on the protected path and returns their admission token. */
export async function admit(): Promise<string> {
  const first = await send(main.port, { path: '/shop/start' })
  expect(first.status).toBe(200)
  const token = cookieValue(setCookies(first.headers), ADMISSION_COOKIE)
  expect(token).toBeTruthy()
  return token as string
}

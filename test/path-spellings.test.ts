// Issue #10 §1: spellings of a protected path must not get past a room. A room guards /shop with its one
// slot taken; a newcomer sends raw request lines (over a socket, so nothing normalises them on the way)
// that real origins, Debian's nginx and Python's http.server, may resolve to /shop/secret.txt. On Node and
// on the Worker in workerd, for each origin: no answer carries the secret, and the origin's log shows no
// request for the secret file without an Anteroom-Admission header. The admitted visitor still gets the file
// under ordinary spellings, and nothing under the reserved /_anteroom prefix reaches the origin.
import { connect } from 'node:net'
import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { testEdge } from './support/edge.js'
import { startNginx } from './support/nginx.js'
import { type RequestTarget, workerRuntime } from './support/runtimes.js'
import { serveOnFreePort } from './support/serve.js'
import { type OriginHit, type StaticOrigin, startPythonOrigin } from './support/static-origins.js'
import { Visitor } from './support/visitor.js'

const ROOM = { id: 'shop', paths: ['/shop'], totalActiveUsers: 1, newUsersPerMinute: 60, sessionDurationSeconds: 600 }

interface Spelling {
  target: string
  /** Set for unambiguous-but-bad spellings the edge must refuse with 400: the problem. */
  bad?: string
}

/** Request targets for /shop/secret.txt that some server or other may resolve to it. */
function spellings(originPort: number, edgePort: number): Spelling[] {
  const slash = 'encoded slash'
  const backslash = 'encoded backslash'
  const nul = 'NUL'
  const control = 'control character'
  const double = 'double encoding'
  const overlong = 'overlong UTF-8'
  const param = '; path parameter'
  return [
    // Encoded slashes: nginx and http.server decode them, then resolve the dot segments they make.
    { target: '/x/..%2fshop/secret.txt', bad: slash },
    { target: '/x/..%2Fshop/secret.txt', bad: slash },
    { target: '/x%2f..%2fshop/secret.txt', bad: slash },
    { target: '/x/%2e%2e%2fshop/secret.txt', bad: slash },
    { target: '/shop%2fsecret.txt', bad: slash },
    { target: '/shop%2Fsecret.txt', bad: slash },
    { target: '/%2fshop/secret.txt', bad: slash },
    { target: '/public/..%2fshop/secret.txt', bad: slash },
    // Encoded and literal backslashes (Windows-style separators; some servers and URL parsers read them as /).
    { target: '/x/..%5cshop/secret.txt', bad: backslash },
    { target: '/x/..%5Cshop/secret.txt', bad: backslash },
    { target: '/x\\..\\shop\\secret.txt' },
    { target: '/x/..\\shop/secret.txt' },
    { target: '/shop\\secret.txt' },
    // ; path parameters (Tomcat and friends drop them; nginx takes them literally).
    { target: '/x/..;/shop/secret.txt', bad: param },
    { target: '/x/..;x=1/shop/secret.txt', bad: param },
    { target: '/shop;/secret.txt', bad: param },
    { target: '/shop;jsessionid=1/secret.txt', bad: param },
    { target: '/shop%3b/secret.txt' },
    // Dot segments, plain and encoded.
    { target: '/x/../shop/secret.txt' },
    { target: '/./shop/secret.txt' },
    { target: '/shop/./secret.txt' },
    { target: '/shop/.' },
    { target: '/%2e/shop/secret.txt' },
    { target: '/%2E%2E/shop/secret.txt' },
    { target: '/x/%2e%2e/shop/secret.txt' },
    { target: '/x/.%2e/shop/secret.txt' },
    { target: '/shop/%2e/secret.txt' },
    { target: '/shop/%2e%2e/shop/secret.txt' },
    { target: '/public/../shop/secret.txt' },
    { target: '/public/%2e%2e/shop/secret.txt' },
    { target: '/_ANTEROOM/../shop/secret.txt' },
    // Repeated slashes, case, and escapes of unreserved characters.
    { target: '//shop/secret.txt' },
    { target: '///shop//secret.txt' },
    { target: '/SHOP/secret.txt' },
    { target: '/Shop/secret.txt' },
    { target: '/%73hop/secret.txt' },
    { target: '/%53HOP/secret.txt' },
    { target: '/sh%6fp/secret.txt' },
    { target: '/shop/secret%2etxt' },
    // Double encoding and overlong UTF-8.
    { target: '/x/%252e%252e/shop/secret.txt', bad: double },
    { target: '/%2573hop/secret.txt', bad: double },
    { target: '/x/..%252fshop/secret.txt', bad: double },
    { target: '/x/%c0%ae%c0%ae/shop/secret.txt', bad: overlong },
    { target: '/x/%c0%af../shop/secret.txt', bad: overlong },
    { target: '/x/..%c0%afshop/secret.txt', bad: overlong },
    // NUL and other control characters, encoded and raw in the request line.
    { target: '/shop%00/secret.txt', bad: nul },
    { target: '/shop/secret.txt%00', bad: nul },
    { target: '/shop/secret.txt%00.html', bad: nul },
    { target: '/sh%09op/secret.txt', bad: control },
    { target: '/shop%0a/secret.txt', bad: control },
    { target: '/sh\top/secret.txt' },
    { target: '/shop/\tsecret.txt' },
    { target: '/shop\x0b/secret.txt' },
    { target: '/shop\x0c/secret.txt' },
    { target: '/shop\x01/secret.txt' },
    { target: '/shop\x7f/secret.txt' },
    { target: '/shop\x00/secret.txt' },
    // Trailing dots and spaces (Windows drops them), NTFS streams, %u escapes, look-alike slashes.
    { target: '/shop./secret.txt' },
    { target: '/shop%20/secret.txt' },
    { target: '/shop/secret.txt.' },
    { target: '/shop/secret.txt%20' },
    { target: '/shop/secret.txt::$DATA' },
    { target: '/shop%u002fsecret.txt' },
    { target: '/x/..%u2215shop/secret.txt' },
    { target: '/x/..%e2%88%95shop/secret.txt' },
    { target: '/x/..%ef%bc%8fshop/secret.txt' },
    // The plain path with a query or fragment, and absolute-form request targets.
    { target: '/shop/secret.txt' },
    { target: '/shop/secret.txt?x=1' },
    { target: '/shop/secret.txt#x' },
    // workerd cannot parse an absolute-form target and answers 500 itself: the Worker never sees one.
    { target: `http://127.0.0.1:${originPort}/shop/secret.txt` },
    { target: `http://127.0.0.1:${originPort}/x/..%2fshop/secret.txt` },
    { target: `http://127.0.0.1:${edgePort}/shop/secret.txt` },
    { target: `http://127.0.0.1:${edgePort}/x/../shop/secret.txt` },
  ]
}

/** Spellings of the secret file that the admitted visitor must still get. */
const ORDINARY = [
  '/shop/secret.txt',
  '//shop/secret.txt',
  '/shop//secret.txt',
  '/%73hop/secret.txt',
  '/shop/./secret.txt',
  '/x/../shop/secret.txt',
]

/** Spellings under the reserved prefix that must never be forwarded; the first ones must be a 404 or a 400. */
const RESERVED = [
  '/_ANTEROOM/api/rooms',
  '/_anteroom%2fapi/rooms',
  '/_Anteroom/api/rooms',
  '/%5fanteroom/api/rooms',
  '/_anteroom%2Fapi%2Frooms',
  '/_ANTEROOM%2fapi/rooms',
  '/_anteroom;x/api/rooms',
  '//_anteroom/api/rooms',
  '/x/../_ANTEROOM/api/rooms',
  '/_anteroom/./api/rooms',
]
const RESERVED_NOT_FOUND_OR_BAD = new Set(['/_ANTEROOM/api/rooms', '/_anteroom%2fapi/rooms'])

interface RawAnswer {
  status: number
  headers: string
  body: string
  /** A socket error or no answer, if the exchange did not end cleanly. */
  error?: string
}

/** The body of a chunked message (latin1 text), or undefined while its last chunk has not arrived. */
function dechunk(body: string): string | undefined {
  let out = ''
  let at = 0
  for (;;) {
    const eol = body.indexOf('\r\n', at)
    if (eol < 0) return undefined
    const size = Number.parseInt(body.slice(at, eol).split(';')[0] as string, 16)
    if (!Number.isFinite(size)) return body
    if (size === 0) return out
    if (body.length < eol + 2 + size + 2) return undefined
    out += body.slice(eol + 2, eol + 2 + size)
    at = eol + 2 + size + 2
  }
}

/** Splits a raw answer; complete is false while its body (by Content-Length or chunks) is still arriving. */
function parseAnswer(text: string): RawAnswer & { complete: boolean } {
  const split = text.indexOf('\r\n\r\n')
  if (split < 0) return { status: 0, headers: text, body: '', complete: false }
  const headers = text.slice(0, split)
  const rest = text.slice(split + 4)
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headers)?.[1] ?? 0)
  if (/^transfer-encoding:[ \t]*chunked/im.test(headers)) {
    const body = dechunk(rest)
    return { status, headers, body: body ?? rest, complete: body !== undefined }
  }
  const length = /^content-length:[ \t]*(\d+)/im.exec(headers)?.[1]
  if (length !== undefined) return { status, headers, body: rest.slice(0, Number(length)), complete: rest.length >= Number(length) }
  return { status, headers, body: rest, complete: status === 204 || status === 304 }
}

/**
 * Sends one raw request (every character as one byte, exactly as given) and reads the whole answer, by its
 * framing: workerd keeps the connection open despite Connection: close. The socket timeout only keeps a
 * server that never answers from hanging the test; it is reported, not asserted.
 */
function rawRequest(port: number, target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const lines = [`GET ${target} HTTP/1.1`, `Host: 127.0.0.1:${port}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
  const request = Buffer.from(`${lines.join('\r\n')}\r\nConnection: close\r\n\r\n`, 'latin1')
  return new Promise((done) => {
    const chunks: Buffer[] = []
    let error: string | undefined
    let finished = false
    const finish = () => {
      if (finished) return
      finished = true
      socket.destroy()
      const { complete: _, ...answer } = parseAnswer(Buffer.concat(chunks).toString('latin1'))
      done(error === undefined ? answer : { ...answer, error })
    }
    // No half-close after the request: a server may take the client's FIN for an aborted request.
    const socket = connect({ port, host: '127.0.0.1' }, () => socket.write(request))
    socket.setTimeout(15_000, () => {
      error = 'no answer'
      finish()
    })
    socket.on('data', (d: Buffer) => {
      chunks.push(d)
      if (parseAnswer(Buffer.concat(chunks).toString('latin1')).complete) finish()
    })
    socket.on('error', (err) => {
      error = err.message
    })
    socket.on('close', finish)
  })
}

const show = (s: string) => JSON.stringify(s)
const start = (body: string) => show(body.replace(/\s+/g, ' ').trim().slice(0, 120))

interface RawEdge {
  port: number
  app: RequestTarget
  close(): Promise<void>
}

/** An edge with the room in front of originUrl, listening on a real loopback socket. */
async function startEdge(runtime: 'node' | 'worker', originUrl: string): Promise<RawEdge> {
  if (runtime === 'node') {
    const edge = await testEdge({ rooms: [ROOM], originUrl })
    const server = await serveOnFreePort(edge.app.fetch)
    return {
      port: server.port,
      app: edge.app,
      async close() {
        await server.close()
        await edge.close()
      },
    }
  }
  const edge = await workerRuntime(() => inject('redisUrl')).start({ rooms: [ROOM], originUrl })
  // workerd's own listener: the URL a Worker sees is http://<Host header><target>, whatever Host says.
  return { port: Number(new URL(edge.url as string).port), app: edge.app, close: () => edge.close() }
}

const origins: Partial<Record<'nginx' | 'python', StaticOrigin>> = {}

beforeAll(async () => {
  const [n, p] = await Promise.allSettled([startNginx(), startPythonOrigin()])
  if (n.status === 'fulfilled') origins.nginx = n.value
  if (p.status === 'fulfilled') origins.python = p.value
  if (n.status === 'rejected') throw n.reason
  if (p.status === 'rejected') throw p.reason
})
afterAll(async () => {
  await Promise.all(Object.values(origins).map((o) => o.stop()))
})

describe.each(['node', 'worker'] as const)('path spellings on %s', (runtime) => {
  describe.each(['nginx', 'python'] as const)('in front of %s', (kind) => {
    let origin: StaticOrigin
    let edge: RawEdge | undefined
    let admitted: string

    /** Sends one raw request through the edge; answers it with the requests the origin logged meanwhile. */
    async function probe(target: string, headers: Record<string, string> = {}): Promise<{ answer: RawAnswer; hits: OriginHit[] }> {
      await origin.settle()
      const before = (await origin.hits()).length
      const answer = await rawRequest((edge as RawEdge).port, target, headers)
      await origin.settle()
      return { answer, hits: (await origin.hits()).slice(before) }
    }

    const isSecret = (hit: OriginHit) => hit.file !== '' && resolve(hit.file) === origin.docs.secretFile
    const showHits = (hits: OriginHit[]) =>
      hits.map((h) => `origin got ${show(h.target)} -> ${h.status} ${show(h.file)}${h.admitted ? ' (admitted)' : ''}`).join('; ')

    beforeAll(async () => {
      origin = origins[kind] as StaticOrigin
      edge = await startEdge(runtime, origin.url)
      // Take the room's one slot.
      const visitor = new Visitor()
      const res = await visitor.request(edge.app, '/shop/index.html')
      const body = await res.text()
      if (res.status !== 200 || !body.includes(origin.docs.index) || !visitor.cookies.has('anteroom_a_shop'))
        throw new Error(`the first visitor was not admitted: ${res.status} ${start(body)}`)
      admitted = visitor.cookieHeader()
    })
    afterAll(async () => {
      await edge?.close()
    })

    it('no spelling gets a newcomer the protected file, and none reaches the origin for it without admission', async () => {
      const list = spellings(origin.port, (edge as RawEdge).port)
      expect(list.length).toBeGreaterThanOrEqual(40)
      const leaks: string[] = []
      const table: string[] = []
      for (const { target } of list) {
        const { answer, hits } = await probe(target, { accept: 'text/html' })
        const bodyLeak = answer.body.includes(origin.docs.secret)
        const unadmitted = hits.filter((h) => isSecret(h) && !h.admitted)
        const line = `${show(target)} -> ${answer.status}${answer.error ? ` (${answer.error})` : ''} ${start(answer.body)}${hits.length ? ` | ${showHits(hits)}` : ''}`
        table.push(line)
        if (bodyLeak || unadmitted.length > 0) leaks.push(`${bodyLeak ? 'BODY' : 'ORIGIN'} ${line}`)
      }
      if (process.env.ANTEROOM_SPELLINGS_VERBOSE) console.log(`${runtime} / ${kind}:\n${table.join('\n')}`)
      expect(leaks, `${leaks.length} of ${list.length} spellings leaked on ${runtime} in front of ${kind}:\n${leaks.join('\n')}`).toEqual(
        [],
      )
    })

    it('refuses the unambiguous-but-bad spellings with 400 and an explanation', async () => {
      const wrong: string[] = []
      const table: string[] = []
      for (const { target, bad } of spellings(origin.port, (edge as RawEdge).port)) {
        if (bad === undefined) continue
        const { answer, hits } = await probe(target, { accept: 'application/json' })
        const text = answer.body.trim()
        const explained = text !== '' && !/^bad request\.?$/i.test(text)
        const line = `${show(target)} (${bad}) -> ${answer.status} ${start(answer.body)}${hits.length ? ` | ${showHits(hits)}` : ''}`
        table.push(line)
        if (answer.status !== 400 || !explained || hits.length > 0) wrong.push(line)
      }
      if (process.env.ANTEROOM_SPELLINGS_VERBOSE) console.log(`${runtime} / ${kind}, refused:\n${table.join('\n')}`)
      expect(wrong, `not a 400 with an explanation, on ${runtime} in front of ${kind}:\n${wrong.join('\n')}`).toEqual([])
    })

    it('the admitted visitor still gets the file under ordinary spellings; a newcomer gets /public', async () => {
      const wrong: string[] = []
      for (const target of ORDINARY) {
        const { answer, hits } = await probe(target, { cookie: admitted })
        if (!answer.body.includes(origin.docs.secret))
          wrong.push(`admitted ${show(target)} -> ${answer.status} ${start(answer.body)} | ${showHits(hits)}`)
      }
      const { answer } = await probe('/public/hello.txt')
      if (!answer.body.includes(origin.docs.hello)) wrong.push(`newcomer /public/hello.txt -> ${answer.status} ${start(answer.body)}`)
      expect(wrong, `on ${runtime} in front of ${kind}:\n${wrong.join('\n')}`).toEqual([])
    })

    it('nothing under the reserved /_anteroom prefix, in any spelling, reaches the origin, credentials least of all', async () => {
      const wrong: string[] = []
      for (const target of RESERVED) {
        const { answer, hits } = await probe(target, {
          authorization: 'Bearer x',
          cookie: 'anteroom_admin=forged-session',
          accept: 'application/json',
        })
        const allowed = RESERVED_NOT_FOUND_OR_BAD.has(target) ? [400, 404] : [400, 401, 403, 404]
        if (hits.length > 0 || !allowed.includes(answer.status))
          wrong.push(`${show(target)} -> ${answer.status} ${start(answer.body)}${hits.length ? ` | ${showHits(hits)}` : ''}`)
      }
      expect(wrong, `on ${runtime} in front of ${kind}:\n${wrong.join('\n')}`).toEqual([])
    })
  })
})

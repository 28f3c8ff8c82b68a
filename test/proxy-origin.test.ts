// The proxy end to end, the origin: its failures become clear 502/504 pages, and nothing a request says can point the edge at any host but the configured origin.
import { describe, expect, it } from 'vitest'
import {
  type Echo,
  evilConnections,
  evilPort,
  impatient,
  json,
  main,
  origin,
  raw,
  refused,
  send,
  useProxyEdge,
} from './support/proxy-edge.js'

useProxyEdge()

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

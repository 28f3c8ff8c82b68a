// The proxy end to end, headers: hop-by-hop headers stop at the edge, client-address headers come from the socket, and anteroom_* cookies and the admission header never reach the origin.
import { describe, expect, it } from 'vitest'
import {
  ADMISSION_COOKIE,
  cookieValue,
  type Echo,
  edge,
  json,
  main,
  origin,
  QUEUE_COOKIE,
  ROOM,
  raw,
  send,
  setCookies,
  useProxyEdge,
} from './support/proxy-edge.js'

useProxyEdge()

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

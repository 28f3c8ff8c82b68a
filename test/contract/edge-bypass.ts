// Bypass rules over HTTP, on each runtime (test/edge.test.ts on Node, test/worker.test.ts in workerd):
// a request let past the line by each kind of rule (the client's network, a secret header, a path, a
// crawler verified by a real DNS server: dnsmasq, reached by node:dns on Node and through DNS over
// HTTPS on the Worker) is forwarded with an admission marked `bypass` and takes no place in the line;
// what a client writes (X-Forwarded-For and its kin, a forged or wrong secret, another spelling of a
// path, a crawler's User-Agent from elsewhere) gets nothing; the secret never reaches the origin nor a
// log line; the metrics count each rule; the admin API edits rules and names the field of bad input.
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DnsServer, startDnsmasq } from '../support/dnsmasq.js'
import { type DohBridge, startDohBridge } from '../support/doh-bridge.js'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import { Scrape } from '../support/prometheus.js'
import type { EdgeRuntime, RequestTarget, TestEdge } from '../support/runtimes.js'
import { Visitor } from '../support/visitor.js'

const ADMIN_TOKEN = 'bypass-admin-token-0123456789abcdef'
const SECRET_A = `partner-a-${'s3cr3t'.repeat(6)}`
const SECRET_B = `partner-b-${'0th3r'.repeat(7)}`
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'

const RULES = [
  { id: 'office', kind: 'cidr', networks: ['10.20.0.0/16', '2001:db8:aa::/48'] },
  { id: 'partner', kind: 'header', secret: 'partner-a' },
  { id: 'static', kind: 'path', paths: ['/tickets/static'] },
  { id: 'search', kind: 'crawler', crawlers: ['googlebot'] },
]
const ROOMS = [
  { id: 'sale', paths: ['/tickets'], totalActiveUsers: 1, newUsersPerMinute: 60, refreshSeconds: 5, bypass: RULES },
  {
    id: 'other',
    paths: ['/other'],
    totalActiveUsers: 1,
    newUsersPerMinute: 60,
    bypass: [{ id: 'other-partner', kind: 'header', secret: 'partner-b' }],
  },
]

interface Echo {
  url: string
  headers: Record<string, string>
}

export function edgeBypassContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  let dns: DnsServer
  let bridge: DohBridge
  let edge: TestEdge
  let app: RequestTarget
  let jwks: ReturnType<typeof createLocalJWKSet>

  beforeAll(async () => {
    origin = await startOrigin()
    dns = await startDnsmasq({
      local: ['in-addr.arpa', 'googlebot.com'],
      hosts: [
        ['crawl-66-249-66-1.googlebot.com', '66.249.66.1'],
        ['crawl-fake.googlebot.com', '198.51.100.99'],
      ],
      ptrs: [['203.0.113.9', 'crawl-fake.googlebot.com']],
    })
    bridge = await startDohBridge(dns.address)
    edge = await runtime.start({
      rooms: ROOMS,
      originUrl: origin.url,
      adminTokens: `ops:${ADMIN_TOKEN}`,
      env: {
        ANTEROOM_BYPASS_SECRETS: `partner-a:${SECRET_A},partner-b:${SECRET_B}`,
        // Each runtime asks its own way: node:dns at the server, the Worker DNS over HTTPS.
        ANTEROOM_DNS_SERVER: dns.address,
        ANTEROOM_DOH_URL: bridge.url,
        ANTEROOM_LOG_LEVEL: 'debug',
      },
    })
    app = edge.app
    jwks = createLocalJWKSet((await (await app.request('http://shop.test/.well-known/jwks.json')).json()) as JSONWebKeySet)
    // Each room's one slot is taken: whoever is not let past waits.
    expect((await new Visitor('http://shop.test', '203.0.113.1').status(app, 'sale')).state).toBe('admitted')
    expect((await new Visitor('http://shop.test', '203.0.113.1').status(app, 'other')).state).toBe('admitted')
  })
  afterAll(async () => {
    await edge?.close()
    await bridge?.close()
    await dns?.stop()
    await origin?.close()
  })

  const admin = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(`http://shop.test/_anteroom/api${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, accept: 'application/json', 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  /** A request as the origin saw it, and the bypass admission it carried, checked with the edge's JWKS. */
  async function passed(res: Response) {
    expect(res.status).toBe(200)
    const echo = (await res.json()) as Echo
    const { payload } = await jwtVerify(echo.headers['anteroom-admission'] as string, jwks, { algorithms: ['ES256'] })
    // Never a cookie: a pass by network, secret or path must not travel to another client.
    expect(res.headers.getSetCookie().filter((c) => c.startsWith('anteroom_'))).toEqual([])
    return { echo, claims: payload as Record<string, unknown> }
  }

  /** A request that was not let past: the visitor waits in line, and the origin saw nothing. */
  async function held(v: Visitor, path: string, init: RequestInit = {}) {
    const before = origin.requests.length
    const res = await v.request(app, path, { ...init, json: true })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { state: string }).state).toBe('queued')
    expect(origin.requests.length).toBe(before)
  }

  describe(`bypass rules (${runtime.name})`, () => {
    it('lets a client of a listed network past, by the runtime’s address only (IPv4, IPv6, IPv4-mapped), as a short bypass admission not counted in line', async () => {
      for (const ip of ['10.20.3.4', '::ffff:10.20.9.9', '2001:db8:aa::5']) {
        const res = await new Visitor('http://shop.test', ip).request(app, '/tickets/buy?seat=A1')
        const { echo, claims } = await passed(res)
        expect(echo.url, ip).toBe('/tickets/buy?seat=A1')
        expect(claims, ip).toMatchObject({ room: 'sale', bypass: 'office' })
        expect((claims.exp as number) - (claims.iat as number)).toBe(60)
        expect(claims.sub).toMatch(/^[A-Za-z0-9_-]{16}$/)
      }
      const stats = await edge.queue.stats('sale', edge.clock.now())
      expect([stats.waiting, stats.active]).toEqual([0, 1])
    })

    it('refuses a network a client only claims (X-Forwarded-For, X-Real-IP, Forwarded, True-Client-IP, CF-Connecting-IP), and a bypass admission brought as a cookie', async () => {
      // A bypass admission, taken from the origin's side, does not work as a cookie elsewhere.
      const taken = (await passed(await new Visitor('http://shop.test', '10.20.3.5').request(app, '/tickets/x'))).echo.headers[
        'anteroom-admission'
      ]
      await held(new Visitor('http://shop.test', '203.0.113.9'), '/tickets/buy', { headers: { cookie: `anteroom_a_sale=${taken}` } })
      const v = new Visitor('http://shop.test', '203.0.113.8')
      await held(v, '/tickets/buy', {
        headers: {
          'x-forwarded-for': '10.20.3.4',
          'x-real-ip': '10.20.3.4',
          forwarded: 'for=10.20.3.4',
          'true-client-ip': '10.20.3.4',
          'cf-connecting-ip': '10.20.3.4',
          'x-client-ip': '10.20.3.4',
        },
      })
    })

    it('lets the holder of a secret past by Anteroom-Bypass; the secret never reaches the origin, in any spelling', async () => {
      const { echo, claims } = await passed(
        await new Visitor('http://shop.test', '203.0.113.20').request(app, '/tickets/api/orders', {
          headers: { 'anteroom-bypass': SECRET_A },
        }),
      )
      expect(claims).toMatchObject({ room: 'sale', bypass: 'partner' })
      expect(JSON.stringify(echo)).not.toContain(SECRET_A)
      // Let past by its network, with the secret under names a CGI origin reads as the same header.
      const office = await passed(
        await new Visitor('http://shop.test', '10.20.0.7').request(app, '/tickets/x', {
          headers: { anteroom_bypass: SECRET_A, 'ANTEROOM-BYPASS': SECRET_A },
        }),
      )
      expect(JSON.stringify(office.echo)).not.toContain(SECRET_A)
      expect(Object.keys(office.echo.headers).filter((h) => h.replace(/_/g, '-').startsWith('anteroom-'))).toEqual(['anteroom-admission'])
    })

    it('refuses a wrong, partial or padded secret, another room’s secret, and the secret under another header', async () => {
      const v = new Visitor('http://shop.test', '203.0.113.21')
      const forged: Record<string, string>[] = [
        { 'anteroom-bypass': SECRET_A.slice(0, -1) },
        { 'anteroom-bypass': `${SECRET_A}x` },
        { 'anteroom-bypass': SECRET_B },
        { 'anteroom-bypass': 'partner-a' },
        { 'x-anteroom-bypass': SECRET_A },
        { authorization: `Bearer ${SECRET_A}` },
      ]
      for (const headers of forged) await held(v.clone(), '/tickets/buy', { headers })
    })

    it('lets a path of the room past by its canonical form, case-insensitively and by whole segments, and no other spelling', async () => {
      for (const [path, forwarded] of [
        ['/tickets/static/app.css', '/tickets/static/app.css'],
        ['/TICKETS/Static/app.css', '/TICKETS/Static/app.css'],
        ['/tickets//static/./img/%6Cogo.png', '/tickets/static/img/logo.png'],
      ]) {
        const { echo, claims } = await passed(await new Visitor('http://shop.test', '203.0.113.30').request(app, path as string))
        expect(echo.url, path).toBe(forwarded)
        expect(claims.bypass, path).toBe('static')
      }
      for (const path of ['/tickets/static/../buy', '/tickets/staticx/app.css', '/tickets/static-admin', '/tickets/buy/static/x'])
        await held(new Visitor('http://shop.test', '203.0.113.31'), path)
      for (const path of ['/tickets/static%2f..%2fbuy', '/tickets/static/..%5cbuy', '/tickets/static/%252e%252e/buy']) {
        const res = await new Visitor('http://shop.test', '203.0.113.31').request(app, path, { json: true })
        expect(res.status, path).toBe(400)
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('ERR_BAD_PATH')
      }
    })

    it('lets a crawler past only when reverse and forward DNS agree; its User-Agent alone gets nothing', async () => {
      const { claims } = await passed(
        await new Visitor('http://shop.test', '66.249.66.1').request(app, '/tickets/event/42', { headers: { 'user-agent': GOOGLEBOT } }),
      )
      expect(claims.bypass).toBe('search')
      // Again: from the cache.
      await passed(
        await new Visitor('http://shop.test', '66.249.66.1').request(app, '/tickets/event/43', { headers: { 'user-agent': GOOGLEBOT } }),
      )
      // A spoofed PTR record, an address with none, a verified address with another crawler's or a browser's User-Agent.
      await held(new Visitor('http://shop.test', '203.0.113.9'), '/tickets/event/42', { headers: { 'user-agent': GOOGLEBOT } })
      await held(new Visitor('http://shop.test', '203.0.113.10'), '/tickets/event/42', { headers: { 'user-agent': GOOGLEBOT } })
      await held(new Visitor('http://shop.test', '66.249.66.1'), '/tickets/event/42', {
        headers: { 'user-agent': 'Mozilla/5.0 (compatible; bingbot/2.0)' },
      })
      await held(new Visitor('http://shop.test', '66.249.66.1'), '/tickets/event/42', {
        headers: { 'user-agent': 'Mozilla/5.0 Chrome/126.0' },
      })
      // A rule of one room never applies in another.
      await held(new Visitor('http://shop.test', '203.0.113.40'), '/other/x', { headers: { 'anteroom-bypass': SECRET_A } })
    })

    it('counts each rule and the crawler checks, logs each bypass with its room, rule and request id, and never the secret', async () => {
      const res = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      const m = new Scrape(await res.text())
      expect(m.value('anteroom_bypasses_total', { room: 'sale', rule: 'office', kind: 'cidr' })).toBe(5)
      expect(m.value('anteroom_bypasses_total', { room: 'sale', rule: 'partner', kind: 'header' })).toBe(1)
      expect(m.value('anteroom_bypasses_total', { room: 'sale', rule: 'static', kind: 'path' })).toBe(3)
      expect(m.value('anteroom_bypasses_total', { room: 'sale', rule: 'search', kind: 'crawler' })).toBe(2)
      expect(m.value('anteroom_crawler_checks_total', { outcome: 'verified' })).toBe(2)
      expect(m.value('anteroom_crawler_lookups_total', { outcome: 'verified' })).toBe(1)
      expect(m.value('anteroom_crawler_lookups_total', { outcome: 'refused' })).toBe(2)
      await expect.poll(() => edge.logs()).toContain('"event":"bypass"')
      const lines = edge
        .logs()
        .split('\n')
        .filter((l) => l.includes('"event":"bypass"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(lines.length).toBe(11)
      expect(lines[0]).toMatchObject({ room: 'sale', rule: 'office', kind: 'cidr', requestId: expect.any(String) })
      for (const secret of [SECRET_A, SECRET_B]) expect(edge.logs()).not.toContain(secret)
      // Not cut out by the log's scrubbing either: never written.
      expect(edge.logs()).not.toContain('[redacted]')
    })

    it('admin API: shows the rules, names the field of each bad rule, adds, changes and removes rules (audited), and every edge applies them', async () => {
      const view = await admin('GET', '/rooms/sale/bypass')
      expect(view.status).toBe(200)
      const body = (await view.json()) as Record<string, unknown> & { counts: { rules: Record<string, number> } }
      expect(body).toMatchObject({
        room: 'sale',
        rules: RULES,
        secrets: ['partner-a', 'partner-b'],
        humanCheck: { mode: 'off', provider: null },
      })
      expect(body.counts.rules.office).toBe(5)
      const bad: [unknown, string][] = [
        [{ id: 'net', kind: 'cidr', networks: ['10.30.0.1/16'] }, 'networks[0]'],
        [{ id: 'net', kind: 'cidr', networks: ['0.0.0.0/0'] }, 'networks[0]'],
        [{ id: 'p', kind: 'path', paths: ['/tickets/%73hop'] }, 'paths[0]'],
        [{ id: 'p', kind: 'path', paths: ['/other/x'] }, 'paths[0]'],
        [{ id: 'c', kind: 'crawler', crawlers: ['askjeeves'] }, 'crawlers[0]'],
        [{ id: 'h', kind: 'header', secret: 'partner-z' }, 'secret'],
        [{ id: 'office', kind: 'cidr', networks: ['10.30.0.0/16'] }, 'id'],
        [{ id: 'x', kind: 'xff', networks: ['10.30.0.0/16'] }, 'kind'],
      ]
      for (const [rule, field] of bad) {
        const res = await admin('POST', '/rooms/sale/bypass/rules', rule)
        expect([res.status, ((await res.json()) as { error: { code: string; field: string } }).error], JSON.stringify(rule)).toMatchObject([
          400,
          { code: 'ERR_SETTINGS_INVALID', field },
        ])
      }
      const v = new Visitor('http://shop.test', '10.30.1.1')
      await held(v, '/tickets/buy')
      const added = await admin('POST', '/rooms/sale/bypass/rules', { id: 'venue', kind: 'cidr', networks: ['10.30.0.0/16'] })
      expect(added.status).toBe(201)
      const { etag } = (await added.json()) as { etag: string }
      // Every edge reads the rooms within a second.
      await edge.clock.advance(1_001)
      await v.request(app, '/tickets/ping', { json: true })
      await edge.settled()
      expect((await passed(await v.clone().request(app, '/tickets/buy'))).claims.bypass).toBe('venue')
      const stale = await admin(
        'PUT',
        '/rooms/sale/bypass/rules/venue',
        { kind: 'cidr', networks: ['10.31.0.0/16'] },
        { 'if-match': '"rev-1"' },
      )
      expect(stale.status).toBe(412)
      const changed = await admin(
        'PUT',
        '/rooms/sale/bypass/rules/venue',
        { kind: 'cidr', networks: ['10.31.0.0/16'] },
        { 'if-match': etag },
      )
      expect(changed.status).toBe(200)
      expect((await admin('PUT', '/rooms/sale/bypass/rules/venue', { kind: 'path', paths: ['/tickets/%7e'] })).status).toBe(400)
      expect((await admin('DELETE', '/rooms/sale/bypass/rules/nope')).status).toBe(404)
      expect((await admin('DELETE', '/rooms/sale/bypass/rules/venue')).status).toBe(200)
      const audit = (await (await admin('GET', '/audit?kind=changes')).json()) as {
        entries: { who: string; action: string; after: unknown }[]
      }
      expect(audit.entries.slice(0, 3).map((e) => [e.who, e.action])).toEqual([
        ['ops', 'bypass.remove'],
        ['ops', 'bypass.update'],
        ['ops', 'bypass.add'],
      ])
      expect(audit.entries[1]?.after).toEqual({ id: 'venue', kind: 'cidr', networks: ['10.31.0.0/16'] })
      // A human check needs a provider, which this edge has not.
      const room = await admin('GET', '/rooms/sale')
      const patch = await admin('PATCH', '/rooms/sale', { humanCheck: 'turnstile' }, { 'if-match': room.headers.get('etag') as string })
      expect([patch.status, ((await patch.json()) as { error: { field: string } }).error.field]).toEqual([400, 'humanCheck'])
    })
  })
}

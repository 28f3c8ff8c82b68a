// The edge's HTTP behaviour, as a visitor and the origin see it, run against each runtime:
// test/edge.test.ts runs it on Node, test/worker.test.ts in workerd. The same requests must get the
// same answers: the queue, admission at the configured rates in FIFO order, admission tokens that
// verify through the JWKS, proxying, bad input, and what happens when Redis goes away.
// Time is the runtime's manual clock; nothing sleeps except while waiting for a real Redis restart.
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import { escapeHtml, grouped, QUEUE_ASSETS } from '../../src/http/pages.js'
import type { StockSnapshot } from '../../src/ports/claim-gate.js'
import { runSteppedSale } from '../support/admission-model.js'
import { type OriginHandler, type OriginServer, startOrigin } from '../support/origin-server.js'
import { freePort, type RedisServer, startRedis } from '../support/redis-server.js'
import { type EdgeRuntime, freshDb, type RequestTarget, type StartOptions, type TestEdge } from '../support/runtimes.js'
import { Visitor } from '../support/visitor.js'

interface Echo {
  method: string
  url: string
  headers: Record<string, string>
  bodyLength: number
  bodySha: string
}

/** Echoes the request; some paths add response headers the proxy must keep or drop. */
const origin_handler: OriginHandler = (req, res, body) => {
  if (req.url?.includes('no-content')) {
    res.writeHead(204, { 'x-origin': 'kept' })
    res.end()
    return
  }
  if (req.url?.includes('set-cookie')) res.setHeader('set-cookie', ['origin_a=1; Path=/', 'origin_b=2; Path=/'])
  if (req.url?.includes('cache-public')) {
    res.setHeader('cache-control', 'public, max-age=600, s-maxage=3600, must-revalidate')
    res.setHeader('cdn-cache-control', 'max-age=3600')
    res.setHeader('cloudflare-cdn-cache-control', 'max-age=3600')
    res.setHeader('surrogate-control', 'max-age=3600')
  }
  res.setHeader('content-type', 'application/json')
  res.setHeader('connection', 'keep-alive, x-secret-hop')
  res.setHeader('x-secret-hop', 'must not pass')
  res.setHeader('x-origin', 'kept')
  res.end(
    JSON.stringify({
      method: req.method,
      url: req.url,
      headers: req.headers,
      bodyLength: body.length,
      bodySha: createHash('sha256').update(body).digest('hex'),
    }),
  )
}

/** The rooms these tests use: two active, 60 a minute, on /tickets. */
export const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 2,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 120,
  refreshSeconds: 20,
  ...over,
})

export function edgeHttpContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  const edges: TestEdge[] = []

  beforeAll(async () => {
    origin = await startOrigin(origin_handler)
  })
  afterAll(async () => {
    for (const e of edges) await e.close()
    await origin.close()
  })

  async function edgeWith(rooms: Record<string, unknown>[], o: Partial<StartOptions> = {}) {
    const edge = await runtime.start({ rooms, originUrl: origin.url, ...o })
    edges.push(edge)
    return edge
  }

  describe(`queue page and status (${runtime.name})`, () => {
    it('gives a new visitor the queue page: position, ahead, ETA, progress, Refresh, no-store, a safe cookie', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      await new Visitor().request(app, '/tickets')
      const v = new Visitor()
      const res = await v.request(app, '/tickets/show/1')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/text\/html/)
      // The next poll at the visitor's phase (core/polling.ts): half a refresh to one and a half away,
      // in the noscript meta; the Refresh header one refresh after it, so that it never comes with the
      // page script's first poll.
      const refresh = Number(res.headers.get('refresh')) - 20
      expect(refresh).toBeGreaterThanOrEqual(10)
      expect(refresh).toBeLessThanOrEqual(30)
      expect(res.headers.get('cache-control')).toBe('no-store')
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('anteroom_q_sale='))
      expect(cookie).toMatch(/HttpOnly/)
      expect(cookie).toMatch(/SameSite=Lax/)
      expect(cookie).not.toMatch(/Secure/)
      const html = await res.text()
      expect(html).toContain('<main')
      expect(html).toMatch(/role="status" aria-live="polite"/)
      expect(html).toMatch(/id="position">2</)
      expect(html).toMatch(/id="ahead">1</)
      expect(html).toMatch(/<progress/)
      expect(html).toContain('refreshes itself every 20 seconds')
      expect(html).toContain(`<meta http-equiv="refresh" content="${refresh}">`)
      expect(origin.requests.some((r) => r.url.startsWith('/tickets/show'))).toBe(false)
    })

    it('answers JSON for apps, and /_anteroom/status the same', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const v = new Visitor()
      const res = await v.request(app, '/tickets', { json: true })
      expect(res.headers.get('cache-control')).toBe('no-store')
      const expected = {
        room: 'sale',
        state: 'paused',
        position: 1,
        ahead: 0,
        waiting: 1,
        etaSeconds: null,
        etaRange: null,
        refreshSeconds: 20,
      }
      const body = (await res.json()) as typeof expected & { nextPollSeconds: number }
      expect(body).toEqual({ ...expected, nextPollSeconds: body.nextPollSeconds })
      expect(body.nextPollSeconds).toBeGreaterThanOrEqual(10)
      expect(body.nextPollSeconds).toBeLessThanOrEqual(30)
      expect(await v.status(app, 'sale')).toEqual(body)
      const unknown = await v.request(app, '/_anteroom/status?room=nope', { json: true })
      expect(unknown.status).toBe(404)
      expect(await unknown.json()).toMatchObject({ error: { code: 'ERR_NOT_FOUND', field: 'room' } })
    })

    it('drops the Refresh header once this version of the page script polls by itself, not for another version', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const v = new Visitor()
      await v.request(app, '/tickets')
      // The last release's script set "1": its next page of this release still refreshes by itself,
      // as its script may come from an edge that does not serve it yet.
      v.cookies.set('anteroom_js', '1')
      expect((await v.request(app, '/tickets')).headers.get('refresh')).not.toBeNull()
      v.cookies.set('anteroom_js', QUEUE_ASSETS.js.version)
      const res = await v.request(app, '/tickets')
      expect(res.headers.get('refresh')).toBeNull()
      expect(res.headers.get('content-security-policy')).toMatch(/script-src http:\/\/[^ ;]+\/_anteroom\/queue\.js;/)
    })

    it('the queue page runs nothing inline: its style sheet and script are the edge’s own files, kept for a year by version', async () => {
      // One a minute: the first visitor goes in, the second waits and sees the room's own title.
      const { app } = await edgeWith([room({ newUsersPerMinute: 1, title: 'Café “Ω” <b>' })])
      await new Visitor().request(app, '/tickets')
      const res = await new Visitor().request(app, '/tickets')
      expect(res.status).toBe(200)
      // Only the edge's two files, by full URL: 'self' would let any script of the origin's run here.
      const policy = res.headers.get('content-security-policy') ?? ''
      expect(policy).toContain("default-src 'none'")
      expect(policy).toMatch(/style-src http:\/\/[^ ;]+\/_anteroom\/queue\.css;/)
      expect(policy).toMatch(/script-src http:\/\/[^ ;]+\/_anteroom\/queue\.js;/)
      expect(policy).not.toMatch(/unsafe-inline|(style|script)-src 'self'/)
      const html = await res.text()
      expect(html).not.toMatch(/<style|<script>/)
      // The page is ASCII: a room's own text comes as character references.
      expect(html).not.toMatch(/[\u0080-\uffff]/)
      expect(html).toContain('Caf&#233; &#8220;&#937;&#8221; &#60;b&#62;')
      // An astral character is one reference, not two halves.
      expect(escapeHtml('a \u{1F3AB} b')).toBe('a &#127915; b')
      for (const n of [0, 7, 999, 1000, 1234, 999_999, 1_000_000, 1_234_567_890_123]) expect(grouped(n)).toBe(n.toLocaleString('en'))
      for (const [tag, type] of [
        [/<link rel="stylesheet" href="(\/_anteroom\/queue\.css\?v=[0-9a-z]+)">/, 'text/css'],
        [/<script src="(\/_anteroom\/queue\.js\?v=[0-9a-z]+)"><\/script>/, 'text/javascript'],
      ] as const) {
        const url = tag.exec(html)?.[1] as string
        expect(url).toBeDefined()
        const asset = await new Visitor().request(app, url)
        expect(asset.status).toBe(200)
        expect(asset.headers.get('content-type')).toContain(type)
        expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
        expect(asset.headers.get('x-content-type-options')).toBe('nosniff')
        expect((await asset.text()).length).toBeGreaterThan(500)
        // Another version is not kept for long: a page of an older release may ask for it.
        const other = await new Visitor().request(app, url.replace(/v=[0-9a-z]+/, 'v=old'))
        expect(other.headers.get('cache-control')).toBe('public, max-age=300')
        const head = await new Visitor().request(app, url, { method: 'HEAD' })
        expect(head.status).toBe(200)
        expect(head.headers.get('content-type')).toContain(type)
      }
    })
    it('refreshing, a second tab, or coming back within the token lifetime keeps the place; a lapsed token goes to the back', async () => {
      const { app, clock } = await edgeWith([room({ mode: 'paused', abandonAfterSeconds: 60 })])
      const first = new Visitor()
      const me = new Visitor()
      const last = new Visitor()
      await first.status(app, 'sale')
      expect(await me.status(app, 'sale')).toMatchObject({ position: 2 })
      await last.status(app, 'sale')
      for (let i = 0; i < 3; i++) {
        await clock.advance(15_000)
        await first.status(app, 'sale')
        await last.status(app, 'sale')
        expect(await me.status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
        expect(await me.clone().status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
      }
      const away = me.clone()
      await clock.advance(40_000)
      await first.status(app, 'sale')
      await last.status(app, 'sale')
      expect(await away.status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
      // Gone for longer than abandonAfterSeconds: the token lapsed and the line moved on.
      await clock.advance(61_000)
      await first.status(app, 'sale')
      await last.status(app, 'sale')
      expect(await away.status(app, 'sale')).toMatchObject({ position: 3, waiting: 3 })
    })
  })

  describe(`admission (${runtime.name})`, () => {
    it('admits on the next request when the turn comes, forwarding with a JWKS-verifiable token', async () => {
      const { app, clock } = await edgeWith([room({ totalActiveUsers: 1 })])
      const a = new Visitor()
      const b = new Visitor()
      const resA = await a.request(app, '/tickets/a')
      expect(resA.status).toBe(200)
      expect(((await resA.json()) as Echo).url).toBe('/tickets/a')
      expect(await b.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
      // A's session ends after 120 s without requests; B's next poll admits B.
      await clock.advance(121_000)
      const jwks = createLocalJWKSet((await (await app.request('http://shop.test/.well-known/jwks.json')).json()) as never)
      const resB = await b.request(app, '/tickets/b')
      const seen = (await resB.json()) as Echo
      expect(seen.url).toBe('/tickets/b')
      const token = seen.headers['anteroom-admission'] as string
      const { payload, protectedHeader } = await jwtVerify(token, jwks, {
        algorithms: ['ES256'],
        issuer: 'anteroom',
        audience: 'origin',
        currentDate: new Date(clock.now()),
      })
      expect(protectedHeader.kid).toBeTruthy()
      expect(payload).toMatchObject({ room: 'sale', sub: expect.any(String), jti: expect.any(String) })
      expect(payload.exp).toBe(Math.floor((clock.now() + 120_000) / 1000))
      expect(payload.arr).toBe(clock.now())
      expect(b.cookies.has('anteroom_q_sale')).toBe(false)
      expect(b.cookies.has('anteroom_a_sale')).toBe(true)
    })

    it('JSON polls say admitted and hand over the cookie', async () => {
      const { app } = await edgeWith([room()])
      const v = new Visitor()
      expect(await v.status(app, 'sale')).toMatchObject({ state: 'admitted' })
      expect(v.cookies.has('anteroom_a_sale')).toBe(true)
      const res = await v.request(app, '/tickets/x')
      expect(((await res.json()) as Echo).headers['anteroom-admission']).toBeTruthy()
    })

    it('a session that was ended gets no place in line; its old queue cookie cannot bring it back ahead of others', async () => {
      const { app, clock, queue } = await edgeWith([room({ sessionDurationSeconds: 100, totalActiveUsers: 1 })])
      const v = new Visitor()
      await v.request(app, '/tickets')
      // The queue cookie from before the admission, which a client may keep although the edge drops it.
      const before = new Visitor()
      await before.request(app, '/tickets') // queued behind v
      const oldQueueCookie = before.cookies.get('anteroom_q_sale') as string
      const claims = JSON.parse(Buffer.from((v.cookies.get('anteroom_a_sale') as string).split('.')[1] as string, 'base64url').toString())
      const l1 = new Visitor()
      expect(await l1.status(app, 'sale')).toMatchObject({ state: 'queued', position: 2 })
      await queue.endSession('sale', claims.sub, clock.now())
      // The freed slot goes to the first in line, not to the ended visitor.
      expect(await before.status(app, 'sale')).toMatchObject({ state: 'admitted' })
      await clock.advance(51_000)
      expect(await v.status(app, 'sale')).toMatchObject({ state: 'ended', position: null })
      const page = await v.request(app, '/tickets')
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('Your session was ended')
      expect(await l1.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
      // The admitted visitor of the freed slot keeps the queue cookie from before: after their session
      // is ended too, it brings them no place either.
      const keeper = new Visitor()
      keeper.cookies.set('anteroom_q_sale', oldQueueCookie)
      const keeperId = oldQueueCookie.split('.')[2] as string
      await queue.endSession('sale', keeperId, clock.now())
      expect(await keeper.status(app, 'sale')).toMatchObject({ state: 'ended' })
      expect(await l1.status(app, 'sale')).toMatchObject({ state: 'admitted' })
    })

    it('an ended session stops on the edge within a second, without a store call per request; its slot goes to the next in line', async () => {
      const { app, clock, queue, settled } = await edgeWith([room({ sessionDurationSeconds: 600, totalActiveUsers: 1 })])
      const v = new Visitor()
      expect((await v.request(app, '/tickets/1')).status).toBe(200)
      const next = new Visitor()
      expect(await next.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
      await queue.endAllSessions('sale', clock.now())
      await clock.advance(1000)
      const before = origin.requests.length
      let forwarded = 0
      let ended = false
      // The first request after the second may still pass (it starts the edge's reload); then none does.
      for (let i = 0; i < 5; i++) {
        const res = await v.request(app, '/tickets/2', { json: true })
        const body = (await res.json()) as { state?: string; url?: string }
        if (body.url !== undefined) forwarded++
        else ended = body.state === 'ended'
        await settled()
      }
      expect(ended).toBe(true)
      expect(forwarded).toBeLessThanOrEqual(1)
      expect(origin.requests.length - before).toBe(forwarded)
      // The freed slot goes to the next visitor, and then only one visitor is forwarded at a time.
      expect(await next.status(app, 'sale')).toMatchObject({ state: 'admitted' })
      const res = await v.request(app, '/tickets/3', { json: true })
      expect(((await res.json()) as { state?: string }).state).toBe('ended')
    })

    it('a forged or foreign admission cookie gets a place in line, not the origin', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const other = await edgeWith([room()], { signingKeys: [await generateSigningJwk('other-edge')] })
      const foreign = new Visitor()
      await foreign.request(other.app, '/tickets') // admitted by an edge with other keys
      const v = new Visitor()
      v.cookies.set('anteroom_a_sale', foreign.cookies.get('anteroom_a_sale') as string)
      const before = origin.requests.length
      const res = await v.request(app, '/tickets/secret', { json: true })
      expect(await res.json()).toMatchObject({ state: 'paused', position: 1 })
      const forged = new Visitor()
      forged.cookies.set('anteroom_a_sale', `${foreign.cookies.get('anteroom_a_sale')}x`)
      expect(await forged.status(app, 'sale')).toMatchObject({ state: 'paused', position: 2 })
      expect(origin.requests.length).toBe(before)
    })

    it('admits exactly what the limits allow at every step, always the first arrivals (cap and rate)', async () => {
      const cap = 10
      const perMinute = 24 // 4 per 10 s
      const { app, clock, queue } = await edgeWith([
        room({
          id: 'rate',
          paths: ['/'],
          totalActiveUsers: cap,
          newUsersPerMinute: perMinute,
          sessionDurationSeconds: 30,
          refreshSeconds: 5,
        }),
      ])
      await runSteppedSale({
        room: 'rate',
        totalActiveUsers: cap,
        newUsersPerMinute: perMinute,
        visitors: 40,
        clock,
        store: queue,
        pick: () => app,
      })
    })
  })

  describe(`room modes and ETA (${runtime.name})`, () => {
    it('paused keeps the line and says so; closed admits nobody and says the sale is closed; passthrough admits all', async () => {
      const paused = await edgeWith([room({ mode: 'paused' })])
      expect(await (await new Visitor().request(paused.app, '/tickets')).text()).toContain('The line is paused')
      const closed = await edgeWith([room({ mode: 'closed' })])
      const res = await new Visitor().request(closed.app, '/tickets')
      expect(await res.text()).toContain('This sale is closed')
      expect(res.headers.get('refresh')).toBeNull()
      expect(await new Visitor().status(closed.app, 'sale')).toMatchObject({ state: 'closed', position: null })
      expect((await closed.queue.stats('sale', closed.clock.now())).waiting).toBe(0)
      const pass = await edgeWith([room({ mode: 'passthrough', totalActiveUsers: 1, newUsersPerMinute: 1 })])
      for (let i = 0; i < 5; i++) expect(await new Visitor().status(pass.app, 'sale')).toMatchObject({ state: 'admitted' })
    })

    it('estimates the wait from the first admission by the pace, with a range; none while paused', async () => {
      const { app } = await edgeWith([room({ totalActiveUsers: 1000, newUsersPerMinute: 6 })])
      const visitors = Array.from({ length: 8 }, () => new Visitor())
      expect(await visitors[0]?.status(app, 'sale')).toMatchObject({ state: 'admitted' })
      for (const v of visitors.slice(1)) await v.status(app, 'sale')
      // One admission every 10 s, the first now: position 3 is let in 30 s from now, on their first
      // poll after that (every 20 s, at their phase: core/polling.ts). The old rule said 180 s (one
      // admission in the last minute).
      const third = (await visitors[3]?.status(app, 'sale')) as { nextPollSeconds: number; etaSeconds: number; etaRange: number[] }
      const next = third.nextPollSeconds
      const onPoll = next >= 30 ? next : next + Math.ceil((30 - next) / 20) * 20
      expect(third).toMatchObject({ position: 3, etaSeconds: Math.round(onPoll) })
      expect(third.etaRange[0]).toBeLessThanOrEqual(third.etaSeconds)
      expect(third.etaRange[1]).toBeGreaterThanOrEqual(third.etaSeconds)
      const page = await (await visitors[3]?.request(app, '/tickets'))?.text()
      expect(page).toContain('id="eta">under a minute')
      expect(page).toMatch(/id="eta-range">[^<]*an estimate/)
      const fresh = await edgeWith([room({ mode: 'paused' })])
      const paused = await (await new Visitor().request(fresh.app, '/tickets')).text()
      expect(paused).toContain('id="eta">unknown for now')
      expect(paused).toContain('id="eta-range" hidden>')
    })
  })

  // A room linked to an event stops admissions while nothing of it is free (core/stock.ts). The test
  // plays the origin: it writes the event's stock into the gate the edge reads, on the edge's clock.
  // On Node both with the embedded store and with Redis; on the Worker with Redis through its relays.
  // (A database of its own for each edge: rooms the test Redis holds from other tests would match its paths.)
  const ownDatabase = async () => `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
  const soldOutStores: { name: string; redisUrl?: () => Promise<string> }[] =
    runtime.name === 'node' ? [{ name: 'embedded store' }, { name: 'Redis', redisUrl: ownDatabase }] : [{ name: 'Redis' }]
  for (const store of soldOutStores) {
    describe(`sold out (${runtime.name}, ${store.name})`, () => {
      const ADMIN_TOKEN = 'sold-out-admin-token-0123456789'
      /** Room and event ids of their own. */
      const fresh = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}`
      const seats = (sold: number, of: number): StockSnapshot['units'] =>
        Array.from({ length: of }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < sold ? 1 : 0 }))

      async function linkedEdge(over: Record<string, unknown>) {
        const id = fresh('so')
        const event = fresh('ev')
        const edge = await edgeWith([room({ id, event, ...over })], {
          adminTokens: `ops:${ADMIN_TOKEN}`,
          redisUrl: await store.redisUrl?.(),
        })
        return { ...edge, id, event }
      }

      async function stats(edge: TestEdge, id: string) {
        const res = await edge.app.request(`http://shop.test/_anteroom/api/rooms/${id}/stats`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, accept: 'application/json' },
        })
        return (await res.json()) as { active: number; waiting: number; stock: { state: string; free: number | null; held: number | null } }
      }

      /**
       * The edge's next look at its rooms (once a second of its clock): the clock moves, a request
       * starts the reload, and the test waits for it to finish (on the Worker it runs after the answer,
       * in waitUntil) until the edge's view of the stock, which the admin stats show, says `state`.
       */
      async function look(edge: TestEdge, id: string, state: string) {
        await edge.clock.advance(1000)
        await new Visitor().request(edge.app, '/_anteroom/status?room=no-such-room', { json: true })
        await edge.settled()
        await expect.poll(async () => (await stats(edge, id)).stock.state, { timeout: 10_000, interval: 50 }).toBe(state)
      }

      it('sold out: state sold_out and nobody admitted, while the line keeps its places and admitted visitors their sessions; a newcomer gets no place', async () => {
        const edge = await linkedEdge({ totalActiveUsers: 1, sessionDurationSeconds: 30 })
        const { app, clock, gate, id, event } = edge
        await gate.reconcile(event, { units: seats(0, 2), holds: [] }, 0, clock.now())
        await look(edge, id, 'available')
        const a = new Visitor()
        const b = new Visitor()
        const c = new Visitor()
        expect((await a.request(app, '/tickets/a')).status).toBe(200)
        expect(await b.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
        expect(await c.status(app, id)).toMatchObject({ state: 'queued', position: 2 })
        // Both seats are sold (the origin's reconcile says so): every edge sees it within a second.
        await gate.reconcile(event, { units: seats(2, 2), holds: [] }, 0, clock.now())
        await look(edge, id, 'sold_out')
        expect(await stats(edge, id)).toMatchObject({ stock: { state: 'sold_out', free: 0, held: 0 } })
        // A, admitted before, keeps browsing: they may be paying.
        expect((await a.request(app, '/tickets/b')).status).toBe(200)
        // A's session runs out, so a slot is free: without the stock, B would be let in now.
        await clock.advance(30_000)
        for (let i = 0; i < 3; i++) {
          expect(await b.status(app, id)).toMatchObject({ state: 'sold_out', position: 1, waiting: 2, etaSeconds: null })
          expect(await c.status(app, id)).toMatchObject({ state: 'sold_out', position: 2, waiting: 2 })
          await clock.advance(1000)
        }
        const page = await b.request(app, '/tickets/x')
        expect(page.status).toBe(200)
        const html = await page.text()
        expect(html).toContain('<h1 id="headline">Sold out</h1>')
        expect(html).toContain('You keep your place in line in case any come back.')
        expect(html).toContain('id="position">1<')
        // A newcomer gets the sold-out page without a place, and no queue cookie.
        const d = new Visitor()
        expect(await d.status(app, id)).toMatchObject({ state: 'sold_out', position: null, waiting: null })
        expect(d.cookies.has(`anteroom_q_${id}`)).toBe(false)
        const newcomerPage = await new Visitor().request(app, '/tickets')
        expect(await newcomerPage.text()).toContain('This page checks by itself in case any come back.')
        expect(await stats(edge, id)).toMatchObject({ active: 0, waiting: 2 })
        // A seat comes back (a refund): the line moves in order, and the newcomer joins at its back.
        await gate.reconcile(event, { units: seats(1, 2), holds: [] }, 0, clock.now())
        await look(edge, id, 'available')
        expect(await d.status(app, id)).toMatchObject({ state: 'queued', position: 2 })
        expect(await c.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
        expect(await b.status(app, id)).toMatchObject({ state: 'admitted' })
      })

      it('all held: the held message while the line keeps its places (newcomers join it); a hold lapses and admissions resume in FIFO order', async () => {
        const edge = await linkedEdge({ totalActiveUsers: 5 })
        const { app, clock, gate, id, event } = edge
        const lapses = clock.now() + 10_000
        await gate.reconcile(
          event,
          { units: seats(0, 1), holds: [{ id: 'h1', expiresAt: lapses, units: [{ unit: 'seat:A1', quantity: 1 }] }] },
          0,
          clock.now(),
        )
        await look(edge, id, 'all_held')
        const b = new Visitor()
        const c = new Visitor()
        const d = new Visitor()
        expect(await b.status(app, id)).toMatchObject({ state: 'all_held', position: 1 })
        expect(await c.status(app, id)).toMatchObject({ state: 'all_held', position: 2 })
        expect(await d.status(app, id)).toMatchObject({ state: 'all_held', position: 3, waiting: 3 })
        const html = await (await b.request(app, '/tickets')).text()
        expect(html).toContain('Every seat is held right now')
        expect(html).toContain('some may come back')
        // Seconds pass with free slots and polls: nobody is let in, nobody loses a place.
        while (clock.now() + 1000 < lapses) {
          await clock.advance(1000)
          expect(await d.status(app, id)).toMatchObject({ state: 'all_held', position: 3 })
          expect(await c.status(app, id)).toMatchObject({ state: 'all_held', position: 2 })
          expect(await b.status(app, id)).toMatchObject({ state: 'all_held', position: 1 })
        }
        expect((await stats(edge, id)).active).toBe(0)
        // The hold runs out on the gate's clock: the next look counts its seat free again.
        await look(edge, id, 'available')
        // The last in line polls first, and is not let in before those ahead: two slots are due (one a
        // second, a second of credit), and they go to B and C.
        expect(await d.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
        expect(await b.status(app, id)).toMatchObject({ state: 'admitted' })
        expect(await c.status(app, id)).toMatchObject({ state: 'admitted' })
        expect(await d.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
        await clock.advance(1000)
        expect(await d.status(app, id)).toMatchObject({ state: 'admitted' })
      })

      it('counts unknown (the gate has no stock for the event): admits as usual', async () => {
        const edge = await linkedEdge({ totalActiveUsers: 1, sessionDurationSeconds: 30 })
        const { app, clock, id } = edge
        await look(edge, id, 'unknown')
        const a = new Visitor()
        const b = new Visitor()
        expect((await a.request(app, '/tickets/a')).status).toBe(200)
        expect(await b.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
        await clock.advance(30_000)
        expect(await b.status(app, id)).toMatchObject({ state: 'admitted' })
        expect(await new Visitor().status(app, id)).toMatchObject({ state: 'queued', position: 1 })
      })
    })
  }

  describe(`routing and bad input (${runtime.name})`, () => {
    it('passes unprotected paths straight through and reserves /_anteroom/', async () => {
      const { app } = await edgeWith([room()])
      const res = await new Visitor().request(app, '/about?x=1')
      expect(((await res.json()) as Echo).url).toBe('/about?x=1')
      const reserved = await new Visitor().request(app, '/_anteroom/whatever')
      expect(reserved.status).toBe(404)
      expect((await app.request('http://shop.test/_anteroom/health')).status).toBe(200)
    })

    it('matches rooms by host and the longest path prefix; an unknown host gets 421', async () => {
      const { app } = await edgeWith([
        room({ id: 'a', hosts: ['shop.test'], paths: ['/tickets'], mode: 'paused' }),
        room({ id: 'b', hosts: ['shop.test'], paths: ['/tickets/vip'], mode: 'paused' }),
        room({ id: 'c', hosts: ['other.test'], paths: [], mode: 'paused' }),
      ])
      const roomOf = async (base: string, path: string) => {
        const res = await new Visitor(base).request(app, path, { json: true })
        return ((await res.json()) as { room?: string }).room
      }
      expect(await roomOf('http://shop.test', '/tickets/1')).toBe('a')
      expect(await roomOf('http://shop.test', '/tickets/vip/1')).toBe('b')
      expect(await roomOf('http://other.test', '/anything')).toBe('c')
      expect(await roomOf('http://shop.test', '/ticketsx')).toBeUndefined()
      expect((await new Visitor('http://unknown.test').request(app, '/tickets/1')).status).toBe(421)
    })

    it('spellings of a protected path that an origin may treat alike cannot skip the room', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const before = origin.requests.length
      for (const path of [
        '/%74ickets/1',
        '/TICKETS/1',
        '//tickets/1',
        '/x/../tickets/1',
        '/%2e/tickets',
        '/tickets/./1',
        '/Tickets/%2E%2E/tickets/1',
        '/free/%2e%2e/tickets/1',
      ]) {
        const res = await new Visitor().request(app, path, { json: true })
        expect(((await res.json()) as { state?: string }).state, path).toBe('paused')
      }
      expect(origin.requests.length).toBe(before)
    })

    it('refuses with a 400 that names the problem every spelling that cannot be made unambiguous', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const before = origin.requests.length
      for (const [path, problem] of [
        ['/tickets;jsessionid=1/x', ';parameters'],
        ['/x/..;/tickets/1', ';parameters'],
        ['/tickets%2fx', 'encoded /'],
        ['/x/..%2Ftickets/1', 'encoded /'],
        ['/x/..%5ctickets/1', 'encoded /'],
        ['/tickets%00/1', 'control character'],
        ['/tickets/1%09', 'control character'],
        ['/x/%252e%252e/tickets/1', 'encoded twice'],
        ['/%2574ickets/1', 'encoded twice'],
        ['/x/%c0%ae%c0%ae/tickets/1', 'UTF-8'],
        ['/tickets./1', 'ends in a dot'],
        ['/tickets%20/1', 'ends in a dot or a space'],
        ['/tickets%zz', 'two hex digits'],
      ] as const) {
        const json = await new Visitor().request(app, path, { json: true })
        expect(json.status, path).toBe(400)
        const error = ((await json.json()) as { error: { code: string; message: string } }).error
        expect(error.code, path).toBe('ERR_BAD_PATH')
        expect(error.message, path).toContain(problem)
        const page = await new Visitor().request(app, path)
        expect(page.status, path).toBe(400)
        expect(await page.text(), path).toContain(problem)
      }
      expect(origin.requests.length).toBe(before)
    })

    it('malformed, truncated, oversized and foreign cookies get a fresh place, never a 500', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' }), room({ id: 'other', paths: ['/other'], mode: 'paused' })])
      const other = new Visitor()
      await other.request(app, '/other')
      const valid = new Visitor()
      await valid.request(app, '/tickets')
      const token = valid.cookies.get('anteroom_q_sale') as string
      const junk = [
        'anteroom_q_sale=',
        'anteroom_q_sale=garbage',
        `anteroom_q_sale=${token.slice(0, token.length - 8)}`,
        `anteroom_q_sale=${'A'.repeat(10_000)}`,
        `anteroom_q_sale=${other.cookies.get('anteroom_q_other')?.replace('q1.other', 'q1.sale')}`,
        'anteroom_q_sale="quoted"; anteroom_a_sale=not.a.jwt',
        'anteroom_q_sale=%00%ff; ; ;=;==',
        `anteroom_a_sale=${'e'.repeat(3000)}.${'e'.repeat(3000)}.x`,
      ]
      for (const [i, cookie] of junk.entries()) {
        const res = await new Visitor().request(app, '/tickets', { headers: { cookie } })
        expect(res.status, cookie.slice(0, 40)).toBe(200)
        expect(await res.text()).toContain(`id="position">${i + 2}<`)
        expect(res.headers.getSetCookie().some((c) => c.startsWith('anteroom_q_sale=q1.sale.'))).toBe(true)
      }
      expect(await valid.status(app, 'sale')).toMatchObject({ position: 1 })
    })
  })

  describe(`proxying (${runtime.name})`, () => {
    it('forwards method, path, query and a whole POST body; sets X-Forwarded-*; strips our cookies and any forged admission header', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const v = new Visitor()
      const body = new Uint8Array(300_000).map((_, i) => (i * 7) % 251)
      const res = await v.request(app, '/shop/cart?id=7', {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/octet-stream',
          cookie: 'theme=dark; anteroom_js=1',
          'anteroom-admission': 'forged.token.value',
        },
      })
      expect(res.status).toBe(200)
      const seen = (await res.json()) as Echo
      expect(seen).toMatchObject({ method: 'POST', url: '/shop/cart?id=7', bodyLength: body.length })
      expect(seen.bodySha).toBe(createHash('sha256').update(body).digest('hex'))
      expect(seen.headers.cookie).toBe('theme=dark')
      expect(seen.headers['x-forwarded-host']).toBe('shop.test')
      expect(seen.headers['x-forwarded-proto']).toBe('http')
      const token = v.cookies.get('anteroom_a_shop')
      expect(token).toBeTruthy()
      expect(seen.headers['anteroom-admission']).toBe(token)
      // Coming back: the origin sees the token as a header, never our cookie.
      const again = (await (
        await v.request(app, '/shop/next', { headers: { cookie: `theme=dark; anteroom_a_shop=${token}`, 'anteroom-admission': 'forged' } })
      ).json()) as Echo
      expect(again.headers.cookie).toBe('theme=dark')
      expect(again.headers['anteroom-admission']).toBe(token)
      // An unprotected path never carries a visitor-supplied admission header either.
      const free = (await (await new Visitor().request(app, '/free', { headers: { 'anteroom-admission': 'forged' } })).json()) as Echo
      expect(free.headers['anteroom-admission']).toBeUndefined()
    })

    it("keeps the origin's Set-Cookie headers next to the edge's own, and drops hop-by-hop response headers", async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const res = await new Visitor().request(app, '/shop/set-cookie')
      expect(res.status).toBe(200)
      const cookies = res.headers.getSetCookie()
      expect(cookies).toContain('origin_a=1; Path=/')
      expect(cookies).toContain('origin_b=2; Path=/')
      expect(cookies.some((c) => c.startsWith('anteroom_a_shop='))).toBe(true)
      expect(res.headers.get('x-secret-hop')).toBeNull()
      expect(res.headers.get('x-origin')).toBe('kept')
    })

    it('passes HEAD and 204 answers on without a body', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const head = await new Visitor().request(app, '/about', { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('x-origin')).toBe('kept')
      expect(await head.text()).toBe('')
      const empty = await new Visitor().request(app, '/no-content')
      expect(empty.status).toBe(204)
      expect(empty.headers.get('x-origin')).toBe('kept')
      expect(await empty.text()).toBe('')
    })

    it('answers 502 (HTML and JSON) when the origin refuses connections, and keeps serving', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })], { originUrl: `http://127.0.0.1:${await freePort()}` })
      const page = await new Visitor().request(app, '/about')
      expect(page.status).toBe(502)
      expect(page.headers.get('cache-control')).toBe('no-store')
      expect(await page.text()).toContain('not reachable')
      const json = await new Visitor().request(app, '/api/items', { json: true })
      expect(json.status).toBe(502)
      expect(((await json.json()) as { error: { code: string } }).error.code).toBe('ERR_ORIGIN_UNREACHABLE')
      // Admitted on this very request, with a body to forward: 502, and the admission is kept.
      const post = await new Visitor().request(app, '/shop/x', { method: 'POST', body: 'x'.repeat(1000) })
      expect(post.status).toBe(502)
      expect(post.headers.getSetCookie().some((c) => c.startsWith('anteroom_a_shop='))).toBe(true)
      expect((await app.request('http://shop.test/_anteroom/health')).status).toBe(200)
    })
  })

  describe(`ways around the line (${runtime.name})`, () => {
    it('never passes on a header the edge owns, in any spelling, nor client addresses or URL overrides the visitor sent', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const forged = {
        anteroom_admission: 'forged-underscore',
        Anteroom_Admission_: 'forged-trailing',
        'anteroom-anything': 'ours',
        forwarded: 'for=6.6.6.6;proto=https',
        'x-forwarded-for': '6.6.6.6',
        x_forwarded_for: '6.6.6.6',
        'x-forwarded-host': 'evil.test',
        x_forwarded_host: 'evil.test',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '443',
        'x-real-ip': '6.6.6.6',
        x_real_ip: '6.6.6.6',
        'true-client-ip': '6.6.6.6',
        'x-client-ip': '6.6.6.6',
        'x-cluster-client-ip': '6.6.6.6',
        'x-original-url': '/shop/secret',
        'x-rewrite-url': '/shop/secret',
        x_rewrite_url: '/shop/secret',
        'x-override-url': '/shop/secret',
        'x-kept': 'yes',
      }
      for (const path of ['/free/x', '/shop/x']) {
        const v = new Visitor()
        const seen = (await (await v.request(app, path, { headers: forged })).json()) as Echo
        const h = seen.headers
        for (const [name, value] of Object.entries(h)) {
          expect(value, `${path} ${name}`).not.toContain('6.6.6.6')
          expect(value, `${path} ${name}`).not.toContain('forged')
          expect(value, `${path} ${name}`).not.toContain('evil.test')
          expect(value, `${path} ${name}`).not.toContain('/shop/secret')
          expect(name.replaceAll('_', '-').startsWith('anteroom-') && name !== 'anteroom-admission', `${path} ${name}`).toBe(false)
        }
        for (const name of ['x-original-url', 'x-rewrite-url', 'x-override-url', 'x-forwarded-port', 'true-client-ip', 'x-client-ip']) {
          expect(h[name], `${path} ${name}`).toBeUndefined()
        }
        expect(h['x-kept']).toBe('yes')
        expect(h['x-forwarded-host']).toBe('shop.test')
        expect(h['x-forwarded-proto']).toBe('http')
        expect(h.forwarded).toContain('proto=http;host=shop.test')
        // What the edge knows of the client address, and nothing else: the same in every header.
        expect(h['x-real-ip']).toBe(h['x-forwarded-for'])
        if (h['x-forwarded-for'] !== undefined) expect(h.forwarded).toContain(`for=${h['x-forwarded-for']}`)
        if (path === '/shop/x') expect(h['anteroom-admission']).toBe(v.cookies.get('anteroom_a_shop'))
        else expect(h['anteroom-admission']).toBeUndefined()
      }
    })

    it('never forwards an Anteroom cookie in any spelling, nor the admin session', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const seen = (await (
        await new Visitor().request(app, '/free/c', {
          headers: {
            cookie: 'theme=dark; anteroom_admin=s1.admin.x.y.z; Anteroom_A_shop=x; anteroom.a.shop=y; ANTEROOM_Q_shop=z; lang=en',
          },
        })
      ).json()) as Echo
      expect(seen.headers.cookie).toBe('theme=dark; lang=en')
    })

    it('keeps the reserved /_anteroom prefix in any case or spelling away from the origin, with its credentials', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const before = origin.requests.length
      for (const [path, status] of [
        ['/_ANTEROOM/api/rooms', 404],
        ['/_Anteroom/admin', 404],
        ['/_anteroom//api/rooms', 404],
        ['/x/../_anteroom/api/rooms', 200],
        ['/%5fanteroom/api/rooms', 200],
        ['/_anteroom%2fapi/rooms', 400],
        ['/_anteroom', 404],
      ] as const) {
        const res = await new Visitor().request(app, path, {
          json: true,
          headers: { authorization: 'Bearer not-a-token-but-a-secret', cookie: 'anteroom_admin=s1.admin.x.y.z' },
        })
        // /x/../_anteroom/api/rooms and /%5fanteroom/api/rooms are the admin API itself: it answers (401: no admin).
        expect(res.status, path).toBe(status === 200 ? 401 : status)
      }
      expect(origin.requests.length).toBe(before)
    })

    it("never lets a shared cache keep a response on a room's path, and never one that sets an Anteroom cookie", async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })])
      const v = new Visitor()
      // Admitted on this request: the response carries the admission cookie.
      const first = await v.request(app, '/shop/cache-public')
      expect(first.status).toBe(200)
      expect(first.headers.getSetCookie().some((c) => c.startsWith('anteroom_a_shop='))).toBe(true)
      expect(first.headers.get('cache-control')).toBe('private, no-store')
      // Admitted before: the origin's own browser caching stays, its shared caching goes.
      const later = await v.request(app, '/shop/cache-public')
      expect(later.headers.getSetCookie()).toEqual([])
      expect(later.headers.get('cache-control')).toBe('private, max-age=600, must-revalidate')
      const plain = await v.request(app, '/shop/plain')
      expect(plain.headers.get('cache-control')).toBe('private')
      for (const res of [first, later]) {
        for (const name of ['cdn-cache-control', 'cloudflare-cdn-cache-control', 'surrogate-control'])
          expect(res.headers.get(name), name).toBeNull()
      }
      // Unprotected paths keep the origin's public caching.
      const free = await new Visitor().request(app, '/free/cache-public')
      expect(free.headers.get('cache-control')).toBe('public, max-age=600, s-maxage=3600, must-revalidate')
      expect(free.headers.get('cdn-cache-control')).toBe('max-age=3600')
    })

    it('streams bodies up to the limit and answers 413 beyond it, without reaching the origin', async () => {
      const { app } = await edgeWith([room({ id: 'shop', paths: ['/shop'] })], { maxBodyBytes: 1000 })
      const v = new Visitor()
      expect((await v.request(app, '/shop/in')).status).toBe(200)
      const chunked = (size: number) =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (let sent = 0; sent < size; sent += 250) controller.enqueue(new Uint8Array(Math.min(250, size - sent)).fill(0x61))
            controller.close()
          },
        })
      const ok = await v.request(app, '/shop/in', { method: 'POST', body: chunked(1000), duplex: 'half' } as RequestInit)
      expect(ok.status).toBe(200)
      expect(((await ok.json()) as Echo).bodyLength).toBe(1000)
      const before = origin.requests.length
      const declared = await v.request(app, '/shop/in', { method: 'POST', body: 'x'.repeat(1001), json: true })
      expect(declared.status, await declared.clone().text()).toBe(413)
      expect(((await declared.json()) as { error: { code: string } }).error.code).toBe('ERR_BODY_TOO_LARGE')
      expect(origin.requests.length).toBe(before)
      const streamed = await v.request(app, '/shop/in', { method: 'POST', body: chunked(5000), duplex: 'half', json: true } as RequestInit)
      expect(streamed.status).toBe(413)
      expect(origin.requests.length).toBe(before)
      const unprotected = await v.request(app, '/free/in', { method: 'PUT', body: 'x'.repeat(4000) })
      expect(unprotected.status).toBe(413)
      expect(origin.requests.length).toBe(before)
    })
  })

  describe(`store errors (${runtime.name})`, () => {
    let redis: RedisServer
    beforeAll(async () => {
      redis = await startRedis()
    })
    afterAll(async () => {
      await redis.stop()
    })

    it('after Redis forgets everything, nobody passes an earlier arrival and the cap holds: recovery first, the old session counted again', async () => {
      const rooms = [
        { id: 'lossy', paths: ['/lossy'], totalActiveUsers: 1, newUsersPerMinute: 60, refreshSeconds: 5, sessionDurationSeconds: 120 },
      ]
      const { app, clock, queue, settled } = await edgeWith(rooms, { redisUrl: redis.url })
      const a = new Visitor()
      const b = new Visitor()
      const c = new Visitor()
      expect((await a.request(app, '/lossy/a')).status).toBe(200)
      expect(await b.status(app, 'lossy')).toMatchObject({ state: 'queued', position: 1 })
      expect(await c.status(app, 'lossy')).toMatchObject({ state: 'queued', position: 2 })
      // The edge's watch (once a second) sees the room's life and its one active session.
      await clock.advance(1000)
      await c.status(app, 'lossy')
      await settled()
      const flush = new Redis(redis.url)
      await flush.flushall()
      flush.disconnect()
      await clock.advance(1000)
      // C polls first. The store has no life for the room although C brings a token: it forgot, and recovers.
      expect(await c.status(app, 'lossy')).toMatchObject({ state: 'recovering', position: 1 })
      expect(await b.status(app, 'lossy')).toMatchObject({ state: 'recovering', position: 1 })
      expect(await c.status(app, 'lossy')).toMatchObject({ state: 'recovering', position: 2 })
      const page = await c.request(app, '/lossy/x')
      expect(await page.text()).toContain('We are restoring the line')
      // A keeps browsing; the edge learns of the new life and re-registers A's session (one renewal).
      await settled()
      await clock.advance(1000)
      expect((await a.request(app, '/lossy/b')).status).toBe(200)
      await settled()
      expect((await a.request(app, '/lossy/c')).status).toBe(200)
      // After the recovery window (2 refreshes and a second), the cap of one still holds: A is counted.
      await clock.advance(11_000)
      expect(await b.status(app, 'lossy')).toMatchObject({ state: 'queued', position: 1 })
      expect(await c.status(app, 'lossy')).toMatchObject({ state: 'queued', position: 2 })
      expect((await queue.stats('lossy', clock.now())).active).toBe(1)
      // A's session ends: the first in line gets the slot, not the one who polled first after the loss.
      const claims = JSON.parse(Buffer.from((a.cookies.get('anteroom_a_lossy') as string).split('.')[1] as string, 'base64url').toString())
      await queue.endSession('lossy', claims.sub, clock.now())
      await clock.advance(1000)
      expect(await c.status(app, 'lossy')).toMatchObject({ state: 'queued', position: 1 })
      expect(await b.status(app, 'lossy')).toMatchObject({ state: 'admitted' })
    })

    it('stops Redis mid-run: closed says "you keep your place", open passes through, admitted visitors keep working; a restart keeps the order', async () => {
      const rooms = [
        { id: 'strict', paths: ['/strict'], totalActiveUsers: 1, newUsersPerMinute: 60, onStoreError: 'closed' },
        { id: 'lenient', paths: ['/lenient'], totalActiveUsers: 1, newUsersPerMinute: 60, onStoreError: 'open' },
        { id: 'line', paths: ['/line'], totalActiveUsers: 1, newUsersPerMinute: 60, mode: 'paused' },
      ]
      const { app, clock } = await edgeWith(rooms, { redisUrl: redis.url })
      const admittedStrict = new Visitor()
      const queuedStrict = new Visitor()
      expect((await admittedStrict.request(app, '/strict/a')).status).toBe(200)
      expect(await queuedStrict.status(app, 'strict')).toMatchObject({ state: 'queued', position: 1 })
      const admittedLenient = new Visitor()
      await admittedLenient.request(app, '/lenient/a')
      const queuedLenient = new Visitor()
      expect(await queuedLenient.status(app, 'lenient')).toMatchObject({ state: 'queued', position: 1 })
      const inLine = new Visitor()
      await new Visitor().status(app, 'line')
      expect(await inLine.status(app, 'line')).toMatchObject({ state: 'paused', position: 2 })
      // Five more in line, who keep polling through the outage (on the Worker, each one's relay object is
      // now connected; one that never was waits for its first connection, by design).
      const pollers = [new Visitor(), new Visitor(), new Visitor(), new Visitor(), new Visitor()]
      for (const v of pollers) expect(await v.status(app, 'line')).toMatchObject({ state: 'paused' })

      await redis.stop()
      // The edge notices at once (no offline queue): its health check says so.
      await waitFor(async () => (await app.request('http://shop.test/_anteroom/health')).status === 503)
      await clock.advance(5_000)
      // And it answers at once while Redis is away: nobody waits on a connection that is not there.
      // Measured in requests to the origin sent one after another alongside, not in milliseconds: a
      // poll that fails fast outlasts none or one of them, one that waits for a connection or for the
      // command timeout outlasts hundreds.
      const outage = await pollsAlongsideOrigin(app, 'line', pollers)
      expect(outage.states).toEqual(['busy', 'busy', 'busy', 'busy', 'busy'])
      expect(median(outage.outlasted)).toBeLessThan(10)

      const tokenBefore = queuedStrict.cookies.get('anteroom_q_strict')
      const busy = await queuedStrict.request(app, '/strict/a')
      expect(busy.status).toBe(503)
      expect(busy.headers.get('retry-after')).toBe('20')
      expect(await busy.text()).toContain('We are busy; you keep your place.')
      // The place is kept through the outage: the same visitor and arrival, re-signed to last longer.
      const [, , visitorBefore, arrivalBefore, expiresBefore] = (tokenBefore ?? '').split('.')
      const [, , visitorAfter, arrivalAfter, expiresAfter] = (queuedStrict.cookies.get('anteroom_q_strict') ?? '').split('.')
      expect([visitorAfter, arrivalAfter]).toEqual([visitorBefore, arrivalBefore])
      expect(Number.parseInt(expiresAfter ?? '', 36) > Number.parseInt(expiresBefore ?? '', 36) || expiresAfter === expiresBefore).toBe(
        true,
      )
      expect(await queuedStrict.status(app, 'strict')).toMatchObject({ state: 'busy' })
      const before = origin.requests.length
      expect((await new Visitor().request(app, '/strict/a')).status).toBe(503)
      expect(origin.requests.length).toBe(before)

      // Open: each visitor is let through as themselves, with a token that says it was issued without the store.
      const claimsOf = (token: string | undefined) =>
        JSON.parse(Buffer.from((token ?? '').split('.')[1] ?? '', 'base64url').toString()) as {
          sub: string
          open?: boolean
          exp: number
          iat: number
        }
      const openVisitor = new Visitor()
      const through = await openVisitor.request(app, '/lenient/b')
      expect(through.status).toBe(200)
      const seen = (await through.json()) as Echo
      expect(seen.url).toBe('/lenient/b')
      const openToken = seen.headers['anteroom-admission']
      expect(claimsOf(openToken)).toMatchObject({ open: true })
      expect(claimsOf(openToken).exp - claimsOf(openToken).iat).toBe(60)
      const secondSeen = (await (await new Visitor().request(app, '/lenient/b')).json()) as Echo
      const subs = new Set([claimsOf(openToken).sub, claimsOf(secondSeen.headers['anteroom-admission']).sub])
      expect(subs.size).toBe(2)
      expect(subs.has('store-unavailable')).toBe(false)
      // The visitor's next request uses the admission in their cookie: no new signature, the same identity.
      const again = (await (await openVisitor.request(app, '/lenient/c')).json()) as Echo
      expect(again.headers['anteroom-admission']).toBe(openToken)
      // Someone who was in line keeps their own id, and their place for when the store is back.
      const queuedId = queuedLenient.cookies.get('anteroom_q_lenient')?.split('.')[2]
      const queuedSeen = (await (await queuedLenient.request(app, '/lenient/q')).json()) as Echo
      expect(claimsOf(queuedSeen.headers['anteroom-admission'])).toMatchObject({ sub: queuedId, open: true })
      expect(queuedLenient.cookies.get('anteroom_q_lenient')?.split('.')[2]).toBe(queuedId)

      for (const [v, path] of [
        [admittedStrict, '/strict/b'],
        [admittedLenient, '/lenient/c'],
      ] as const) {
        const res = await v.request(app, path)
        expect(res.status).toBe(200)
        expect(((await res.json()) as Echo).url).toBe(path)
      }
      expect((await app.request('http://shop.test/_anteroom/health')).status).toBe(503)

      // Redis comes back empty on the same port. A newcomer polls first, yet the visitor who was
      // already in line gets their earlier place back from their token.
      redis = await startRedis([], redis.port)
      await waitFor(async () => (await app.request('http://shop.test/_anteroom/health')).status === 200)
      await clock.advance(5_000)
      const newcomer = new Visitor()
      expect(await newcomer.status(app, 'line')).toMatchObject({ position: 1, waiting: 1 })
      expect(await inLine.status(app, 'line')).toMatchObject({ position: 1, waiting: 2 })
      expect(await newcomer.status(app, 'line')).toMatchObject({ position: 2, waiting: 2 })
    })
  })
}

/**
 * A JSON poll of `room` by each of the pollers, one after another, while alongside other requests go
 * one after another to a path no room protects (the origin answers them; no store call). Answers each
 * poll's state and how many of those requests were answered while it was waited for.
 */
async function pollsAlongsideOrigin(
  app: RequestTarget,
  room: string,
  pollers: Visitor[],
): Promise<{ states: string[]; outlasted: number[] }> {
  let polling = true
  let answered = 0
  const alongside = (async () => {
    while (polling) {
      const res = await new Visitor().request(app, '/alongside')
      if (res.status !== 200) throw new Error(`the origin answered ${res.status} alongside the polls`)
      await res.arrayBuffer()
      answered++
    }
  })()
  const states: string[] = []
  const outlasted: number[] = []
  try {
    for (const v of pollers) {
      const before = answered
      states.push((await v.status(app, room)).state)
      outlasted.push(answered - before)
    }
  } finally {
    polling = false
    await alongside
  }
  return { states, outlasted }
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
}

/** Waits for a real server event (Redis stopping or coming back); the assertions never depend on time. */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error('condition not reached')
}

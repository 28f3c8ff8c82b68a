// The edge's HTTP contract (test/contract/edge-http.ts), one topic: the queue page and status, and admission: rates, FIFO order, tokens that verify through the JWKS.
// Run on each runtime by edgeHttpContract.
import { createLocalJWKSet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { generateSigningJwk } from '../../../src/core/admission-token.js'
import { escapeHtml, grouped, QUEUE_ASSETS } from '../../../src/http/pages.js'
import { runSteppedSale } from '../../support/admission-model.js'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import { type Echo, room } from './common.js'

export function queueContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

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
      expect(c.origin.requests.some((r) => r.url.startsWith('/tickets/show'))).toBe(false)
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
      const before = c.origin.requests.length
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
      expect(c.origin.requests.length - before).toBe(forwarded)
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
      const before = c.origin.requests.length
      const res = await v.request(app, '/tickets/secret', { json: true })
      expect(await res.json()).toMatchObject({ state: 'paused', position: 1 })
      const forged = new Visitor()
      forged.cookies.set('anteroom_a_sale', `${foreign.cookies.get('anteroom_a_sale')}x`)
      expect(await forged.status(app, 'sale')).toMatchObject({ state: 'paused', position: 2 })
      expect(c.origin.requests.length).toBe(before)
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
}

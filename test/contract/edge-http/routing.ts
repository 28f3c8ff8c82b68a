// The edge's HTTP contract (test/contract/edge-http.ts), one topic: routing and bad input, and proxying to the origin.
// Run on each runtime by edgeHttpContract.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../support/redis-server.js'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import { type Echo, room } from './common.js'

export function routingContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

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
      const before = c.origin.requests.length
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
      expect(c.origin.requests.length).toBe(before)
    })

    it('refuses with a 400 that names the problem every spelling that cannot be made unambiguous', async () => {
      const { app } = await edgeWith([room({ mode: 'paused' })])
      const before = c.origin.requests.length
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
      expect(c.origin.requests.length).toBe(before)
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
}

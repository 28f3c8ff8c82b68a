// The edge's HTTP contract (test/contract/edge-http.ts), one topic: ways around the line: what a request may say or spell that must not let it past.
// Run on each runtime by edgeHttpContract.
import { describe, expect, it } from 'vitest'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import { type Echo, room } from './common.js'

export function waysAroundContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

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
      const before = c.origin.requests.length
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
      expect(c.origin.requests.length).toBe(before)
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
      const before = c.origin.requests.length
      const declared = await v.request(app, '/shop/in', { method: 'POST', body: 'x'.repeat(1001), json: true })
      expect(declared.status, await declared.clone().text()).toBe(413)
      expect(((await declared.json()) as { error: { code: string } }).error.code).toBe('ERR_BODY_TOO_LARGE')
      expect(c.origin.requests.length).toBe(before)
      const streamed = await v.request(app, '/shop/in', { method: 'POST', body: chunked(5000), duplex: 'half', json: true } as RequestInit)
      expect(streamed.status).toBe(413)
      expect(c.origin.requests.length).toBe(before)
      const unprotected = await v.request(app, '/free/in', { method: 'PUT', body: 'x'.repeat(4000) })
      expect(unprotected.status).toBe(413)
      expect(c.origin.requests.length).toBe(before)
    })
  })
}

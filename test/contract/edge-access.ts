// Access codes and invite links through HTTP, on each runtime (test/edge.test.ts on Node,
// test/worker.test.ts in workerd): the admin API makes, lists and revokes them (bad input names its
// field; each making and revocation is audited), visitors redeem them with ?code= on a page or the
// status endpoint, and a sale admits the priority lane before the public line and the separate lane at
// its own cap and rate, each in its own order, never past a cap. Manual clocks throughout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { laneRoomId } from '../../src/core/access.js'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import { Scrape } from '../support/prometheus.js'
import type { EdgeRuntime, RequestTarget, StartOptions, TestEdge } from '../support/runtimes.js'
import { T0 } from '../support/runtimes.js'
import { type StatusBody, Visitor } from '../support/visitor.js'

const ADMIN = 'access-admin-token-0123456789ab'
// biome-ignore lint/suspicious/noExplicitAny: the answers' JSON, read freely in the assertions
type Json = Record<string, any>

export const accessRoom = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 1,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 600,
  refreshSeconds: 5,
  accessCodes: 'on',
  laneActiveUsers: 2,
  laneUsersPerMinute: 60,
  ...over,
})

/** An admin API call with the bearer token: its status and JSON. */
export async function adminCall(app: RequestTarget, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await app.request(`http://shop.test/_anteroom/api${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Json }
}

const inAnHour = () => new Date(T0 + 3_600_000).toISOString()

export function edgeAccessContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  const edges: TestEdge[] = []
  beforeAll(async () => {
    origin = await startOrigin()
  })
  afterAll(async () => {
    for (const e of edges) await e.close()
    await origin.close()
  })

  async function edgeWith(rooms: Record<string, unknown>[], o: Partial<StartOptions> = {}) {
    const edge = await runtime.start({ rooms, originUrl: origin.url, adminTokens: `alice:${ADMIN}`, ...o })
    edges.push(edge)
    return edge
  }

  const codes = async (app: RequestTarget, body: Record<string, unknown>) => {
    const r = await adminCall(app, 'POST', '/rooms/sale/access/codes', { expiresAt: inAnHour(), lane: 'priority', maxUses: 1, ...body })
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body as { grants: Json[]; codes: string[] }
  }
  const link = async (app: RequestTarget, body: Record<string, unknown>) => {
    const r = await adminCall(app, 'POST', '/rooms/sale/access/links', { expiresAt: inAnHour(), lane: 'priority', maxUses: 1, ...body })
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body as { grant: Json; token: string; link: string }
  }
  const withCode = (v: Visitor, app: RequestTarget, code: string) =>
    v.request(app, `/_anteroom/status?room=sale&code=${encodeURIComponent(code)}`, { json: true })

  describe(`access codes (${runtime.name})`, () => {
    it('a code puts its holder before the public line, by the status endpoint or the page (then 303 without it); shown once, listed with its uses', async () => {
      const { app } = await edgeWith([accessRoom({ mode: 'paused' })])
      const publics = [new Visitor(), new Visitor(), new Visitor()]
      for (const v of publics) await v.status(app, 'sale')
      const made = await codes(app, { count: 2, label: 'fan club' })
      expect(made.codes).toHaveLength(2)
      for (const c of made.codes) expect(c).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/)
      expect(made.grants.map((g) => g.hint)).toEqual(made.codes.map((c) => c.slice(-4)))
      // Typed as a person might: lower case, spaces for dashes.
      const holder = new Visitor('http://shop.test', '198.51.100.7')
      const typed = (made.codes[0] as string).toLowerCase().replace(/-/g, ' ')
      const res = await withCode(holder, app, typed)
      const status = (await res.json()) as StatusBody & { lane?: string }
      expect(res.status).toBe(200)
      expect(status).toMatchObject({ room: 'sale', state: 'paused', position: 1, waiting: 4, lane: 'priority' })
      // The place is in the queue token: polls without the code keep it.
      expect(await holder.status(app, 'sale')).toMatchObject({ position: 1, lane: 'priority' })
      // A public visitor already in line enters the second code on the page: 303 to the URL without it.
      // (Not followed: the Worker's test client would follow it by itself.)
      const page = await publics[2]!.request(app, `/tickets/seats?x=1&code=${encodeURIComponent(made.codes[1] as string)}`, {
        redirect: 'manual',
      })
      expect(page.status).toBe(303)
      expect(page.headers.get('location')).toBe('/tickets/seats?x=1')
      expect(page.headers.get('cache-control')).toBe('no-store')
      expect(page.headers.getSetCookie().some((c) => c.startsWith('anteroom_q_sale='))).toBe(true)
      expect(await publics[2]!.status(app, 'sale')).toMatchObject({ position: 2, waiting: 4, lane: 'priority' })
      // The page then says the lane, and still offers the form (src/http/access-page.ts); the public's has the form only.
      const lanePage = await (await publics[2]!.request(app, '/tickets/seats?x=1')).text()
      expect(lanePage).toContain('<p class="lane" id="lane">You are in the priority lane')
      expect(lanePage).toMatch(/<form class="access" method="get"[^>]*>[\s\S]*<input id="access-code" name="code"/)
      const publicPage = await (await publics[0]!.request(app, '/tickets')).text()
      expect(publicPage).toContain('Have an access code?')
      expect(publicPage).not.toContain('id="lane"')
      expect(await publics[0]!.status(app, 'sale')).toMatchObject({ position: 3 })
      expect((await publics[0]!.status(app, 'sale')).lane).toBeUndefined()
      // Listed with their uses; the codes themselves are never shown again.
      const list = await adminCall(app, 'GET', '/rooms/sale/access')
      expect(list.status).toBe(200)
      expect(list.body).toMatchObject({ room: 'sale', takesCodes: true, total: 2, lane: { activeUsers: 2, usersPerMinute: 60 } })
      expect(list.body.grants.map((g: Json) => [g.kind, g.used, g.remaining, g.state, g.label])).toEqual([
        ['code', 1, 0, 'used_up', 'fan club'],
        ['code', 1, 0, 'used_up', 'fan club'],
      ])
      for (const c of made.codes) expect(JSON.stringify(list.body)).not.toContain(c)
      const again = await adminCall(app, 'GET', `/rooms/sale/access/${made.grants[0]!.id}/link`)
      expect(again).toMatchObject({ status: 404, body: { error: { code: 'ERR_NOT_FOUND', field: 'grant' } } })
    })

    it('counts uses: a used-up code refuses the next visitor, the same visitor again costs nothing; expiry and revocation refuse', async () => {
      const { app, clock } = await edgeWith([accessRoom({ mode: 'paused' })])
      const made = await codes(app, { count: 1, maxUses: 2 })
      const code = made.codes[0] as string
      const a = new Visitor('http://shop.test', '198.51.100.1')
      const first = (await (await withCode(a, app, code)).json()) as StatusBody
      // A second submit of the form by the same visitor: the same place, no use counted.
      expect(await (await withCode(a, app, code)).json()).toMatchObject({ position: first.position, lane: 'priority' })
      expect((await withCode(new Visitor('http://shop.test', '198.51.100.2'), app, code)).status).toBe(200)
      const third = await withCode(new Visitor('http://shop.test', '198.51.100.3'), app, code)
      expect(third.status).toBe(409)
      expect(await third.json()).toMatchObject({ error: { code: 'ERR_ACCESS_USED_UP', field: 'code' } })
      // A browser is told on a page, with the same status; its place (if any) is untouched.
      const page = await new Visitor('http://shop.test', '198.51.100.4').request(app, `/tickets?code=${code}`)
      expect(page.status).toBe(409)
      expect(await page.text()).toContain('used as many times as it may be')
      // In the visitor's language, as every visitor's page (the catalogues' error.ERR_ACCESS_* texts).
      const german = await new Visitor('http://shop.test', '198.51.100.4').request(app, `/tickets?code=${code}`, {
        headers: { 'accept-language': 'de' },
      })
      expect(german.status).toBe(409)
      const de = await german.text()
      expect(de).toContain('<html lang="de">')
      expect(de).toContain('<h1>Code aufgebraucht</h1>')

      const [soon, other] = (await codes(app, { count: 2, maxUses: 5, expiresAt: new Date(T0 + 60_000).toISOString() })).codes as [
        string,
        string,
      ]
      await clock.advance(60_000)
      const expired = await withCode(new Visitor('http://shop.test', '198.51.100.5'), app, soon)
      expect([expired.status, ((await expired.json()) as Json).error.code]).toEqual([410, 'ERR_ACCESS_EXPIRED'])

      const inv = await link(app, { maxUses: 5, expiresAt: new Date(T0 + 7_200_000).toISOString() })
      expect(inv.link).toBe(`/tickets?code=${encodeURIComponent(inv.token)}`)
      expect((await withCode(new Visitor('http://shop.test', '198.51.100.6'), app, inv.token)).status).toBe(200)
      const revoked = await adminCall(app, 'POST', `/rooms/sale/access/${inv.grant.id}/revoke`)
      expect(revoked).toMatchObject({ status: 200, body: { grant: { state: 'revoked', used: 1 } } })
      const after = await withCode(new Visitor('http://shop.test', '198.51.100.7'), app, inv.token)
      expect([after.status, ((await after.json()) as Json).error.code]).toEqual([410, 'ERR_ACCESS_REVOKED'])
      // The link can be shown again (it is signed from its terms), revoked as it is.
      expect(await adminCall(app, 'GET', `/rooms/sale/access/${inv.grant.id}/link`)).toMatchObject({
        status: 200,
        body: { token: inv.token, grant: { state: 'revoked' } },
      })
      expect(other).toBeDefined()
      // Both makings and the revocation are in the audit log, with no code in it.
      const audit = await adminCall(app, 'GET', '/audit?kind=changes')
      const entries = audit.body.entries.filter((e: Json) => e.action.startsWith('access.'))
      expect(entries.map((e: Json) => [e.action, e.who, e.room, e.after.kind ?? null])).toEqual([
        ['access.revoke', 'alice', 'sale', null],
        ['access.create', 'alice', 'sale', 'link'],
        ['access.create', 'alice', 'sale', 'code'],
        ['access.create', 'alice', 'sale', 'code'],
      ])
      expect(entries[3].after).toMatchObject({ count: 1, maxUses: 2, lane: 'priority', grants: [made.grants[0]!.id] })
      expect(JSON.stringify(audit.body)).not.toContain(code)
    })

    it('throttles wrong codes per client network (even a right one, then), never links; refuses forged and foreign links without counting', async () => {
      const { app, clock } = await edgeWith([accessRoom({ mode: 'paused' }), accessRoom({ id: 'other', paths: ['/other'] })])
      await clock.set(T0 - (T0 % 60_000) + 1000)
      const right = (await codes(app, { count: 1, maxUses: 10 })).codes[0] as string
      const inv = await link(app, { maxUses: 10 })
      const from = (ip: string) => new Visitor('http://shop.test', ip)
      // Malformed values never reach the store and are not counted.
      for (let i = 0; i < 12; i++) expect((await withCode(from('203.0.113.9'), app, 'not-a-code')).status).toBe(400)
      const forged = `${inv.token.slice(0, -4)}AAAA`
      expect(await (await withCode(from('203.0.113.9'), app, forged)).json()).toMatchObject({ error: { code: 'ERR_ACCESS_INVALID' } })
      const foreign = await from('203.0.113.9').request(app, `/_anteroom/status?room=other&code=${encodeURIComponent(inv.token)}`, {
        json: true,
      })
      expect(foreign.status).toBe(400)
      // Well-formed wrong codes: ten a minute from one /24, then 429 with Retry-After, a right code included.
      for (let i = 0; i < 10; i++) {
        const wrong = await withCode(from(`203.0.113.${10 + i}`), app, `ABCD-EFGH-JKMN-${String(1000 + i)}`)
        expect([wrong.status, ((await wrong.json()) as Json).error.code]).toEqual([400, 'ERR_ACCESS_INVALID'])
      }
      const throttled = await withCode(from('203.0.113.200'), app, right)
      expect(throttled.status).toBe(429)
      expect(throttled.headers.get('retry-after')).toBe('59')
      expect(await throttled.json()).toMatchObject({ error: { code: 'ERR_TOO_MANY_CODES', field: 'code', retryAfterSeconds: 59 } })
      // An invite link cannot be guessed: it is never throttled. Another network is not either.
      expect((await withCode(from('203.0.113.201'), app, inv.token)).status).toBe(200)
      expect((await withCode(from('198.51.100.20'), app, right)).status).toBe(200)
      // The next minute starts afresh.
      await clock.advance(60_000)
      expect((await withCode(from('203.0.113.202'), app, right)).status).toBe(200)
      // Counted by outcome in the edge's metrics.
      const scrape = await app.request('http://shop.test/_anteroom/metrics', { headers: { authorization: `Bearer ${ADMIN}` } })
      const m = new Scrape(await scrape.text())
      const count = (outcome: string) => m.value('anteroom_access_redemptions_total', { room: 'sale', outcome }) ?? 0
      expect([count('redeemed'), count('invalid'), count('throttled')]).toEqual([3, 23, 1])
    })

    it('a room that does not take codes leaves ?code= to the origin', async () => {
      const { app } = await edgeWith([accessRoom({ accessCodes: 'off', totalActiveUsers: 5 })])
      const v = new Visitor()
      const res = await v.request(app, '/tickets?code=ABCD-EFGH-JKMN-PQRS')
      expect(res.status).toBe(200)
      expect(origin.requests.some((r) => r.url === '/tickets?code=ABCD-EFGH-JKMN-PQRS')).toBe(true)
      // Nor does its queue page offer a form for one.
      const waiting = new Visitor('http://shop.test', '198.51.100.99')
      for (let i = 0; i < 5; i++) await new Visitor('http://shop.test', `198.51.100.${i + 30}`).request(app, '/tickets')
      const page = await (await waiting.request(app, '/tickets')).text()
      expect(page).toContain('id="position"')
      expect(page).not.toContain('access-code')
    })

    it('the admin API names the field of each bad input', async () => {
      const { app } = await edgeWith([accessRoom({ laneActiveUsers: 0 })])
      const cases: [string, Record<string, unknown>, string][] = [
        ['codes', { count: 0 }, 'count'],
        ['codes', { count: 501 }, 'count'],
        ['codes', { count: 1, maxUses: 0 }, 'maxUses'],
        ['codes', { count: 1, maxUses: 1.5 }, 'maxUses'],
        ['codes', { count: 1, expiresAt: 'tomorrow' }, 'expiresAt'],
        ['codes', { count: 1, expiresAt: new Date(T0 - 1000).toISOString() }, 'expiresAt'],
        ['codes', { count: 1, expiresAt: new Date(T0 + 400 * 86_400_000).toISOString() }, 'expiresAt'],
        ['codes', { count: 1, lane: 'vip' }, 'lane'],
        ['codes', { count: 1, lane: 'separate' }, 'lane'],
        ['codes', { count: 1, label: 'x'.repeat(81) }, 'label'],
        ['codes', { count: 1, label: 'a\nb' }, 'label'],
        ['codes', { count: 1, colour: 'red' }, 'colour'],
        ['links', { maxUses: -1 }, 'maxUses'],
        ['links', { lane: 5 }, 'lane'],
        ['links', { count: 2 }, 'count'],
      ]
      for (const [kind, over, field] of cases) {
        const body = { expiresAt: inAnHour(), lane: 'priority', maxUses: 1, ...over }
        const r = await adminCall(app, 'POST', `/rooms/sale/access/${kind}`, body)
        expect([r.status, r.body.error?.code, r.body.error?.field], `${kind} ${JSON.stringify(over)}`).toEqual([
          400,
          'ERR_BAD_REQUEST',
          field,
        ])
        expect(r.body.error.message.startsWith(`${field}: `)).toBe(true)
      }
      const missing = await adminCall(app, 'POST', '/rooms/sale/access/codes', { maxUses: 1, lane: 'priority', expiresAt: inAnHour() })
      expect(missing.body.error).toMatchObject({ field: 'count' })
      expect((await adminCall(app, 'GET', '/rooms/sale/access?limit=0')).body.error).toMatchObject({ field: 'limit' })
      expect((await adminCall(app, 'GET', '/rooms/nope/access')).body.error).toMatchObject({ code: 'ERR_NOT_FOUND', field: 'id' })
      expect((await adminCall(app, 'POST', '/rooms/sale/access/not-an-id/revoke')).body.error).toMatchObject({ field: 'grant' })
      // Without credentials nothing is made.
      const anon = await app.request('http://shop.test/_anteroom/api/rooms/sale/access/codes', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ count: 1, maxUses: 1, lane: 'priority', expiresAt: inAnHour() }),
      })
      expect(anon.status).toBe(401)
      // The Access view's module is served like the UI's others (a Worker bundles it: worker/bundled.ts).
      const view = await app.request('http://shop.test/_anteroom/admin/access.js')
      expect([view.status, view.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8'])
      expect(await view.text()).toContain('export function createAccessView')
    })
  })

  describe(`lanes and the admin's ends (${runtime.name})`, () => {
    it('ending sessions reaches the separate lane too: all of them, one visitor, and letting them back', async () => {
      const { app, clock, queue } = await edgeWith([accessRoom({ laneActiveUsers: 1 })])
      expect((await new Visitor('http://shop.test', '192.0.2.1').status(app, 'sale')).state).toBe('admitted')
      const inv = await link(app, { lane: 'separate', maxUses: 3 })
      const holder = new Visitor('http://shop.test', '192.0.2.2')
      expect(await (await withCode(holder, app, inv.token)).json()).toMatchObject({ state: 'admitted', lane: 'separate' })
      expect((await queue.stats(laneRoomId('sale'), clock.now())).active).toBe(1)
      expect((await adminCall(app, 'POST', '/rooms/sale/sessions/end-all')).body).toEqual({ ended: 2 })
      expect((await queue.stats('sale', clock.now())).active).toBe(0)
      expect((await queue.stats(laneRoomId('sale'), clock.now())).active).toBe(0)
      // One visitor of the lane: ended there (and kept out of both lines), then let back.
      const other = new Visitor('http://shop.test', '192.0.2.3')
      expect(await (await withCode(other, app, inv.token)).json()).toMatchObject({ state: 'admitted', lane: 'separate' })
      const [, payload] = (other.cookies.get('anteroom_a_sale') as string).split('.')
      const sub = (JSON.parse(Buffer.from(payload as string, 'base64url').toString()) as { sub: string }).sub
      expect((await adminCall(app, 'POST', `/rooms/sale/sessions/${sub}/end`)).body).toEqual({ ended: true })
      expect((await queue.stats(laneRoomId('sale'), clock.now())).active).toBe(0)
      expect((await adminCall(app, 'POST', `/rooms/sale/sessions/${sub}/allow`)).body).toEqual({ allowed: true })
    })
  })

  describe(`lanes in a sale (${runtime.name})`, () => {
    it('admits the priority lane first and the separate lane at its own cap and rate, each in its order; never past a cap', async () => {
      // The public line: 2 at a time, 60 a minute; the separate lane: 2 at a time, 60 a minute.
      const { app, clock, queue } = await edgeWith([accessRoom({ totalActiveUsers: 2, sessionDurationSeconds: 10 })])
      const pub = Array.from({ length: 6 }, (_, i) => new Visitor('http://shop.test', `192.0.2.${i + 1}`))
      const pri = Array.from({ length: 3 }, (_, i) => new Visitor('http://shop.test', `192.0.2.${i + 50}`))
      const sep = Array.from({ length: 4 }, (_, i) => new Visitor('http://shop.test', `192.0.2.${i + 100}`))
      const priCodes = (await codes(app, { count: 3 })).codes
      const sepLink = await link(app, { lane: 'separate', maxUses: 4 })
      // Everyone joins in one paused second: the public visitors first, then the code holders.
      await adminCall(app, 'POST', '/rooms/sale/pause')
      for (const v of pub) await v.status(app, 'sale')
      for (const [i, v] of pri.entries()) expect((await (await withCode(v, app, priCodes[i] as string)).json()).lane).toBe('priority')
      for (const v of sep) expect((await (await withCode(v, app, sepLink.token)).json()).lane).toBe('separate')
      expect(await sep[3]!.status(app, 'sale')).toMatchObject({ state: 'paused', position: 4, waiting: 4, lane: 'separate' })
      // The public line holds 9 (3 of them priority, at its head); the separate lane 4 of its own.
      expect(await pub[0]!.status(app, 'sale')).toMatchObject({ position: 4, waiting: 9 })
      await adminCall(app, 'POST', '/rooms/sale/resume')
      /** Who was admitted, in the order the polls found them, and at which step (second). */
      const admitted: string[] = []
      const stepOf = new Map<string, number>()
      const everyone = [
        ...pub.map((v, i) => [`p${i}`, v] as const),
        ...pri.map((v, i) => [`r${i}`, v] as const),
        ...sep.map((v, i) => [`s${i}`, v] as const),
      ]
      for (let step = 1; step <= 90 && admitted.length < everyone.length; step++) {
        await clock.advance(1000)
        for (const [name, v] of everyone) {
          if (stepOf.has(name)) continue
          const s = await v.status(app, 'sale')
          if (s.state === 'admitted') {
            admitted.push(name)
            stepOf.set(name, step)
          }
        }
        // Never past either cap, at any step (the store's own count).
        expect((await queue.stats('sale', clock.now())).active).toBeLessThanOrEqual(2)
        expect((await queue.stats(laneRoomId('sale'), clock.now())).active).toBeLessThanOrEqual(2)
      }
      expect(admitted.length).toBe(everyone.length)
      // Each line in its own order: the priority lane before any public visitor, the separate lane in its own.
      const order = (prefix: string) => admitted.filter((n) => n.startsWith(prefix))
      const steps = (prefix: string) => order(prefix).map((n) => stepOf.get(n) as number)
      expect(order('r')).toEqual(['r0', 'r1', 'r2'])
      expect(order('p')).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5'])
      expect(order('s')).toEqual(['s0', 's1', 's2', 's3'])
      expect(Math.max(...steps('r'))).toBeLessThanOrEqual(Math.min(...steps('p')))
      // The separate lane did not wait for the public line: its first two were in before the public line's first.
      expect(stepOf.get('s1') as number).toBeLessThan(stepOf.get('p0') as number)
      // An admission from a lane says so to the origin, with the room's id and the redemption as its arrival.
      const late = new Visitor('http://shop.test', '192.0.2.200')
      const code = (await codes(app, { count: 1 })).codes[0] as string
      const res = await late.request(app, `/tickets/me?code=${code}`, { redirect: 'manual' })
      expect(res.status).toBe(303)
      expect((await late.request(app, '/tickets/me')).status).toBe(200)
      const seen = origin.requests.at(-1)?.headers['anteroom-admission'] as string
      const claims = JSON.parse(Buffer.from(seen.split('.')[1] as string, 'base64url').toString()) as Json
      expect(claims).toMatchObject({ room: 'sale', lane: 'priority' })
      expect(claims.arr).toBe(clock.now())
    })
  })
}

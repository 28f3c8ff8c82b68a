// The waiting room over HTTP: what a visitor sees, when they get in, and what the origin receives.
// Time is a manual clock shared by the edge and the store; nothing sleeps.
import { createLocalJWKSet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { createEdgeApp } from '../src/http/app.js'
import { ManualClock } from '../src/ports/clock.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
let origin: OriginServer
const edges: Edge[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of edges) await e.close()
  await origin.close()
})

async function edgeWith(rooms: Record<string, unknown>[], clock = new ManualClock(T0)) {
  const edge = await testEdge({ rooms, originUrl: origin.url, clock })
  edges.push(edge)
  return { edge, app: edge.app, clock }
}

const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 2,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 120,
  refreshSeconds: 20,
  ...over,
})

/** Counts store calls, to show which paths touch the store. */
function countCalls(store: QueueStore) {
  const counts = { poll: 0, renew: 0 }
  const poll = store.poll.bind(store)
  const renew = store.renew.bind(store)
  store.poll = (i) => {
    counts.poll++
    return poll(i)
  }
  store.renew = (i) => {
    counts.renew++
    return renew(i)
  }
  return counts
}

describe('queue page and status', () => {
  it('gives a new visitor the queue page: position, ahead, ETA, progress, Refresh, no-store, a safe cookie', async () => {
    const { app } = await edgeWith([room({ mode: 'paused' })])
    await new Visitor().request(app, '/tickets')
    const v = new Visitor()
    const res = await v.request(app, '/tickets/show/1')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/text\/html/)
    expect(res.headers.get('refresh')).toBe('20')
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
    expect(origin.requests.some((r) => r.url.startsWith('/tickets/show'))).toBe(false)
  })

  it('marks cookies Secure when the runtime says the visitor came over TLS, not when the request line claims it', async () => {
    const { edge } = await edgeWith([room()])
    const overTls = createEdgeApp({ ...edge.deps, scheme: () => 'https' })
    const res = await new Visitor('https://shop.test').request(overTls, '/tickets')
    expect(res.headers.getSetCookie().length).toBeGreaterThan(0)
    for (const c of res.headers.getSetCookie()) expect(c).toMatch(/; Secure/)
    const claimed = await new Visitor('https://shop.test').request(edge.app, '/tickets')
    for (const c of claimed.headers.getSetCookie()) expect(c).not.toMatch(/Secure/)
  })

  it('answers JSON for apps, and /_anteroom/status the same', async () => {
    const { app } = await edgeWith([room({ mode: 'paused' })])
    const v = new Visitor()
    const res = await v.request(app, '/tickets', { json: true })
    expect(res.headers.get('cache-control')).toBe('no-store')
    const expected = { room: 'sale', state: 'paused', position: 1, ahead: 0, waiting: 1, etaSeconds: null, refreshSeconds: 20 }
    expect(await res.json()).toEqual(expected)
    expect(await v.status(app, 'sale')).toEqual(expected)
    const unknown = await v.request(app, '/_anteroom/status?room=nope', { json: true })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ error: { code: 'ERR_NOT_FOUND', field: 'room' } })
  })

  it('drops the Refresh header once the page script polls by itself', async () => {
    const { app } = await edgeWith([room({ mode: 'paused' })])
    const v = new Visitor()
    await v.request(app, '/tickets')
    v.cookies.set('anteroom_js', '1')
    const res = await v.request(app, '/tickets')
    expect(res.headers.get('refresh')).toBeNull()
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'sha256-/)
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
      clock.advance(15_000)
      await first.status(app, 'sale')
      await last.status(app, 'sale')
      expect(await me.status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
      expect(await me.clone().status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
    }
    // Closing the tab and coming back 40 s later: still valid.
    const away = me.clone()
    clock.advance(40_000)
    await first.status(app, 'sale')
    await last.status(app, 'sale')
    expect(await away.status(app, 'sale')).toMatchObject({ position: 2, waiting: 3 })
    // Gone for longer than abandonAfterSeconds: the token lapsed and the line moved on.
    clock.advance(61_000)
    await first.status(app, 'sale')
    await last.status(app, 'sale')
    expect(await away.status(app, 'sale')).toMatchObject({ position: 3, waiting: 3 })
  })
})

describe('admission', () => {
  it('admits on the next request when the turn comes, forwarding with a JWKS-verifiable token', async () => {
    const { app, clock } = await edgeWith([room({ totalActiveUsers: 1 })])
    const a = new Visitor()
    const b = new Visitor()
    const resA = await a.request(app, '/tickets/a')
    expect(resA.status).toBe(200)
    expect(((await resA.json()) as { url: string }).url).toBe('/tickets/a')
    expect(await b.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
    // A's session ends after 120 s without requests; B's next poll admits B.
    clock.advance(121_000)
    const jwks = createLocalJWKSet((await (await app.request('http://shop.test/.well-known/jwks.json')).json()) as never)
    const resB = await b.request(app, '/tickets/b')
    const seen = (await resB.json()) as { url: string; headers: Record<string, string> }
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
    // arr is the arrival in ms on the store's clock. B stopped polling for longer than
    // abandonAfterSeconds, so B came back as a new arrival, now.
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
    expect(((await res.json()) as { headers: Record<string, string> }).headers['anteroom-admission']).toBeTruthy()
  })

  it('admitted requests cost no store call until half the session has gone; then one renewal', async () => {
    const { app, clock, edge } = await edgeWith([room({ sessionDurationSeconds: 100 })])
    const counts = countCalls(edge.deps.queue)
    const v = new Visitor()
    await v.request(app, '/tickets')
    expect(counts).toEqual({ poll: 1, renew: 0 })
    const before = v.cookies.get('anteroom_a_sale')
    for (let i = 0; i < 49; i++) {
      clock.advance(1000)
      expect((await v.request(app, '/tickets/page')).status).toBe(200)
    }
    expect(counts).toEqual({ poll: 1, renew: 0 })
    clock.advance(1000)
    await v.request(app, '/tickets/page')
    expect(counts).toEqual({ poll: 1, renew: 1 })
    expect(v.cookies.get('anteroom_a_sale')).not.toBe(before)
    for (let i = 0; i < 10; i++) await v.request(app, '/tickets/page')
    expect(counts).toEqual({ poll: 1, renew: 1 })
  })

  it('a session that was ended sends the visitor back to the line at the next renewal', async () => {
    const { app, clock, edge } = await edgeWith([room({ sessionDurationSeconds: 100, totalActiveUsers: 1 })])
    const v = new Visitor()
    await v.request(app, '/tickets')
    const claims = JSON.parse(Buffer.from((v.cookies.get('anteroom_a_sale') as string).split('.')[1] as string, 'base64url').toString())
    await edge.deps.queue.endSession('sale', claims.sub)
    await new Visitor().status(app, 'sale') // takes the freed slot
    clock.advance(51_000)
    expect(await v.status(app, 'sale')).toMatchObject({ state: 'queued', position: 1 })
  })

  it('a forged or foreign admission cookie gets a place in line, not the origin', async () => {
    const { app } = await edgeWith([room({ mode: 'paused' })])
    const other = await edgeWith([room()])
    const foreign = new Visitor()
    await foreign.request(other.app, '/tickets') // admitted by an edge with other keys
    const v = new Visitor()
    v.cookies.set('anteroom_a_sale', foreign.cookies.get('anteroom_a_sale') as string)
    const before = origin.requests.length
    const res = await v.request(app, '/tickets/secret', { json: true })
    expect(await res.json()).toMatchObject({ state: 'paused', position: 1 })
    expect(origin.requests.length).toBe(before)
  })
})

describe('room modes and ETA', () => {
  it('paused keeps the line and says so; closed admits nobody and says the sale is closed; passthrough admits all', async () => {
    const paused = await edgeWith([room({ mode: 'paused' })])
    expect(await (await new Visitor().request(paused.app, '/tickets')).text()).toContain('The line is paused')
    const closed = await edgeWith([room({ mode: 'closed' })])
    const counts = countCalls(closed.edge.deps.queue)
    const res = await new Visitor().request(closed.app, '/tickets')
    expect(await res.text()).toContain('This sale is closed')
    expect(res.headers.get('refresh')).toBeNull()
    expect(await new Visitor().status(closed.app, 'sale')).toMatchObject({ state: 'closed', position: null })
    expect(counts.poll).toBe(0)
    const pass = await edgeWith([room({ mode: 'passthrough', totalActiveUsers: 1, newUsersPerMinute: 1 })])
    for (let i = 0; i < 5; i++) expect(await new Visitor().status(pass.app, 'sale')).toMatchObject({ state: 'admitted' })
  })

  it('says the ETA is unknown until admissions were measured, then derives it from the rate and position', async () => {
    const { app, clock } = await edgeWith([room({ totalActiveUsers: 1000, newUsersPerMinute: 6 })])
    const visitors = Array.from({ length: 8 }, () => new Visitor())
    // Rate limit: 1 per 10 s. First visitor admitted at once; the rest wait.
    expect(await visitors[0]?.status(app, 'sale')).toMatchObject({ state: 'admitted' })
    for (const v of visitors.slice(1)) await v.status(app, 'sale')
    // One admission in the last minute: 1/60 per second, so position 3 means 180 s.
    expect(await visitors[3]?.status(app, 'sale')).toMatchObject({ position: 3, etaSeconds: 180 })
    clock.advance(61_000)
    const noRate = await edgeWith([room({ mode: 'fifo', totalActiveUsers: 1, newUsersPerMinute: 6 })])
    await new Visitor().status(noRate.app, 'sale')
    const waitingOnly = await new Visitor().request(noRate.app, '/tickets')
    expect(await waitingOnly.text()).toMatch(/id="eta">under a minute|id="eta">about/)
    const fresh = await edgeWith([room({ mode: 'paused' })])
    const page = await (await new Visitor().request(fresh.app, '/tickets')).text()
    expect(page).toContain('id="eta">unknown for now')
  })
})

describe('routing and bad input', () => {
  it('passes unprotected paths straight through and reserves /_anteroom/', async () => {
    const { app } = await edgeWith([room()])
    const res = await new Visitor().request(app, '/about?x=1')
    expect(((await res.json()) as { url: string }).url).toBe('/about?x=1')
    const reserved = await new Visitor().request(app, '/_anteroom/whatever')
    expect(reserved.status).toBe(404)
    expect((await app.request('http://shop.test/_anteroom/health')).status).toBe(200)
  })

  it('matches rooms by host and the longest path prefix', async () => {
    const { app } = await edgeWith([
      room({ id: 'a', hosts: ['shop.test'], paths: ['/tickets'], mode: 'paused' }),
      room({ id: 'b', hosts: ['shop.test'], paths: ['/tickets/vip'], mode: 'paused' }),
      room({ id: 'c', hosts: ['other.test'], paths: [], mode: 'paused' }),
    ])
    const statusOf = async (base: string, path: string) => {
      const res = await new Visitor(base).request(app, path, { json: true })
      return ((await res.json()) as { room?: string }).room
    }
    expect(await statusOf('http://shop.test', '/tickets/1')).toBe('a')
    expect(await statusOf('http://shop.test', '/tickets/vip/1')).toBe('b')
    expect(await statusOf('http://other.test', '/anything')).toBe('c')
    expect(await statusOf('http://shop.test', '/ticketsx')).toBeUndefined()
    expect(await statusOf('http://SHOP.test.:8080', '/tickets/1')).toBe('a')
    // Once rooms name hosts, an unknown Host cannot be used to reach the origin around them.
    const unknown = await new Visitor('http://unknown.test').request(app, '/tickets/1')
    expect(unknown.status).toBe(421)
  })

  it('spellings of a protected path that an origin may treat alike cannot skip the room', async () => {
    const { app } = await edgeWith([room({ mode: 'paused' })])
    const before = origin.requests.length
    for (const path of [
      '/%74ickets/1',
      '/TICKETS/1',
      '//tickets/1',
      '/tickets;jsessionid=1/x',
      '/tickets%2fx',
      '/tickets%2Fx',
      '/x/../tickets/1',
      '/%2e/tickets',
    ]) {
      const res = await new Visitor().request(app, path, { json: true })
      expect(((await res.json()) as { state?: string }).state, path).toBe('paused')
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
      `anteroom_q_sale=${token.replace('.q1', '.q2')}x`,
      `anteroom_q_sale=${'A'.repeat(10_000)}`,
      `anteroom_q_sale=${other.cookies.get('anteroom_q_other')?.replace('q1.other', 'q1.sale')}`,
      'anteroom_q_sale="quoted"; anteroom_a_sale=not.a.jwt',
      'anteroom_q_sale=%00%ff; ; ;=;==',
      `anteroom_a_sale=${'e'.repeat(3000)}.${'e'.repeat(3000)}.x`,
      '\u00ff\u00fe=\u00e9',
    ]
    for (const [i, cookie] of junk.entries()) {
      const res = await new Visitor().request(app, '/tickets', { headers: { cookie } })
      expect(res.status, cookie.slice(0, 40)).toBe(200)
      // A fresh place at the back: behind the valid visitor and the junk visitors before.
      expect(await res.text()).toContain(`id="position">${i + 2}<`)
      expect(res.headers.getSetCookie().some((c) => c.startsWith('anteroom_q_sale=q1.sale.'))).toBe(true)
    }
    // The visitor with the valid token still has their place.
    expect(await valid.status(app, 'sale')).toMatchObject({ position: 1 })
  })
})

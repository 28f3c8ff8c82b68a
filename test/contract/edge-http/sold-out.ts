// The edge's HTTP contract (test/contract/edge-http.ts), one topic: room modes (paused, closed, passthrough), the wait forecast, and a room sold out.
// Run on each runtime by edgeHttpContract.
import { describe, expect, inject, it } from 'vitest'
import type { StockSnapshot } from '../../../src/ports/claim-gate.js'
import { freshDb, type TestEdge } from '../../support/runtimes.js'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import { room } from './common.js'

export function soldOutContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

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
}

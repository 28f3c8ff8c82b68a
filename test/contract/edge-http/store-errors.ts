// The edge's HTTP contract (test/contract/edge-http.ts), one topic: what the edge does when its store (Redis) fails or goes away, and comes back.
// Run on each runtime by edgeHttpContract.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { until } from '../../../scripts/lib/until.js'
import { type RedisServer, startRedis } from '../../support/redis-server.js'
import type { RequestTarget } from '../../support/runtimes.js'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import type { Echo } from './common.js'

export function storeErrorsContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

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
      // A real server event (Redis stopping): the assertions never depend on time.
      await until(
        'the edge unhealthy (503) with Redis stopped',
        async () => (await app.request('http://shop.test/_anteroom/health')).status === 503,
        10_000,
        50,
      )
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
      const before = c.origin.requests.length
      expect((await new Visitor().request(app, '/strict/a')).status).toBe(503)
      expect(c.origin.requests.length).toBe(before)

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
      await until(
        'the edge healthy again with Redis back',
        async () => (await app.request('http://shop.test/_anteroom/health')).status === 200,
        10_000,
        50,
      )
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

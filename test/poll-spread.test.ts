// Polls spread over the refresh (core/polling.ts, issue #12 §5: the saturated rate at least 0.95 of
// the setting). Grants happen only on polls and the pace keeps a second of credit, so a line whose
// visitors all poll at the same moment, a refresh apart, loses the pace between their polls. Each
// place in line therefore has its own phase, and the status says when to poll (nextPollSeconds). An
// opening on a manual clock, everybody arriving at the same instant: following nextPollSeconds the
// line gets the whole pace; polling every refreshSeconds from the arrival instead, it does not.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { nextPollMs, onPoll, pollPhase } from '../src/core/polling.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type EdgeRuntime, nodeRuntime, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { Events } from './support/stepped.js'
import { Visitor } from './support/visitor.js'

describe('a place in line polls at its own phase', () => {
  it('consecutive arrivals (many at one instant) spread evenly over the refresh', () => {
    const start = 1_780_000_000_000_000
    const tenths = new Array(10).fill(0)
    for (let i = 0; i < 1000; i++) tenths[Math.floor(pollPhase(start + i) * 10)]++
    // A Weyl sequence: every tenth of the refresh holds 100 ± 2 of 1,000 consecutive arrivals.
    for (const n of tenths) expect(Math.abs(n - 100)).toBeLessThanOrEqual(2)
  })

  it('the next poll is half a refresh to one and a half away, and one who keeps to it polls every refresh', () => {
    const refresh = 3000
    for (let i = 0; i < 500; i++) {
      const arrival = 1_780_000_000_000_000 + i * 7919
      let now = 1_780_000_000_000 + i * 13
      const first = nextPollMs(arrival, now, refresh)
      expect(first).toBeGreaterThanOrEqual(refresh / 2)
      expect(first).toBeLessThanOrEqual((3 * refresh) / 2)
      now += first
      // Polling at the phase (or up to a third of a refresh late, or early), the next is a refresh after the phase time.
      for (const late of [0, 5, 400, -400, 1000]) expect(nextPollMs(arrival, now + late, refresh) + late).toBe(refresh)
    }
  })

  it("a wait ends on the visitor's first poll at or after it", () => {
    expect(onPoll(500, 1200, 3000)).toBe(1200)
    expect(onPoll(1200, 1200, 3000)).toBe(1200)
    expect(onPoll(1201, 1200, 3000)).toBe(4200)
    expect(onPoll(10_000, 1200, 3000)).toBe(10_200)
  })
})

/** 600 a minute (10 a second, at most 11 in any second), refreshing every 3 s; the cap never binds. */
const ROOM = { totalActiveUsers: 5000, newUsersPerMinute: 600, sessionDurationSeconds: 120, refreshSeconds: 3, abandonAfterSeconds: 10 }
const VISITORS = 400
const MEASURE_MS = 20_000

function spreadSuite(runtime: EdgeRuntime, redisUrl?: () => string) {
  describe(`an opening, everybody at once (${runtime.name}${redisUrl ? ', Redis' : ''})`, () => {
    let origin: OriginServer
    const edges: TestEdge[] = []
    beforeAll(async () => {
      origin = await startOrigin()
    })
    afterAll(async () => {
      for (const e of edges) await e.close()
      await origin.close()
    })

    /** Everybody joins at T0, then polls as `next` says, until let in; the store's admissions by T0 + MEASURE_MS. */
    const opening = async (next: (s: { nextPollSeconds: number; refreshSeconds: number }) => number) => {
      const room = `spread-${randomBytes(4).toString('hex')}`
      const edge = await runtime.start({
        rooms: [{ ...ROOM, id: room, paths: [`/${room}`] }],
        originUrl: origin.url,
        t0: T0,
        redisUrl: redisUrl?.(),
      })
      edges.push(edge)
      const events = new Events()
      const firstWaits: number[] = []
      for (let i = 0; i < VISITORS; i++) {
        const v = new Visitor()
        const poll = async () => {
          const s = await v.status(edge.app, room)
          if (s.state === 'admitted') return
          expect(s.state).toBe('queued')
          if (firstWaits.length < VISITORS && edge.clock.now() === T0) firstWaits.push(s.nextPollSeconds)
          const at = edge.clock.now() + Math.round(next(s) * 1000)
          if (at <= T0 + MEASURE_MS) events.push(at, poll)
        }
        events.push(T0, poll)
      }
      while (events.size > 0) {
        const t = events.next() as number
        await edge.clock.set(t)
        while (events.next() === t) await events.pop()()
        await edge.settled()
      }
      await edge.clock.set(T0 + MEASURE_MS)
      const { admittedLastMinute } = await edge.queue.stats(room, T0 + MEASURE_MS)
      return { admitted: admittedLastMinute, firstWaits }
    }

    // Two openings of 400 visitors, one poll at a time: through workerd on a slow shared machine this
    // has taken over a minute (the clock is manual, so the time allowed changes no result).
    it('following nextPollSeconds, the line gets the whole pace; polling every refreshSeconds in step, it does not', {
      timeout: 240_000,
    }, async () => {
      const paced = (ROOM.newUsersPerMinute / 60) * (MEASURE_MS / 1000)
      const spread = await opening((s) => s.nextPollSeconds)
      const inStep = await opening((s) => s.refreshSeconds)
      console.log(
        `${runtime.name}: admitted in the first ${MEASURE_MS / 1000} s of an opening at ${paced / (MEASURE_MS / 1000)} a second: ` +
          `${spread.admitted} following nextPollSeconds (${(spread.admitted / paced).toFixed(3)} of the pace), ` +
          `${inStep.admitted} polling every refreshSeconds (${(inStep.admitted / paced).toFixed(3)})`,
      )
      expect(spread.admitted).toBeGreaterThanOrEqual(0.95 * paced)
      expect(inStep.admitted).toBeLessThan(0.7 * paced)
      // The first polls after joining, spread over a refresh: each third of [1.5 s, 4.5 s) holds about a third.
      expect(spread.firstWaits.length).toBe(VISITORS - 11)
      for (let k = 0; k < 3; k++) {
        const n = spread.firstWaits.filter((w) => w >= 1.5 + k && w < 2.5 + k).length
        expect(Math.abs(n - spread.firstWaits.length / 3)).toBeLessThanOrEqual(10)
      }
    })

    it('the queue page without its script reloads at the phase too (Refresh header and noscript meta)', async () => {
      const room = `spread-${randomBytes(4).toString('hex')}`
      const edge = await runtime.start({
        rooms: [{ ...ROOM, newUsersPerMinute: 1, id: room, paths: [`/${room}`] }],
        originUrl: origin.url,
        t0: T0,
        redisUrl: redisUrl?.(),
      })
      edges.push(edge)
      const seen = new Set<string>()
      for (let i = 0; i < 20; i++) {
        const v = new Visitor()
        const res = await v.request(edge.app, `/${room}/`)
        const html = await res.text()
        if (!html.includes('data-state="queued"')) continue
        // The noscript meta at the next poll; the Refresh header one refresh later (responses.ts).
        const refresh = String(Number(res.headers.get('refresh')) - ROOM.refreshSeconds)
        const next = Number(/data-next="([\d.]+)"/.exec(html)?.[1])
        expect(Number(refresh)).toBe(Math.max(1, Math.round(next)))
        expect(html).toContain(`<meta http-equiv="refresh" content="${refresh}">`)
        expect(next).toBeGreaterThanOrEqual(1.5)
        expect(next).toBeLessThanOrEqual(4.5)
        seen.add(refresh)
      }
      // Twenty visitors arriving together do not all reload together.
      expect(seen.size).toBeGreaterThanOrEqual(3)
    })
  })
}

spreadSuite(nodeRuntime)
spreadSuite(nodeRuntime, () => inject('redisUrl'))
spreadSuite(workerRuntime(() => inject('redisUrl')))

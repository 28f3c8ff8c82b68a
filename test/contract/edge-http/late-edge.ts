// The edge's HTTP contract (test/contract/edge-http.ts), one topic: an edge that serves its polls late
// (core/lateness.ts). A visitor who polled when told keeps their place even when the edge reads their
// poll after their queue token's expiry, by as much as the edge's polls lately were late, and the store
// drops nobody for that silence; an edge that keeps up lets a lapsed token lapse. The clock is the
// runtime's manual clock: "late" is a poll read later than its page was told to send it.
import { describe, expect, it } from 'vitest'
import { Visitor } from '../../support/visitor.js'
import type { EdgeHttpContext } from '../edge-http.js'
import { room } from './common.js'

/** refresh 2 s, abandonAfter 5 s (the edge's minimums); paused, so places only move when lost. */
const LATE_ROOM = room({ mode: 'paused', refreshSeconds: 2, abandonAfterSeconds: 5 })

export function lateEdgeContract(c: EdgeHttpContext): void {
  const { runtime, edgeWith } = c

  describe(`a late edge (${runtime.name})`, () => {
    it('keeps the places of visitors whose polls it read after their tokens lapsed, as late as its polls lately were', async () => {
      const { app, clock, queue } = await edgeWith([LATE_ROOM])
      const t0 = clock.now()
      // A joins, then B a second later; each is told to poll again 1 to 3 s after its answer.
      const a = Array.from({ length: 6 }, () => new Visitor())
      const b = Array.from({ length: 6 }, () => new Visitor())
      const positions = new Map<Visitor, number>()
      for (const v of a) positions.set(v, (await v.status(app, 'sale')).position as number)
      await clock.set(t0 + 1000)
      for (const v of b) positions.set(v, (await v.status(app, 'sale')).position as number)
      // The edge falls behind: B's polls are read 0.5 to 2.5 s after their pages sent them (tokens still good)...
      await clock.set(t0 + 4500)
      for (const v of b) expect((await v.status(app, 'sale')).position, 'B, late').toBe(positions.get(v))
      // ...and A's after their tokens lapsed (at t0 + 5 s), 0.3 s ago: less than the edge's lateness.
      await clock.set(t0 + 5300)
      for (const v of a.slice(0, 5)) expect((await v.status(app, 'sale')).position, 'A, lapsed').toBe(positions.get(v))
      // The store heard how late the edge is: the sixth of A, silent 5.3 s, was not dropped either.
      expect((await queue.stats('sale', t0 + 5300)).abandoned).toBe(0)
      expect((await a[5]!.status(app, 'sale')).position).toBe(positions.get(a[5]!))
      expect((await queue.stats('sale', t0 + 5300)).waiting).toBe(12)
    })

    it('lets a lapsed token lapse at an edge that keeps up: the visitor starts again at the back', async () => {
      const { app, clock } = await edgeWith([LATE_ROOM])
      const t0 = clock.now()
      const first = new Visitor()
      expect((await first.status(app, 'sale')).position).toBe(1)
      const others = Array.from({ length: 6 }, () => new Visitor())
      const told: [number, Visitor][] = []
      for (const v of others) told.push([t0 + (await v.status(app, 'sale')).nextPollSeconds * 1000, v])
      // The others poll on time, each when told; then the first comes back 0.5 s after their token lapsed.
      for (const [at, v] of told.sort((x, y) => x[0] - y[0])) {
        await clock.set(at)
        await v.status(app, 'sale')
      }
      await clock.set(t0 + 5500)
      expect((await first.status(app, 'sale')).position).toBeGreaterThan(6)
    })

    it('lets a token lapse that is later than the edge is late', async () => {
      const { app, clock } = await edgeWith([LATE_ROOM])
      const t0 = clock.now()
      const first = new Visitor()
      await first.status(app, 'sale')
      const others = Array.from({ length: 6 }, () => new Visitor())
      await clock.set(t0 + 1000)
      for (const v of others) await v.status(app, 'sale')
      // The others' polls are read 1.2 to 3.2 s late; the first's token lapsed 4 s ago, past any of that.
      await clock.set(t0 + 5200)
      for (const v of others) await v.status(app, 'sale')
      await clock.set(t0 + 9000)
      for (const v of others) await v.status(app, 'sale')
      expect((await first.status(app, 'sale')).position).toBeGreaterThan(6)
    })
  })
}

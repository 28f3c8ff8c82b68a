// The QueueStore contract (test/contract/queue-store.ts), one topic: a late edge (core/lateness.ts, lateSlack in core/admission.ts): an edge
// that serves its polls late says how late in its hint, and nobody is dropped for a silence that
// lateness explains; a place used up by an admission stays used for as long as a late edge reads
// old queue tokens. Run on every store; time is passed in, never slept.
import { describe, expect, it } from 'vitest'
import { seenBucketOf } from '../../../src/core/admission.js'
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../../../src/core/settings.js'
import type { StoreHarness } from '../queue-store.js'

let roomSeq = 0
const newRoom = () => `late${Date.now().toString(36)}-${roomSeq++}`
const T0 = 1_800_000_000_000
const vid = (i: number) => `l${String(i).padStart(15, '0')}`
const A = 4000

const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
  ...ADMISSION_DEFAULTS,
  mode: 'paused',
  totalActiveUsers: 1000,
  newUsersPerMinute: 6000,
  abandonAfterMs: A,
  sessionMs: 600_000,
  refreshSeconds: 2,
  ...over,
})

/** Two visitor ids in the same seen bucket (the sweep checks a bucket at a time). */
function sameBucket(): [string, string] {
  const first = new Map<number, string>()
  for (let i = 100; ; i++) {
    const id = vid(i)
    const other = first.get(seenBucketOf(id))
    if (other !== undefined) return [other, id]
    first.set(seenBucketOf(id), id)
  }
}

export function lateEdgeContract(makeHarness: () => Promise<StoreHarness>): void {
  describe('a late edge', () => {
    it('holds the drop of a silent visitor by the lateness it reports, for abandonAfter after its report', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits()
      await store.poll({ room, visitor: vid(0), limits: l, now: T0 })
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1 })
      // Past V's abandonAfter, an edge 1 s late polls: V's next poll may be waiting at it. Not dropped.
      const w = await store.poll({ room, visitor: vid(2), limits: l, now: T0 + A + 500, hint: { active: 0, late: 1000 } })
      expect(w).toMatchObject({ state: 'paused', waiting: 3, position: 3 })
      // The lateness counts for abandonAfter after the report, even in polls that do not repeat it...
      expect(await store.poll({ room, visitor: vid(2), limits: l, now: T0 + A + 900 })).toMatchObject({ waiting: 3 })
      // ...and no more than it explains: 1 s more than abandonAfter, and V and the next are dropped.
      expect(await store.poll({ room, visitor: vid(2), limits: l, now: T0 + A + 1002 })).toMatchObject({ waiting: 1, position: 1 })
      expect((await store.stats(room, T0 + A + 1002)).abandoned).toBe(2)
    })

    it('in a bucket the sweep checks for an older visitor, drops only who is silent past abandonAfter and the lateness', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits()
      const [u, v] = sameBucket()
      await store.poll({ room, visitor: u, limits: l, now: T0 - 2000 })
      await store.poll({ room, visitor: v, limits: l, now: T0 })
      // An edge 1 s late: the bucket is due for U (silent 2 s past abandonAfter and the lateness), not for V.
      await store.poll({ room, visitor: vid(2), limits: l, now: T0 + A + 500, hint: { active: 0, late: 1000 } })
      expect((await store.stats(room, T0 + A + 500)).abandoned).toBe(1)
      expect(await store.poll({ room, visitor: v, limits: l, now: T0 + A + 600 })).toMatchObject({ state: 'paused', position: 1 })
    })

    it('a visitor whose poll was late keeps their place in line, ahead of later arrivals', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'fifo', totalActiveUsers: 1 })
      // One slot, taken; V and then W wait.
      await store.poll({ room, visitor: vid(9), limits: l, now: T0 })
      const v = await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 1 })
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2 })
      // W keeps polling at an on-time edge; V's poll waits 2.5 s at a late edge, which says so.
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2000 })
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 4000, hint: { active: 1, late: 2500 } })
      const back = await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 5500, hint: { active: 1, late: 2500 } })
      expect(back).toMatchObject({ state: 'queued', position: 1, arrival: v.arrival })
    })

    it('counts at most abandonAfter of lateness, and forgets it abandonAfter after the last report', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits()
      await store.poll({ room, visitor: vid(0), limits: l, now: T0 })
      // A minute "late" is an edge that is down, not late: abandonAfter at the most.
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2 * A - 1, hint: { active: 0, late: 60_000 } })
      expect((await store.stats(room, T0 + 2 * A - 1)).abandoned).toBe(0)
      expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2 * A + 1 })).toMatchObject({ waiting: 1 })
      // Long after the report, abandonAfter alone counts again.
      const later = T0 + 10 * A
      await store.poll({ room, visitor: vid(2), limits: l, now: later })
      expect(await store.poll({ room, visitor: vid(3), limits: l, now: later + A + 1 })).toMatchObject({ waiting: 1 })
    })

    it('an absent visitor granted while an edge is late has its lateness more to collect the admission', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'fifo', totalActiveUsers: 5, refreshSeconds: 1 })
      await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
      // Another visitor's poll, at an edge 2 s late, grants V (away, last seen at T0).
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 100, hint: { active: 0, late: 2000 } })
      // abandonAfter after V's last poll, and the lateness: V's admission still waits for them.
      expect((await store.stats(room, T0 + A + 1900)).active).toBe(2)
      expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + A + 1900 })).toMatchObject({ state: 'admitted' })
    })

    it("a grant that lapsed while the visitor's poll waited at a late edge gives the place back to the token of their last poll", async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'fifo', totalActiveUsers: 5, refreshSeconds: 1 })
      const v = await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
      await store.poll({ room, visitor: vid(1), limits: { ...l, mode: 'paused' }, now: T0 + 1 })
      // W's poll grants V while V is away: V has until abandonAfter after their last poll to collect it.
      await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 100 })
      // V's next poll was held up at an edge whose lateness nobody had told the store yet: it comes
      // after the grant lapsed, with the token V's last poll signed, which that edge still reads.
      const token = { arrival: v.arrival, tokenExpires: T0 + A }
      expect((await store.stats(room, T0 + A + 500)).active).toBe(1)
      const back = await store.poll({ room, visitor: vid(0), ...token, limits: l, now: T0 + A + 500 })
      expect(back).toMatchObject({ state: 'admitted', arrival: v.arrival })
    })

    it('a grant the visitor collected uses the place up for the token of their last poll before it', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'fifo', totalActiveUsers: 1, sessionMs: 1000, refreshSeconds: 1 })
      await store.poll({ room, visitor: vid(9), limits: l, now: T0 })
      const v = await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 1 })
      expect(v.state).toBe('queued')
      // The slot frees at T0 + 1000; W's poll grants V while V is away; V collects it at T0 + 1500.
      await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1200 })
      expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 1500 })).toMatchObject({ state: 'admitted' })
      // After the session, the token of V's last poll before the grant brings nothing back: W is first.
      // (The grant was made while V was away; collecting it used the place up again.)
      const back = await store.poll({
        room,
        visitor: vid(0),
        arrival: v.arrival,
        tokenExpires: T0 + 1 + A,
        limits: limits(),
        now: T0 + 3000,
      })
      expect(back).toMatchObject({ state: 'paused', position: 2 })
    })

    it('a place an admission used up stays used an abandonAfter past the token lifetime: a late edge reads old tokens that long', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'fifo', totalActiveUsers: 1, sessionMs: 1000 })
      const v = await store.poll({ room, visitor: vid(0), limits: l, now: T0 })
      expect(v.state).toBe('admitted')
      // The room pauses; W waits and keeps polling. V's session runs out at T0 + 1000.
      for (const at of [T0 + 1, T0 + 2000, T0 + 4000, T0 + 6000]) await store.poll({ room, visitor: vid(1), limits: limits(), now: at })
      // The queue token of V's place (signed at T0, expiring at T0 + abandonAfter) comes back at an
      // edge late by almost abandonAfter: the place was used, so V starts again at the back, behind W.
      const old = { arrival: v.arrival, tokenExpires: T0 + A }
      const back = await store.poll({ room, visitor: vid(0), ...old, limits: limits(), now: T0 + 2 * A - 1 })
      expect(back).toMatchObject({ state: 'paused', position: 2 })
      expect(back.arrival).toBeGreaterThan(v.arrival)
    })
  })
}

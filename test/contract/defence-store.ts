// The DefenceStore contract: one suite, run against every implementation (memory, Redis, a Redis
// Cluster). Time is passed in, so the minute windows and the last minute's buckets are checked
// without sleeping.
import { describe, expect, it } from 'vitest'
import type { DefenceStore } from '../../src/ports/defence-store.js'

let roomSeq = 0
const newRoom = () => `d${Date.now().toString(36)}-${roomSeq++}`
/** A minute boundary. */
const T0 = 1_800_000_000_000

export function defenceStoreContract(name: string, make: () => Promise<DefenceStore>): void {
  describe(`DefenceStore contract: ${name}`, () => {
    it('lets a network take `limit` new places a minute, then says when the next minute begins', async () => {
      const store = await make()
      const room = newRoom()
      const join = (network: string, now: number, limit = 3) => store.countJoin({ room, network, limit, now })
      const counts = []
      for (let i = 0; i < 3; i++) counts.push(await join('198.51.100.0/24', T0 + 1000 + i))
      expect(counts.map((r) => [r.allowed, r.count])).toEqual([
        [true, 1],
        [true, 2],
        [true, 3],
      ])
      expect(await join('198.51.100.0/24', T0 + 15_000)).toEqual({ allowed: false, count: 3, retryAfterMs: 45_000, now: T0 + 15_000 })
      // A refusal is not counted: the network is at the cap, not beyond it.
      expect(await join('198.51.100.0/24', T0 + 59_999)).toMatchObject({ allowed: false, count: 3, retryAfterMs: 1 })
      // Another network, and the same network in another room, have their own counts.
      expect(await join('198.51.101.0/24', T0 + 20_000)).toMatchObject({ allowed: true, count: 1 })
      expect(await store.countJoin({ room: newRoom(), network: '198.51.100.0/24', limit: 3, now: T0 + 20_000 })).toMatchObject({
        allowed: true,
        count: 1,
      })
      // The next minute is a new window.
      expect(await join('198.51.100.0/24', T0 + 60_000)).toMatchObject({ allowed: true, count: 1 })
      // A lower cap applies at once to what the minute has counted.
      expect(await join('198.51.100.0/24', T0 + 60_001, 1)).toMatchObject({ allowed: false, count: 1, retryAfterMs: 59_999 })
    })

    it('adds refusals by reason, in all and in about the last minute; an empty call only reads', async () => {
      const store = await make()
      const room = newRoom()
      expect(await store.addRefusals(room, {}, T0)).toEqual({ total: { network: 0, pow: 0 }, lastMinute: { network: 0, pow: 0 }, now: T0 })
      await store.addRefusals(room, { network: 5 }, T0)
      await store.addRefusals(room, { network: 2, pow: 7 }, T0 + 20_000)
      expect(await store.addRefusals(room, {}, T0 + 30_000)).toEqual({
        total: { network: 7, pow: 7 },
        lastMinute: { network: 7, pow: 7 },
        now: T0 + 30_000,
      })
      // 60 s on, the first bucket has left the last minute; the totals stay.
      expect(await store.addRefusals(room, { pow: 1 }, T0 + 60_000)).toEqual({
        total: { network: 7, pow: 8 },
        lastMinute: { network: 2, pow: 8 },
        now: T0 + 60_000,
      })
      expect(await store.addRefusals(room, {}, T0 + 200_000)).toMatchObject({
        total: { network: 7, pow: 8 },
        lastMinute: { network: 0, pow: 0 },
      })
      expect((await store.addRefusals(newRoom(), {}, T0)).total).toEqual({ network: 0, pow: 0 })
    })
  })
}

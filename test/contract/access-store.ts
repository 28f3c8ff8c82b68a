// The AccessStore contract: one suite, run against every implementation (memory, Redis, a Redis
// Cluster). Time is passed in, so expiry, the minute of wrong tries and the lanes' arrivals are checked
// without sleeping.
import { describe, expect, it } from 'vitest'
import { type GrantTerms, LANE_OFFSET_US, type Lane, type RedeemInput } from '../../src/core/access.js'
import type { AccessStore } from '../../src/ports/access-store.js'

const T0 = 1_800_000_000_000
let seq = 0
const newRoom = () => `acc${Date.now().toString(36)}-${seq++}`
let ids = 0
/** A grant id of the right form (12 of base32's lower case), unique in the run. */
const gid = () => `g${String(ids++).padStart(11, '0')}`

function terms(over: Partial<GrantTerms> = {}): GrantTerms {
  return {
    id: gid(),
    kind: 'code',
    lane: 'priority',
    label: 'fan club',
    maxUses: 1,
    expiresAt: T0 + 3_600_000,
    createdAt: T0,
    createdBy: 'alice',
    hint: 'AB12',
    ...over,
  }
}

export function accessStoreContract(name: string, make: () => Promise<AccessStore>): void {
  describe(`AccessStore contract: ${name}`, () => {
    const redeem = (store: AccessStore, room: string, over: Partial<RedeemInput> & Pick<RedeemInput, 'by'>) =>
      store.redeem({ room, visitor: 'v000000000000001', network: '203.0.113.0/24', triesPerMinute: 3, now: T0, ...over })

    it('keeps grants and lists them newest first, a batch in its order, with their uses, in pages', async () => {
      const store = await make()
      const room = newRoom()
      const first = terms({ createdAt: T0 - 1000, label: 'first' })
      const batch = [terms({ label: 'b0' }), terms({ label: 'b1' }), terms({ kind: 'link', hint: '', label: 'b2', maxUses: 5 })]
      await store.create(room, [{ terms: first, digest: 'digest-first' }])
      await store.create(room, [
        { terms: batch[0] as GrantTerms, digest: 'digest-b0' },
        { terms: batch[1] as GrantTerms, digest: 'digest-b1' },
        { terms: batch[2] as GrantTerms },
      ])
      const page = await store.list(room, 0, 10)
      expect(page.total).toBe(4)
      expect(page.grants.map((g) => g.label)).toEqual(['b2', 'b1', 'b0', 'first'])
      expect(page.grants[3]).toEqual({ ...first, used: 0, revokedAt: null })
      expect((await store.list(room, 1, 2)).grants.map((g) => g.label)).toEqual(['b1', 'b0'])
      expect(await store.list(room, 9, 2)).toEqual({ total: 4, grants: [] })
      // Made in the same instant, one after the other: still listed newest first.
      const same = [terms({ label: 'c0' }), terms({ label: 'c1' })]
      for (const t of same) await store.create(room, [{ terms: t }])
      expect((await store.list(room, 0, 3)).grants.map((g) => g.label)).toEqual(['c1', 'c0', 'b2'])
      expect(await store.get(room, first.id)).toEqual({ ...first, used: 0, revokedAt: null })
      expect(await store.get(room, gid())).toBeUndefined()
      // Another room has none of them.
      expect((await store.list(newRoom(), 0, 10)).total).toBe(0)
    })

    it('a redemption counts one use and gives the lane’s next arrival: the time less the lane’s offset, unique and rising', async () => {
      const store = await make()
      const room = newRoom()
      const lanes: [Lane, GrantTerms][] = [
        ['priority', terms({ maxUses: 10 })],
        ['separate', terms({ maxUses: 10, lane: 'separate' })],
      ]
      await store.create(
        room,
        lanes.map(([, t]) => ({ terms: t, digest: `d-${t.id}` })),
      )
      for (const [lane, t] of lanes) {
        const a = await redeem(store, room, { by: { code: `d-${t.id}` }, visitor: 'v000000000000001' })
        const b = await redeem(store, room, { by: { code: `d-${t.id}` }, visitor: 'v000000000000002' })
        expect(a).toEqual({ ok: true, grant: t.id, lane, arrival: T0 * 1000 - LANE_OFFSET_US[lane], again: false, used: 1, now: T0 })
        // The same instant: the next arrival of the lane, one µs on.
        expect(b).toMatchObject({ ok: true, lane, arrival: T0 * 1000 - LANE_OFFSET_US[lane] + 1, used: 2 })
        const later = await redeem(store, room, { by: { code: `d-${t.id}` }, visitor: 'v000000000000003', now: T0 + 5 })
        expect(later).toMatchObject({ arrival: (T0 + 5) * 1000 - LANE_OFFSET_US[lane], used: 3 })
        expect((await store.get(room, t.id))?.used).toBe(3)
      }
    })

    it('the same visitor again gets the same arrival and uses nothing; a code used up refuses everyone else', async () => {
      const store = await make()
      const room = newRoom()
      const t = terms({ maxUses: 2 })
      await store.create(room, [{ terms: t, digest: 'dg' }])
      const first = await redeem(store, room, { by: { code: 'dg' }, visitor: 'v000000000000001' })
      const again = await redeem(store, room, { by: { code: 'dg' }, visitor: 'v000000000000001', now: T0 + 50 })
      expect(again).toEqual({ ...first, again: true, now: T0 + 50 })
      expect(await redeem(store, room, { by: { code: 'dg' }, visitor: 'v000000000000002' })).toMatchObject({ ok: true, used: 2 })
      expect(await redeem(store, room, { by: { code: 'dg' }, visitor: 'v000000000000003' })).toEqual({
        ok: false,
        problem: 'used_up',
        retryAfterMs: 60_000 - (T0 % 60_000),
        now: T0,
      })
      // A holder who redeemed it is still answered (a second submit of the form).
      expect(await redeem(store, room, { by: { code: 'dg' }, visitor: 'v000000000000002' })).toMatchObject({ ok: true, again: true })
      expect((await store.get(room, t.id))?.used).toBe(2)
    })

    it('refuses a grant from its expiry on, and once revoked, for everyone; the first revocation’s time is kept', async () => {
      const store = await make()
      const room = newRoom()
      const t = terms({ maxUses: 5, expiresAt: T0 + 1000 })
      const link = terms({ kind: 'link', hint: '', maxUses: 5 })
      await store.create(room, [{ terms: t, digest: 'dx' }, { terms: link }])
      expect(await redeem(store, room, { by: { code: 'dx' }, now: T0 + 999 })).toMatchObject({ ok: true })
      expect(await redeem(store, room, { by: { code: 'dx' }, visitor: 'v000000000000009', now: T0 + 1000 })).toMatchObject({
        ok: false,
        problem: 'expired',
      })
      expect(await store.revoke(room, link.id, T0 + 10)).toEqual({ ...link, used: 0, revokedAt: T0 + 10 })
      expect((await store.revoke(room, link.id, T0 + 20))?.revokedAt).toBe(T0 + 10)
      expect(await redeem(store, room, { by: { link: link.id } })).toMatchObject({ ok: false, problem: 'revoked' })
      expect(await store.revoke(room, gid(), T0)).toBeUndefined()
    })

    it('wrong codes count against the network: past the minute’s tries even a right code is refused, not links, not other networks', async () => {
      const store = await make()
      const room = newRoom()
      const t = terms({ maxUses: 50 })
      const link = terms({ kind: 'link', hint: '', maxUses: 50 })
      await store.create(room, [{ terms: t, digest: 'right' }, { terms: link }])
      const at = T0 - (T0 % 60_000) + 10_000
      for (let i = 0; i < 3; i++)
        expect(await redeem(store, room, { by: { code: `wrong-${i}` }, now: at })).toMatchObject({ problem: 'unknown' })
      expect(await redeem(store, room, { by: { code: 'right' }, now: at + 1 })).toEqual({
        ok: false,
        problem: 'throttled',
        retryAfterMs: 50_000 - 1,
        now: at + 1,
      })
      // A link cannot be guessed: it is neither counted nor refused for the network's tries.
      expect(await redeem(store, room, { by: { link: link.id }, now: at + 2 })).toMatchObject({ ok: true })
      expect(await redeem(store, room, { by: { code: 'right' }, network: '198.51.100.0/24', now: at + 3 })).toMatchObject({ ok: true })
      // A right code does not count; the next minute starts afresh.
      expect(await redeem(store, room, { by: { code: 'right' }, visitor: 'v000000000000005', now: at + 50_000 })).toMatchObject({
        ok: true,
      })
      // Another room counts its own.
      const other = newRoom()
      expect(await redeem(store, other, { by: { code: 'right' }, now: at + 4 })).toMatchObject({ problem: 'unknown' })
    })

    it('a code is not redeemed as a link, nor a link as a code', async () => {
      const store = await make()
      const room = newRoom()
      const code = terms()
      const link = terms({ kind: 'link', hint: '' })
      await store.create(room, [
        { terms: code, digest: 'dc' },
        { terms: link, digest: 'dl' },
      ])
      expect(await redeem(store, room, { by: { link: code.id } })).toMatchObject({ problem: 'unknown' })
      expect(await redeem(store, room, { by: { code: 'dl' } })).toMatchObject({ problem: 'unknown' })
    })

    it('never counts more uses than the grant has, however many redeem at once', async () => {
      const store = await make()
      const room = newRoom()
      const t = terms({ maxUses: 7, kind: 'link', hint: '' })
      await store.create(room, [{ terms: t }])
      const results = await Promise.all(
        [...Array(60).keys()].map((i) => redeem(store, room, { by: { link: t.id }, visitor: `v${String(i).padStart(15, '0')}` })),
      )
      const ok = results.filter((r) => r.ok)
      expect(ok.length).toBe(7)
      expect(new Set(ok.map((r) => (r.ok ? r.arrival : 0))).size).toBe(7)
      expect(results.filter((r) => !r.ok && r.problem === 'used_up').length).toBe(53)
      expect((await store.get(room, t.id))?.used).toBe(7)
    })
  })
}

// The QueueStore contract (test/contract/queue-store.ts), one topic: watch, and a store that forgot or went back in time: recovery and reserved slots.
import { expect, it } from 'vitest'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function recoveryContract(makeHarness: () => Promise<StoreHarness>): void {
  it('watch brings what the wait estimate reads: the line, the pace, expiries by rank and of the sessions asked for, the totals', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const fresh = await store.watch(room, T0, undefined, { ranks: [0, -1], visitors: [vid(0)] })
    expect(fresh).toMatchObject({ waiting: 0, lastSlotUs: null, reserved: 0, expiries: [], tracked: [null], admitted: 0, abandoned: 0 })
    // One a second, three at once: A, B and C are let in a second apart, D and E wait.
    const l = limits({ totalActiveUsers: 3, newUsersPerMinute: 60, sessionMs: 20_000, abandonAfterMs: 10_000 })
    for (let i = 0; i < 5; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + i * 1000 })
    const seen = await store.watch(room, T0, undefined, { ranks: [0, 2, -1, 5], visitors: [vid(1), vid(4)] })
    expect(seen).toMatchObject({ active: 3, waiting: 2, reserved: 0, reservedUntil: 0, admitted: 3, abandoned: 0 })
    expect(typeof seen.lastSlotUs).toBe('number')
    // Ranks 2 and -1 are the same entry, given once; rank 5 is past the end. D is not active.
    expect(seen.expiries).toEqual([
      [0, T0 + 20_000, vid(0)],
      [2, T0 + 22_000, vid(2)],
    ])
    expect(seen.tracked).toEqual([T0 + 21_000, null])
    // D and E stop polling: past abandonAfter the line drops them, and F, arriving, is let in.
    expect(await store.poll({ room, visitor: vid(5), limits: l, now: T0 + 30_000 })).toMatchObject({ state: 'admitted' })
    expect(await store.watch(room, T0)).toMatchObject({ waiting: 0, admitted: 4, abandoned: 2, expiries: [], tracked: [] })
  })

  it('notices that it forgot: recovers before admitting anyone, in arrival order, and keeps the slots of sessions from before', async () => {
    const h = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1, refreshSeconds: 5, sessionMs: 120_000 })
    // A is admitted; B then C wait. The edge's watch sees the life and one active session.
    const a = await h.store.poll({ room, visitor: vid(0), limits: l, now: T0 })
    expect(a).toMatchObject({ state: 'admitted' })
    const b = await h.store.poll({ room, visitor: vid(1), limits: l, now: T0 + 10 })
    const c = await h.store.poll({ room, visitor: vid(2), limits: l, now: T0 + 20 })
    const seen = await h.store.watch(room, T0)
    expect(seen).toMatchObject({ life: { born: T0 }, active: 1 })
    const hint = { epoch: seen.life?.epoch as number, active: seen.active }
    // A fresh room with no evidence of a past life does not wait.
    expect((await h.store.watch(newRoom(), T0)).life).toBeNull()

    await h.forget()
    // C polls first, with their token: the store has no life for the room, so it forgot it.
    const t1 = T0 + 30_000
    expect(await h.store.poll({ room, visitor: vid(2), arrival: c.arrival, limits: l, now: t1, hint })).toMatchObject({
      state: 'recovering',
      position: 1,
    })
    expect((await h.store.watch(room, T0)).life?.born).toBe(t1)
    // B comes back within the window and is ahead of C again; nobody is admitted meanwhile.
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: t1 + 4000, hint })).toMatchObject({
      state: 'recovering',
      position: 1,
    })
    const windowEnd = t1 + 2 * 5000 + 1000
    expect(await h.store.poll({ room, visitor: vid(2), arrival: c.arrival, limits: l, now: windowEnd - 1, hint })).toMatchObject({
      state: 'recovering',
      position: 2,
    })
    // After the window, A's slot stays reserved (the cap is one): still nobody in.
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: windowEnd + 1, hint })).toMatchObject({
      state: 'queued',
      position: 1,
    })
    expect((await h.store.stats(room, windowEnd + 1)).active).toBe(0)
    // A comes back (their edge re-registers the session): counted again, and the reservation is theirs.
    expect(await h.store.renew({ room, visitor: vid(0), sessionMs: l.sessionMs, now: windowEnd + 2 })).toBeDefined()
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: windowEnd + 3, hint })).toMatchObject({
      state: 'queued',
      position: 1,
    })
    // A's session ends: B, the first in line, gets the slot; C is still behind.
    await h.store.endSession(room, vid(0), windowEnd + 4)
    expect(await h.store.poll({ room, visitor: vid(2), arrival: c.arrival, limits: l, now: windowEnd + 5, hint })).toMatchObject({
      state: 'queued',
      position: 1,
    })
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: windowEnd + 6, hint })).toMatchObject({
      state: 'admitted',
    })
  })

  it('notices that it went back in time (fewer polls than an edge saw): recovers, and reserves the sessions it lost', async () => {
    const h = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 2, refreshSeconds: 5, sessionMs: 120_000 })
    const a = await h.store.poll({ room, visitor: vid(0), limits: l, now: T0 })
    expect(a).toMatchObject({ state: 'admitted', life: { born: T0, seq: 1 } })
    const b = await h.store.poll({ room, visitor: vid(1), limits: { ...l, mode: 'paused' }, now: T0 + 10 })
    expect(b.life.seq).toBe(2)
    // An edge that saw this life at seq 40 with two sessions active: the store (a promoted replica)
    // lost the polls after the second, among them an admission.
    const hint = { epoch: a.life.epoch, seq: 40, active: 2 }
    const back = await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: T0 + 1000, hint })
    expect(back).toMatchObject({ state: 'recovering', position: 1, life: { born: T0 + 1000, seq: 41 } })
    expect(back.life.epoch).not.toBe(a.life.epoch)
    // Edges that saw fewer polls, or the old life, start nothing new.
    const other = await h.store.poll({
      room,
      visitor: vid(2),
      limits: l,
      now: T0 + 1001,
      hint: { epoch: a.life.epoch, seq: 3, active: 1 },
    })
    expect(other).toMatchObject({ state: 'recovering', life: { epoch: back.life.epoch, seq: 42 } })
    // After the window, one slot is taken (A), one reserved for the session the store lost.
    const after = T0 + 1000 + 11_000
    const newHint = { epoch: back.life.epoch, seq: 42, active: 1 }
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: after, hint: newHint })).toMatchObject({
      state: 'queued',
      position: 1,
    })
    // The lost session comes back through its renewal: still full. A's session ends: B gets in.
    expect(await h.store.renew({ room, visitor: vid(7), sessionMs: l.sessionMs, now: after + 1 })).toBeDefined()
    expect((await h.store.stats(room, after + 1)).active).toBe(2)
    await h.store.endSession(room, vid(0), after + 2)
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: after + 3, hint: newHint })).toMatchObject({
      state: 'admitted',
    })
  })

  it('a reservation nobody comes back for lapses after a session length', async () => {
    const h = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1, refreshSeconds: 5, sessionMs: 60_000 })
    await h.store.poll({ room, visitor: vid(0), limits: l, now: T0 })
    const b = await h.store.poll({ room, visitor: vid(1), limits: l, now: T0 + 10 })
    const seen = await h.store.watch(room, T0)
    await h.forget()
    const hint = { epoch: seen.life?.epoch as number, active: seen.active }
    const t1 = T0 + 1000
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: t1, hint })).toMatchObject({
      state: 'recovering',
    })
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: t1 + 59_999, hint })).toMatchObject({
      state: 'queued',
    })
    expect(await h.store.poll({ room, visitor: vid(1), arrival: b.arrival, limits: l, now: t1 + 60_000, hint })).toMatchObject({
      state: 'admitted',
    })
  })
}

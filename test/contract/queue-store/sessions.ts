// The QueueStore contract (test/contract/queue-store.ts), one topic: redeemed codes and lanes, and sessions an admin or the origin ended.
import { expect, it } from 'vitest'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function sessionsContract(makeHarness: () => Promise<StoreHarness>): void {
  it('a redeemed code puts the visitor before every public arrival, in the order of redemption, within the room’s cap and rate', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const paused = limits({ mode: 'paused' })
    // A lane's arrivals lie years before now (core/access.ts: the redemption time less 2^48 µs).
    const lane = (at: number) => at * 1000 - 2 ** 48
    // The room's first poll brings a lane arrival: not evidence that the store forgot the room.
    const first = await store.poll({ room, visitor: vid(0), lane: lane(T0), limits: paused, now: T0 })
    expect(first).toMatchObject({ state: 'paused', position: 1, arrival: lane(T0) })
    for (let i = 1; i <= 4; i++) await store.poll({ room, visitor: vid(i), limits: paused, now: T0 + i })
    // A visitor already in line (vid 3) redeems a code: they move ahead of every public place.
    expect(await store.poll({ room, visitor: vid(3), lane: lane(T0 + 10), limits: paused, now: T0 + 10 })).toMatchObject({
      position: 2,
      waiting: 5,
      arrival: lane(T0 + 10),
    })
    // A later lane arrival never moves a place back.
    expect(await store.poll({ room, visitor: vid(0), lane: lane(T0 + 20), limits: paused, now: T0 + 20 })).toMatchObject({
      position: 1,
      arrival: lane(T0),
    })
    // Admission at the room's rate (one a second here) takes the lane first, in its order, then the public line.
    const l = limits({ totalActiveUsers: 3, newUsersPerMinute: 60 })
    const order: number[] = []
    for (let t = 1; t <= 6; t++) {
      for (let i = 0; i <= 4; i++) {
        if (order.includes(i)) continue
        const r = await store.poll({ room, visitor: vid(i), limits: l, now: T0 + 1000 * t })
        if (r.state === 'admitted') order.push(i)
      }
    }
    expect(order).toEqual([0, 3, 1])
    expect((await store.stats(room, T0 + 6000)).active).toBe(3)
  })

  it('a lane arrival is not taken once an admission used the place up, and comes back from the token after a loss', async () => {
    const h = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1, sessionMs: 10_000 })
    const lane = T0 * 1000 - 2 ** 48
    const admitted = await h.store.poll({ room, visitor: vid(0), lane, limits: l, now: T0 })
    expect(admitted).toMatchObject({ state: 'admitted', arrival: lane })
    // The same redemption replayed after the admission gives no place before the line.
    await h.store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1 })
    const again = await h.store.poll({ room, visitor: vid(0), lane, limits: { ...l, mode: 'paused' }, now: T0 + 20_000 })
    expect(again).toMatchObject({ state: 'paused', position: 2 })
    // A lane place is restored from the queue token's arrival like any other, still before the public line.
    const r2 = newRoom()
    const paused = limits({ mode: 'paused' })
    await h.store.poll({ room: r2, visitor: vid(5), limits: paused, now: T0 })
    const placed = await h.store.poll({ room: r2, visitor: vid(6), lane, limits: paused, now: T0 + 5 })
    await h.forget()
    await h.store.poll({ room: r2, visitor: vid(5), arrival: T0 * 1000, limits: paused, now: T0 + 100 })
    expect(await h.store.poll({ room: r2, visitor: vid(6), arrival: placed.arrival, limits: paused, now: T0 + 200 })).toMatchObject({
      position: 1,
      arrival: lane,
    })
  })

  it('a visitor whose session an admin ended gets no place until an admin lets them in again, then joins at the back', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1 })
    const h = await store.poll({ room, visitor: vid(0), limits: l, now: T0 })
    expect(h).toMatchObject({ state: 'admitted' })
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1 })).toMatchObject({ state: 'queued', position: 1 })
    expect(await store.endSession(room, vid(0), T0 + 1000)).toBe(true)
    // H comes back with the old queue token: no place, and L1 stays first (and is now admitted).
    const ended = await store.poll({ room, visitor: vid(0), arrival: h.arrival, limits: l, now: T0 + 2000 })
    expect(ended).toMatchObject({ state: 'ended' })
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2001 })).toMatchObject({ state: 'admitted' })
    expect(await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 2002 })).toMatchObject({ state: 'queued', position: 1 })
    // Still out an hour later, whatever token they bring.
    const later = T0 + 3600_000
    expect(await store.poll({ room, visitor: vid(0), arrival: h.arrival, limits: { ...l, mode: 'paused' }, now: later })).toMatchObject({
      state: 'ended',
    })
    expect(await store.renew({ room, visitor: vid(0), sessionMs: l.sessionMs, now: later })).toBeUndefined()
    // Every edge reads the ended sessions since its last look.
    expect((await store.watch(room, T0)).ended).toEqual([{ visitor: vid(0), at: T0 + 1000 }])
    expect((await store.watch(room, T0 + 1001)).ended).toEqual([])
    expect(await store.allowAgain(room, vid(0))).toBe(true)
    expect(await store.allowAgain(room, vid(0))).toBe(false)
    expect((await store.watch(room, T0)).ended).toEqual([])
    // Let in again, H joins behind whoever is waiting now (the edge re-signs an ended visitor's token
    // with the time of that answer; the one from before the admission lapsed long ago).
    await store.poll({ room, visitor: vid(3), limits: { ...l, mode: 'paused' }, now: later + 1 })
    const again = await store.poll({
      room,
      visitor: vid(0),
      arrival: (later + 2) * 1000,
      limits: { ...l, mode: 'paused' },
      now: later + 2,
    })
    expect(again).toMatchObject({ state: 'paused', position: 2, waiting: 2 })
  })

  it('a session the origin ended frees its slot at once; the visitor is not kept out, and the token from before cannot renew', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1 })
    const keepMs = l.sessionMs + 60_000
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 })).toMatchObject({ state: 'admitted' })
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1 })).toMatchObject({ state: 'queued', position: 1 })
    expect(await store.finishSession({ room, visitor: vid(0), keepMs, now: T0 + 1000 })).toEqual({ active: true, at: T0 + 1000 })
    expect(await store.finishSession({ room, visitor: vid(0), keepMs, now: T0 + 1000 })).toEqual({ active: false, at: T0 + 1000 })
    // A renewal with the token from before is refused, not restored as a session the store forgot.
    expect(await store.renew({ room, visitor: vid(0), sessionMs: l.sessionMs, now: T0 + 1500 })).toBeUndefined()
    // The slot is free at once: the next in line is admitted on their next poll.
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 2000 })).toMatchObject({ state: 'admitted' })
    // Every edge reads the end with the ones an admin made, in one list by time (then visitor).
    await store.endSession(room, vid(7), T0 + 1000)
    expect((await store.watch(room, T0)).ended).toEqual([
      { visitor: vid(0), at: T0 + 1000 },
      { visitor: vid(7), at: T0 + 1000 },
    ])
    expect((await store.watch(room, T0 + 1001)).ended).toEqual([])
    expect((await store.watch(room, T0, 1)).ended).toEqual([{ visitor: vid(0), at: T0 + 1000 }])
    // Not kept out: the visitor joins at the back, behind whoever is waiting now.
    await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 2500 })
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 3000 })).toMatchObject({
      state: 'queued',
      position: 2,
      waiting: 2,
    })
    // Admitted again, the visitor's new session renews as any other.
    await store.finishSession({ room, visitor: vid(1), keepMs, now: T0 + 4000 })
    expect(await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 4001 })).toMatchObject({ state: 'admitted' })
    await store.finishSession({ room, visitor: vid(2), keepMs, now: T0 + 5000 })
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 5001 })).toMatchObject({ state: 'admitted' })
    expect(await store.renew({ room, visitor: vid(0), sessionMs: l.sessionMs, now: T0 + 6000 })).toEqual({
      sessionExpires: T0 + 6000 + l.sessionMs,
      now: T0 + 6000,
    })
    // Once no token from before can be valid, the end is forgotten (by the next one).
    await store.finishSession({ room, visitor: vid(3), keepMs, now: T0 + 5000 + keepMs + 1 })
    expect((await store.watch(room, T0 + 1001)).ended).toEqual([{ visitor: vid(3), at: T0 + 5000 + keepMs + 1 }])
  })
}

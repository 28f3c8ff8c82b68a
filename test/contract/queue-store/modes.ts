// The QueueStore contract (test/contract/queue-store.ts), one topic: paused and passthrough, renewing and ending sessions, history samples, stats and ping.
import { expect, it } from 'vitest'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function modesContract(makeHarness: () => Promise<StoreHarness>): void {
  it('paused admits nobody and keeps the line; passthrough admits everyone', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const paused = limits({ mode: 'paused' })
    for (let i = 0; i < 3; i++) expect((await store.poll({ room, visitor: vid(i), limits: paused, now: T0 + i })).state).toBe('paused')
    const pass = limits({ mode: 'passthrough', totalActiveUsers: 1, newUsersPerMinute: 1 })
    for (let i = 3; i < 6; i++) expect((await store.poll({ room, visitor: vid(i), limits: pass, now: T0 + 100 })).state).toBe('admitted')
    const back = await store.poll({ room, visitor: vid(1), limits: paused, now: T0 + 200 })
    expect(back).toMatchObject({ state: 'paused', position: 2, waiting: 3 })
  })

  it('renews a live session, refuses one an admin ended, and restores one the store forgot', async () => {
    const h = await makeHarness()
    const room = newRoom()
    const l = limits({ sessionMs: 60_000 })
    await h.store.poll({ room, visitor: vid(1), limits: l, now: T0 })
    await h.store.poll({ room, visitor: vid(2), limits: l, now: T0 })
    expect(await h.store.renew({ room, visitor: vid(1), sessionMs: 60_000, now: T0 + 50_000 })).toEqual({
      sessionExpires: T0 + 110_000,
      now: T0 + 50_000,
    })
    expect(await h.store.endSession(room, vid(2), T0 + 1)).toBe(true)
    expect(await h.store.endSession(room, vid(9), T0 + 1)).toBe(false)
    expect(await h.store.renew({ room, visitor: vid(2), sessionMs: 60_000, now: T0 + 2 })).toBeUndefined()
    expect(await h.store.renew({ room, visitor: vid(2), sessionMs: 60_000, now: T0 + 30_000 })).toBeUndefined()
    expect((await h.store.stats(room, T0 + 50_000)).active).toBe(1)
    // Redis forgets: a visitor with a valid admission token is not thrown out at renewal.
    await h.forget()
    expect(await h.store.renew({ room, visitor: vid(1), sessionMs: 60_000, now: T0 + 60_000 })).toEqual({
      sessionExpires: T0 + 120_000,
      now: T0 + 60_000,
    })
    expect((await h.store.stats(room, T0 + 60_000)).active).toBe(1)
    expect((await h.store.stats(room, T0 + 120_000)).active).toBe(0)
  })

  it('ends all sessions at once, and counts the last minute of abandonment', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 3, abandonAfterMs: 30_000 })
    for (let i = 0; i < 6; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + i })
    expect(await store.endAllSessions(room, T0 + 10)).toBe(3)
    expect(await store.renew({ room, visitor: vid(0), sessionMs: l.sessionMs, now: T0 + 20 })).toBeUndefined()
    // Visitors 3-5 wait; 3 and 4 stop polling and leave, seen by the stats for about a minute.
    await store.poll({ room, visitor: vid(5), limits: { ...l, mode: 'paused' }, now: T0 + 25_000 })
    await store.poll({ room, visitor: vid(5), limits: { ...l, mode: 'paused' }, now: T0 + 31_000 })
    expect(await store.stats(room, T0 + 31_000)).toMatchObject({ waiting: 1, abandoned: 2, abandonedLastMinute: 2 })
    expect((await store.stats(room, T0 + 100_000)).abandonedLastMinute).toBe(0)
  })

  it('keeps one history sample per 10-s bucket, for 30 minutes', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    await store.poll({ room, visitor: vid(1), limits: limits({ mode: 'paused' }), now: T0 })
    await store.recordSample(room, T0 + 1)
    await store.recordSample(room, T0 + 2) // same bucket: ignored
    await store.recordSample(room, T0 + 10_001)
    const samples = await store.history(room)
    expect(samples.map((x) => x.t)).toEqual([T0 + 1, T0 + 10_001])
    expect(samples[0]).toMatchObject({ waiting: 1, active: 0 })
    await store.recordSample(room, T0 + 31 * 60_000)
    expect((await store.history(room)).map((x) => x.t)).toEqual([T0 + 31 * 60_000])
  })

  it('reports stats and answers ping', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 2 })
    for (let i = 0; i < 5; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 })
    expect(await store.stats(room, T0)).toMatchObject({ waiting: 3, active: 2, admittedLastMinute: 2, abandoned: 0 })
    expect(await store.stats(room, T0 + 60_000)).toMatchObject({ admittedLastMinute: 0 })
    expect(await store.ping()).toBe(true)
  })
}

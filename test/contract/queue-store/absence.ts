// The QueueStore contract (test/contract/queue-store.ts), one topic: absent visitors and outages: the silent dropped, admissions waiting to be collected, places kept.
import { expect, it } from 'vitest'
import type { PollResult } from '../../../src/ports/queue-store.js'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function absenceContract(makeHarness: () => Promise<StoreHarness>): void {
  it('drops visitors who stop polling, and gives back an admission nobody came for', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const abandonAfterMs = 30_000
    const paused = limits({ mode: 'paused', abandonAfterMs })
    for (let i = 0; i < 4; i++) await store.poll({ room, visitor: vid(i), limits: paused, now: T0 + i })
    // Visitor 0 goes silent; the others keep polling every 10 s.
    for (let t = 10_000; t < abandonAfterMs; t += 10_000) {
      for (let i = 1; i < 4; i++) await store.poll({ room, visitor: vid(i), limits: paused, now: T0 + t })
    }
    expect(await store.poll({ room, visitor: vid(1), limits: paused, now: T0 + abandonAfterMs - 1 })).toMatchObject({ position: 2 })
    expect(await store.poll({ room, visitor: vid(1), limits: paused, now: T0 + abandonAfterMs + 1 })).toMatchObject({
      position: 1,
      waiting: 3,
    })
    expect((await store.stats(room, T0 + abandonAfterMs + 1)).abandoned).toBe(1)

    // Room opens with one slot: visitor 1 is at the head but is not here; visitor 2 polls.
    // (refreshSeconds 2: the grant's collect window, 1.5 refreshes, ends before abandonAfter does.)
    const open = limits({ abandonAfterMs, totalActiveUsers: 1, refreshSeconds: 2 })
    const lastPollOf1 = T0 + abandonAfterMs + 1
    const r2 = await store.poll({ room, visitor: vid(2), limits: open, now: lastPollOf1 + 5000 })
    expect(r2).toMatchObject({ state: 'queued', position: 1 })
    expect((await store.stats(room, lastPollOf1 + 5000)).active).toBe(1) // held for visitor 1
    // Visitor 1 never returns: the slot comes back abandonAfter after their last poll, and visitor 2 gets it.
    expect(await store.poll({ room, visitor: vid(2), limits: open, now: lastPollOf1 + abandonAfterMs - 1 })).toMatchObject({
      state: 'queued',
    })
    expect(await store.poll({ room, visitor: vid(2), limits: open, now: lastPollOf1 + abandonAfterMs })).toMatchObject({
      state: 'admitted',
    })
  })

  it('a visitor admitted while away is let in on their next poll', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 5 })
    await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
    // Somebody else's poll admits visitor 0 (and themselves).
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1000 })).toMatchObject({ state: 'admitted' })
    const back = await store.poll({ room, visitor: vid(0), arrival: T0 * 1000, limits: l, now: T0 + 2000 })
    expect(back).toMatchObject({ state: 'admitted', arrival: T0 * 1000, sessionExpires: T0 + 2000 + l.sessionMs })
    expect((await store.stats(room, T0 + 2000)).active).toBe(2)
  })

  it('an admission that lapsed while the store could not see the visitor poll gives them their place back', async () => {
    // A failover: V is granted while away, then the store is out while V keeps polling (each poll
    // answered busy, V's token re-signed by the edge), so the grant lapses uncollected. V's token,
    // signed after the grant, brings V back to their place: the head of the line, not the back.
    const { store } = await makeHarness()
    const room = newRoom()
    const abandonAfterMs = 6000
    const l = limits({ totalActiveUsers: 1, abandonAfterMs, refreshSeconds: 2 })
    const v = await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
    for (let i = 1; i <= 3; i++) await store.poll({ room, visitor: vid(i), limits: { ...l, mode: 'paused' }, now: T0 + i })
    // W's poll grants V's slot (V is away); V's last poll was at T0.
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 1000 })).toMatchObject({ state: 'queued', position: 1 })
    // The store is out from T0 + 1500 to T0 + 7000; V polled at T0 + 2000 and T0 + 4000 (busy: token re-signed).
    const busyToken = { arrival: v.arrival, tokenExpires: T0 + 4000 + abandonAfterMs }
    // Back at T0 + 7000: the grant lapsed at T0 + 6000 (abandonAfter after V's last poll the store saw).
    expect(await store.poll({ room, visitor: vid(2), limits: { ...l, mode: 'paused' }, now: T0 + 7000 })).toMatchObject({
      state: 'paused',
    })
    const back = await store.poll({ room, visitor: vid(0), ...busyToken, limits: { ...l, mode: 'paused' }, now: T0 + 7001 })
    expect(back).toMatchObject({ state: 'paused', arrival: v.arrival, position: 1 })
    // And V is the one let in next. (A token signed before the grant does not bring anyone back: the next test.)
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 8000 })).toMatchObject({ state: 'admitted' })
    expect(await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 8001 })).toMatchObject({ state: 'queued', position: 1 })
  })

  it('an absent visitor granted late in their abandonAfter still has 1.5 refreshes to collect the admission', async () => {
    // The store may have missed their last polls (an outage answered busy): they poll again within that.
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1, abandonAfterMs: 6000, refreshSeconds: 2 })
    await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
    // Granted by another visitor's poll at T0 + 5000, a second before V's abandonAfter ends.
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 5000 })).toMatchObject({ state: 'queued' })
    // V comes 2.9 s after the grant, after abandonAfter (T0 + 6000) but within 1.5 refreshes (3 s).
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 7900 })).toMatchObject({ state: 'admitted' })
    expect(await store.poll({ room, visitor: vid(1), limits: l, now: T0 + 7901 })).toMatchObject({ state: 'queued' })
  })

  it('after an outage, visitors past their abandonAfter whom the sweep has not reached still keep their places', async () => {
    // Many visitors look stale at once after an outage, more than one poll's sweep checks
    // (MAX_SWEEP buckets), so some are still at the head when the first poll back grants: the one
    // granted collects on their next poll, the others keep their places in order.
    const { store } = await makeHarness()
    const room = newRoom()
    const abandonAfterMs = 6000
    const l = limits({ totalActiveUsers: 1, abandonAfterMs, refreshSeconds: 2 })
    const paused = { ...l, mode: 'paused' as const }
    const arrivals: number[] = []
    for (let i = 0; i < 40; i++) arrivals.push((await store.poll({ room, visitor: vid(i), limits: paused, now: T0 + i })).arrival)
    await store.poll({ room, visitor: vid(99), limits: l, now: T0 + 7000 })
    const answers: PollResult[] = []
    for (let i = 0; i < 40; i++) {
      answers.push(
        await store.poll({
          room,
          visitor: vid(i),
          arrival: arrivals[i],
          tokenExpires: T0 + i + abandonAfterMs,
          limits: paused,
          now: T0 + 7001,
        }),
      )
    }
    expect(answers.filter((a) => a.state === 'admitted')).toHaveLength(1)
    for (const [i, a] of answers.entries()) expect(a.arrival, vid(i)).toBe(arrivals[i])
    const positions = answers.flatMap((a) => (a.state === 'paused' ? [a.position] : []))
    expect(positions).toEqual([...positions].sort((x, y) => x - y))
  })

  it('after an edge reports an outage, the line is held for 1.5 refreshes: nobody dropped as silent, nobody admitted', async () => {
    // The store was away for longer than abandonAfter: V and W kept polling (answered busy), but the
    // store last saw them before it. The first poll back comes with the edge's outage mark.
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 1000, abandonAfterMs: 6000, refreshSeconds: 2 })
    const paused = { ...l, mode: 'paused' as const }
    const v = await store.poll({ room, visitor: vid(0), limits: paused, now: T0 })
    await store.poll({ room, visitor: vid(1), limits: paused, now: T0 + 1 })
    const back = T0 + 8000
    const late = await store.poll({ room, visitor: vid(2), limits: l, now: back, hint: { active: 0, outage: back - 500 } })
    // Held: W (vid 2, a later arrival) is not let in ahead of V, and V is not dropped.
    expect(late).toMatchObject({ state: 'queued', position: 3 })
    const vBack = await store.poll({
      room,
      visitor: vid(0),
      arrival: v.arrival,
      limits: l,
      now: back + 2000,
      hint: { active: 0, outage: back - 500 },
    })
    expect(vBack).toMatchObject({ state: 'queued', position: 1, arrival: v.arrival })
    // 1.5 refreshes after the store heard of the outage, the line moves again, in order: V first.
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: back + 3001 })).toMatchObject({ state: 'admitted' })
    // ...and the one who did not come back (vid 1) is dropped as silent.
    expect((await store.stats(room, back + 3001)).abandoned).toBe(1)
  })

  it('an admission granted to a visitor who could not collect it during an outage still waits for them', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    const l = limits({ totalActiveUsers: 5, abandonAfterMs: 6000, refreshSeconds: 2 })
    await store.poll({ room, visitor: vid(0), limits: { ...l, mode: 'paused' }, now: T0 })
    // W's poll grants V (away) a slot, to collect by T0 + 6000 (abandonAfter after V's last poll).
    await store.poll({ room, visitor: vid(1), limits: { ...l, mode: 'paused' }, now: T0 + 1 })
    await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 500 })
    // The store is away from T0 + 1000 to T0 + 5900; V's polls meanwhile were answered busy. The
    // first poll back brings the outage: V's admission lasts 1.5 refreshes from then.
    await store.poll({ room, visitor: vid(2), limits: l, now: T0 + 5900, hint: { active: 0, outage: T0 + 5000 } })
    // Without that, it would have run out at T0 + 6000, and V would start again at the back.
    expect((await store.stats(room, T0 + 8700)).active).toBe(3)
    expect(await store.poll({ room, visitor: vid(0), limits: l, now: T0 + 8800 })).toMatchObject({ state: 'admitted' })
  })

  it('an admission uses up the place: an old queue token no longer brings the visitor back to it', async () => {
    const { store } = await makeHarness()
    const room = newRoom()
    // abandonAfter longer than the session, as the config allows.
    const l = limits({ totalActiveUsers: 1, sessionMs: 10_000, abandonAfterMs: 60_000 })
    const h = await store.poll({ room, visitor: vid(0), limits: l, now: T0 })
    expect(h).toMatchObject({ state: 'admitted' })
    for (let i = 1; i <= 3; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + i })
    // The session runs out; H polls again with the queue token from before the admission.
    const back = await store.poll({ room, visitor: vid(0), arrival: h.arrival, limits: { ...l, mode: 'paused' }, now: T0 + 20_000 })
    expect(back).toMatchObject({ state: 'paused', position: 4, waiting: 4 })
    expect(back.arrival).toBeGreaterThan((T0 + 3) * 1000)
    // Once the token it could have come from has lapsed, the mark goes too.
    expect(
      await store.poll({ room, visitor: vid(9), arrival: T0 * 1000, limits: { ...l, mode: 'paused' }, now: T0 + 70_000 }),
    ).toMatchObject({
      position: 1,
    })
  })
}

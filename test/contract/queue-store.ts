// The QueueStore contract: one suite, run against every implementation (memory, Redis).
// Time is always passed in explicitly, so rates, expiries and FIFO are checked without sleeping.
import { describe, expect, it } from 'vitest'
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../../src/core/settings.js'
import type { PollResult, QueueStore } from '../../src/ports/queue-store.js'
import { latenessContract } from './queue-store-lateness.js'

export interface StoreHarness {
  store: QueueStore
  /** Makes the store forget everything, as a Redis flush or failover would. */
  forget(): Promise<void>
}

let roomSeq = 0
const newRoom = () => `c${Date.now().toString(36)}-${roomSeq++}`
const T0 = 1_800_000_000_000

const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
  ...ADMISSION_DEFAULTS,
  mode: 'fifo',
  totalActiveUsers: 1000,
  newUsersPerMinute: 6000,
  abandonAfterMs: 60_000,
  sessionMs: 600_000,
  ...over,
})

const vid = (i: number) => `v${String(i).padStart(15, '0')}`

function shuffle<T>(items: T[]): T[] {
  const a = [...items]
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[a[i], a[j]] = [a[j] as T, a[i] as T]
  }
  return a
}

export function queueStoreContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`QueueStore contract: ${name}`, () => {
    it('places new visitors at the back, in order of arrival', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const closed = limits({ mode: 'paused' })
      const results: PollResult[] = []
      for (let i = 0; i < 5; i++) results.push(await store.poll({ room, visitor: vid(i), limits: closed, now: T0 + i }))
      expect(results.map((r) => (r.state === 'paused' ? r.position : -1))).toEqual([1, 2, 3, 4, 5])
      expect(results.map((r) => r.arrival)).toEqual([0, 1, 2, 3, 4].map((i) => (T0 + i) * 1000))
      const again = await store.poll({ room, visitor: vid(2), limits: closed, now: T0 + 100 })
      expect(again).toMatchObject({ state: 'paused', position: 3, waiting: 5, arrival: (T0 + 2) * 1000 })
    })

    it('never loses, duplicates or improves a place when the same visitor polls again or from two tabs', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'paused' })
      for (let i = 0; i < 10; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + i })
      // Two tabs of visitor 5 poll at once, and claim an earlier arrival than they had.
      const [a, b] = await Promise.all([
        store.poll({ room, visitor: vid(5), arrival: (T0 - 1000) * 1000, limits: l, now: T0 + 50 }),
        store.poll({ room, visitor: vid(5), arrival: (T0 + 5) * 1000, limits: l, now: T0 + 50 }),
      ])
      expect(a).toMatchObject({ position: 6, waiting: 10, arrival: (T0 + 5) * 1000 })
      expect(b).toMatchObject({ position: 6, waiting: 10, arrival: (T0 + 5) * 1000 })
    })

    it('a new visitor polling from two tabs at once gets one place, in line or admitted', async () => {
      const { store } = await makeHarness()
      for (const mode of ['paused', 'passthrough'] as const) {
        const room = newRoom()
        const l = limits({ mode })
        for (let i = 0; i < 3; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + i })
        // One turn of the event loop: a batching store answers both in one call.
        const [a, b] = await Promise.all([
          store.poll({ room, visitor: vid(9), limits: l, now: T0 + 50 }),
          store.poll({ room, visitor: vid(9), limits: l, now: T0 + 50 }),
        ])
        expect(b.arrival).toBe(a.arrival)
        if (mode === 'paused') {
          expect(a).toMatchObject({ state: 'paused', position: 4, waiting: 4 })
          expect(b).toMatchObject({ state: 'paused', position: 4, waiting: 4 })
        } else {
          expect(a.state).toBe('admitted')
          expect(b.state).toBe('admitted')
        }
        const next = await store.poll({ room, visitor: vid(10), limits: l, now: T0 + 60 })
        if (mode === 'paused') expect(next).toMatchObject({ position: 5, waiting: 5 })
      }
    })

    it('visitors who join in the same instant keep the order they joined in', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'paused' })
      // Ids sort in the opposite order of joining, so a tie broken by id would show.
      const ids = [...Array(10).keys()].map((i) => vid(100 - i))
      for (const id of ids) await store.poll({ room, visitor: id, limits: l, now: T0 })
      for (const [i, id] of ids.entries())
        expect(await store.poll({ room, visitor: id, limits: l, now: T0 + 1 })).toMatchObject({ position: i + 1 })
    })

    it('restores a forgotten visitor to their original place from the arrival in their token', async () => {
      const h = await makeHarness()
      const room = newRoom()
      const l = limits({ mode: 'paused' })
      const arrivals: number[] = []
      for (let i = 0; i < 20; i++) {
        const r = await h.store.poll({ room, visitor: vid(i), limits: l, now: T0 + i * 10 })
        arrivals.push(r.arrival)
      }
      await h.forget()
      // They come back in a random order; each brings the arrival from their signed token.
      for (const i of shuffle([...Array(20).keys()])) {
        await h.store.poll({ room, visitor: vid(i), arrival: arrivals[i], limits: l, now: T0 + 5000 })
      }
      for (let i = 0; i < 20; i++) {
        const r = await h.store.poll({ room, visitor: vid(i), limits: l, now: T0 + 6000 })
        expect(r).toMatchObject({ position: i + 1, waiting: 20 })
      }
    })

    it('a token cannot claim an arrival in the future', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const r = await store.poll({ room, visitor: vid(1), arrival: (T0 + 10_000_000) * 1000, limits: limits({ mode: 'paused' }), now: T0 })
      expect(r.arrival).toBe(T0 * 1000)
    })

    it('never exceeds totalActiveUsers, even under concurrent polls', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ totalActiveUsers: 7, newUsersPerMinute: 100_000 })
      const results = await Promise.all(
        [...Array(200).keys()].map((i) => store.poll({ room, visitor: vid(i), limits: l, now: T0 + (i % 3) })),
      )
      const admitted = results.filter((r) => r.state === 'admitted')
      expect(admitted.length).toBeLessThanOrEqual(7)
      for (let i = 0; i < 200; i++) await store.poll({ room, visitor: vid(i), limits: l, now: T0 + 10 })
      expect((await store.stats(room, T0 + 10)).active).toBe(7)
      // Sessions end: the next seven (in arrival order) get in, and still no more than seven.
      await Promise.all([...Array(200).keys()].map((i) => store.poll({ room, visitor: vid(i), limits: l, now: T0 + 10 + l.sessionMs })))
      const s = await store.stats(room, T0 + 10 + l.sessionMs)
      expect(s.active).toBe(7)
    })

    it('admits in strict arrival order, whatever order the polls come in', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      const l = limits({ totalActiveUsers: 100_000, newUsersPerMinute: 60 }) // 10 per 10 s
      const n = 60
      for (let i = 0; i < n; i++) await store.poll({ room, visitor: vid(i), limits: { ...l, mode: 'paused' }, now: T0 + i })
      const order: number[] = []
      const seen = new Set<number>()
      for (let t = 1; t <= 80; t++) {
        const now = T0 + 1000 + t * 1000
        const polls = shuffle([...Array(n).keys()].filter((i) => !seen.has(i)))
        const results = await Promise.all(polls.map((i) => store.poll({ room, visitor: vid(i), limits: l, now })))
        results.forEach((r, k) => {
          const i = polls[k] as number
          if (r.state === 'admitted' && !seen.has(i)) {
            seen.add(i)
            order.push(i)
          }
        })
        // Within one step, the admitted ones must be exactly the next in line.
        const sorted = [...order].sort((a, b) => a - b)
        expect(sorted).toEqual([...Array(order.length).keys()])
      }
      expect(order.length).toBe(n)
    })

    it.each([30, 600, 7])(
      'paces %i a minute: at most the per-second share plus one in any second, about the rate in any minute, and at least 95%% of it',
      async (perMinute) => {
        const { store } = await makeHarness()
        const room = newRoom()
        const l = limits({ totalActiveUsers: 100_000, newUsersPerMinute: perMinute, abandonAfterMs: 600_000 })
        const n = Math.ceil((perMinute * 5) / 60) + 50
        for (let i = 0; i < n; i++) await store.poll({ room, visitor: vid(i), limits: { ...l, mode: 'paused' }, now: T0 })
        // Admission time is when the store grants the slot (a grant to an absent visitor still counts).
        const admittedAt: number[] = []
        const waiting = new Set([...Array(n).keys()])
        let lineLength = n
        const duration = 300
        // Polls come in bursts from many visitors, at uneven times: as a line of a few hundred polls,
        // at least once per emission interval (60 s / rate), and at most a second apart.
        const interval = Math.min(1000, 60_000 / perMinute)
        let now = T0 + 1
        while (now < T0 + 1 + duration * 1000 && waiting.size > 0) {
          const polls = shuffle([...waiting]).slice(0, 40)
          const results = await Promise.all(polls.map((i) => store.poll({ room, visitor: vid(i), limits: l, now })))
          results.forEach((r, k) => {
            if (r.state === 'admitted') waiting.delete(polls[k] as number)
          })
          const stats = await store.stats(room, now)
          for (let g = 0; g < lineLength - stats.waiting; g++) admittedAt.push(now)
          lineLength = stats.waiting
          now += Math.max(1, Math.round(interval * (0.2 + ((now * 7919) % 801) / 1000)))
        }
        const windowMax = (ms: number) => {
          let max = 0
          for (const end of admittedAt) max = Math.max(max, admittedAt.filter((t) => t > end - ms && t <= end).length)
          return max
        }
        const perSecond = Math.floor(perMinute / 60) + 1
        expect(windowMax(1000)).toBeLessThanOrEqual(perSecond)
        // A room nobody polled catches up on one second of its pace (CATCH_UP_US): a minute holds at most that more.
        expect(windowMax(60_000)).toBeLessThanOrEqual(perMinute + perSecond)
        const span = Math.min(duration * 1000, (admittedAt.at(-1) ?? T0) - T0)
        expect(admittedAt.length).toBeGreaterThanOrEqual(Math.floor((0.95 * perMinute * span) / 60_000))
      },
    )

    it('keeps the rate when polls reach the store unevenly (a stalled edge, a relay): what the per-second cap trims stays due', async () => {
      const { store } = await makeHarness()
      const room = newRoom()
      // 600 a minute: 10 a second, at most 11 in any second; a line longer than a minute's admissions.
      const perMinute = 600
      const l = limits({ totalActiveUsers: 100_000, newUsersPerMinute: perMinute, abandonAfterMs: 600_000 })
      const n = perMinute + 100
      for (let i = 0; i < n; i++) await store.poll({ room, visitor: vid(i), limits: { ...l, mode: 'paused' }, now: T0 })
      // One poll at a time, from the back of the line, 20 to 450 ms apart. When the pace dropped what
      // the cap trimmed, this admitted 0.91 of the rate.
      const admittedAt: number[] = []
      let lineLength = n
      let now = T0 + 1
      for (let k = 0; now < T0 + 60_000; k++) {
        await store.poll({ room, visitor: vid(n - 1), limits: l, now })
        const stats = await store.stats(room, now)
        for (let g = 0; g < lineLength - stats.waiting; g++) admittedAt.push(now)
        lineLength = stats.waiting
        now += 20 + ((k * 7919) % 431)
      }
      const inSecond = (end: number) => admittedAt.filter((t) => t > end - 1000 && t <= end).length
      expect(Math.max(...admittedAt.map(inSecond))).toBeLessThanOrEqual(Math.floor(perMinute / 60) + 1)
      const span = (admittedAt.at(-1) as number) - T0
      expect(admittedAt.length).toBeGreaterThanOrEqual(Math.floor((0.95 * perMinute * span) / 60_000))
    })

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

    latenessContract(makeHarness)
  })
}

// The QueueStore contract (test/contract/queue-store.ts), one topic: admission: the active cap, strict arrival order, the rate in any second and any minute.
import { expect, it } from 'vitest'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, shuffle, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function paceContract(makeHarness: () => Promise<StoreHarness>): void {
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
}

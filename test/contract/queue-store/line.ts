// The QueueStore contract (test/contract/queue-store.ts), one topic: places in the line: arrival order, two tabs at once, ties, restoring a place from the token.
import { expect, it } from 'vitest'
import type { PollResult } from '../../../src/ports/queue-store.js'
import type { StoreHarness } from '../queue-store.js'
import { limits, newRoom, shuffle, T0, vid } from './common.js'

/** Run against each implementation by queueStoreContract, inside its describe. */
export function lineContract(makeHarness: () => Promise<StoreHarness>): void {
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
}

// Two edge instances over one real Redis, one clock: limits hold exactly, admission is work-conserving
// and strictly FIFO, and a settings change reaches every edge within a second.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { luaFromFiles } from '../src/adapters/redis/lua-files.js'
import { RedisSettingsStore } from '../src/adapters/redis/settings-store.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { parseRoomSettings } from '../src/core/settings.js'
import type { Edge } from '../src/entry/build.js'
import { ManualClock } from '../src/ports/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
let origin: OriginServer
const built: Edge[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of built) await e.close()
  await origin.close()
})

async function twoEdges(room: Record<string, unknown>) {
  const clock = new ManualClock(T0)
  const signingKeys = [await generateSigningJwk('shared')]
  const make = () => testEdge({ rooms: [room], originUrl: origin.url, redisUrl: inject('redisUrl'), clock, signingKeys })
  const edges = [await make(), await make()]
  built.push(...edges)
  return { clock, edges }
}

describe('two edges, one Redis', () => {
  it('admits exactly what the limits allow, in arrival order, across edges', async () => {
    const id = `multi-${Date.now().toString(36)}`
    const cap = 20
    const perMinute = 48 // 8 per 10 s
    const sessionSeconds = 30
    const { clock, edges } = await twoEdges({
      id,
      paths: ['/'],
      totalActiveUsers: cap,
      newUsersPerMinute: perMinute,
      sessionDurationSeconds: sessionSeconds,
      refreshSeconds: 5,
    })
    const pick = () => (edges[Math.floor(Math.random() * edges.length)] ?? edges[0]!).app
    const store = edges[0]!.deps.queue
    const n = 160
    const visitors = Array.from({ length: n }, () => new Visitor())
    const admittedAt = new Map<number, number>()
    const grants: number[] = []
    let capBound = 0
    let rateBound = 0
    // Arrivals 10 ms apart, through either edge; the first few get straight in.
    for (const [i, v] of visitors.entries()) {
      clock.advance(10)
      if ((await v.status(pick(), id)).state === 'admitted') {
        admittedAt.set(i, clock.now())
        grants.push(clock.now())
      }
    }
    expect(admittedAt.size).toBe(Math.ceil(perMinute / 6))
    const stayFor = 12_000
    for (let step = 0; step < 240; step++) {
      clock.advance(1000)
      const now = clock.now()
      const before = await store.stats(id, now)
      const c60 = grants.filter((t) => t > now - 60_000).length
      const c10 = grants.filter((t) => t > now - 10_000).length
      const rateBudget = Math.min(perMinute - c60, Math.ceil(perMinute / 6) - c10)
      const allowed = Math.max(0, Math.min(cap - before.active, rateBudget, before.waiting))
      if (before.waiting > 0 && cap - before.active < rateBudget) capBound++
      if (before.waiting > 0 && rateBudget < cap - before.active) rateBound++
      // Everybody still waiting polls at once, each through a random edge; admitted visitors browse
      // for a while and then leave without a word.
      await Promise.all(
        visitors.map(async (v, i) => {
          const since = admittedAt.get(i)
          if (since === undefined) {
            const s = await v.status(pick(), id)
            if (s.state === 'admitted') admittedAt.set(i, now)
          } else if (now - since < stayFor) {
            const res = await v.request(pick(), '/shop')
            expect(res.status).toBe(200)
          }
        }),
      )
      const after = await store.stats(id, now)
      const granted = before.waiting - after.waiting
      expect(granted, `step ${step}`).toBe(allowed)
      expect(after.active).toBeLessThanOrEqual(cap)
      for (let g = 0; g < granted; g++) grants.push(now)
      // FIFO: the admitted are always exactly the first k arrivals.
      const admitted = [...admittedAt.keys()].sort((a, b) => a - b)
      expect(admitted).toEqual([...Array(admitted.length).keys()])
      if (admittedAt.size === n) break
    }
    expect(admittedAt.size).toBe(n)
    // Both limits bound at some point, so the run exercised each of them.
    expect(capBound).toBeGreaterThan(0)
    expect(rateBound).toBeGreaterThan(0)
  })

  it('a settings change reaches the other edge within a second, with no restart', async () => {
    const id = `live-${Date.now().toString(36)}`
    const { clock, edges } = await twoEdges({ id, paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60 })
    const [a, b] = edges as [Edge, Edge]
    expect(b.deps.rooms.get(id)?.newUsersPerMinute).toBe(60)
    const changed = parseRoomSettings({ ...a.deps.rooms.get(id), newUsersPerMinute: 6, mode: 'paused' })
    expect(await new RedisSettingsStore(a.redis!, luaFromFiles()).replace(changed, 1)).toEqual({ ok: true, rev: 2 })
    clock.advance(999)
    b.deps.rooms.rooms()
    await b.deps.rooms.settled()
    expect(b.deps.rooms.get(id)?.mode).toBe('fifo')
    clock.advance(1)
    b.deps.rooms.rooms()
    await b.deps.rooms.settled()
    expect(b.deps.rooms.get(id)).toMatchObject({ newUsersPerMinute: 6, mode: 'paused' })
    expect(await new Visitor().status(b.app, id)).toMatchObject({ state: 'paused' })
  })

  it('a queue token from one edge holds the same place on the other', async () => {
    const id = `tok-${Date.now().toString(36)}`
    const { clock, edges } = await twoEdges({ id, paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60, mode: 'paused' })
    const v = new Visitor()
    await new Visitor().status(edges[0]!.app, id)
    expect(await v.status(edges[0]!.app, id)).toMatchObject({ position: 2 })
    clock.advance(1000)
    expect(await v.status(edges[1]!.app, id)).toMatchObject({ position: 2, waiting: 2 })
  })
})

// Two edge instances over one real Redis, one clock: two Node edges, and a Node edge beside a Worker
// edge in workerd. Limits hold exactly, admission is work-conserving and strictly FIFO across them,
// tokens of one are honoured by the other, and a settings change reaches every edge within a second.
import { createLocalJWKSet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { RedisSettingsStore } from '../src/adapters/redis/settings-store.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { parseRoomSettings } from '../src/core/settings.js'
import type { Edge } from '../src/entry/build.js'
import { runSteppedSale } from './support/admission-model.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type EdgeRuntime, nodeRuntime, sharedClock, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

let origin: OriginServer
const built: Edge[] = []
const pairs: TestEdge[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of built) await e.close()
  for (const e of pairs) await e.close()
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

/** Two edges of the given runtimes over one Redis database, with one clock and one set of secrets. */
async function pairOf(a: EdgeRuntime, b: EdgeRuntime, room: Record<string, unknown>, db: number) {
  const redisUrl = `${inject('redisUrl')}/${db}`
  const signingKeys = [await generateSigningJwk(`pair-${db}`)]
  const edges = [
    await a.start({ rooms: [room], originUrl: origin.url, redisUrl, signingKeys }),
    await b.start({ rooms: [room], originUrl: origin.url, redisUrl, signingKeys }),
  ]
  pairs.push(...edges)
  const clock = sharedClock(edges.map((e) => e.clock))
  await clock.set(T0)
  return { edges, clock }
}

const worker = workerRuntime(() => inject('redisUrl'))

describe('two edges, one Redis', () => {
  for (const [a, b, db] of [
    [nodeRuntime, nodeRuntime, 990],
    [nodeRuntime, worker, 991],
  ] as const) {
    it(`admits exactly what the limits allow, in arrival order, across a ${a.name} edge and a ${b.name} edge`, async () => {
      const id = 'multi'
      const cap = 12
      const perMinute = 30 // 5 per 10 s
      const { clock, edges } = await pairOf(
        a,
        b,
        { id, paths: ['/'], totalActiveUsers: cap, newUsersPerMinute: perMinute, sessionDurationSeconds: 30, refreshSeconds: 5 },
        db,
      )
      // Every request goes through either edge at random: one line, whichever edge a visitor reaches.
      const pick = () => (edges[Math.floor(Math.random() * edges.length)] ?? edges[0]!).app
      await runSteppedSale({
        room: id,
        totalActiveUsers: cap,
        newUsersPerMinute: perMinute,
        visitors: 80,
        clock,
        store: edges[0]!.queue,
        pick,
      })
    })
  }

  it("a Node edge and a Worker edge honour each other's tokens; admission verifies through either JWKS", async () => {
    const { edges, clock } = await pairOf(
      nodeRuntime,
      worker,
      { id: 'swap', paths: ['/swap'], totalActiveUsers: 1, newUsersPerMinute: 60 },
      992,
    )
    const [node, work] = edges as [TestEdge, TestEdge]
    const first = new Visitor()
    expect(await first.status(work.app, 'swap')).toMatchObject({ state: 'admitted' })
    const second = new Visitor()
    const third = new Visitor()
    expect(await second.status(work.app, 'swap')).toMatchObject({ position: 1 })
    expect(await third.status(node.app, 'swap')).toMatchObject({ position: 2 })
    // The Worker's queue token, shown to Node, and Node's, shown to the Worker: same places.
    expect(await second.status(node.app, 'swap')).toMatchObject({ position: 1, waiting: 2 })
    expect(await third.status(work.app, 'swap')).toMatchObject({ position: 2, waiting: 2 })
    // The Worker's admission cookie works on Node without a store call, and the token it forwards
    // verifies with Node's JWKS.
    const seen = (await (await first.request(node.app, '/swap/page')).json()) as { headers: Record<string, string> }
    const jwks = createLocalJWKSet((await (await node.app.request('http://shop.test/.well-known/jwks.json')).json()) as never)
    const { payload } = await jwtVerify(seen.headers['anteroom-admission'] as string, jwks, {
      algorithms: ['ES256'],
      currentDate: new Date(clock.now()),
    })
    expect(payload.room).toBe('swap')
  })

  it('a settings change reaches the other edge within a second, with no restart', async () => {
    const id = `live-${Date.now().toString(36)}`
    const { clock, edges } = await twoEdges({ id, paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60 })
    const [a, b] = edges as [Edge, Edge]
    expect(b.deps.rooms.get(id)?.newUsersPerMinute).toBe(60)
    const changed = parseRoomSettings({ ...a.deps.rooms.get(id), newUsersPerMinute: 6, mode: 'paused' })
    expect(await new RedisSettingsStore(a.redis!, luaScripts()).replace(changed, 1)).toEqual({ ok: true, rev: 2 })
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

// High availability over Redis Sentinel on real processes (issue #12 §1): two Node edges over a primary,
// a replica and three redis-sentinel. The failover tests that the Cluster shares run from
// test/contract/failover.ts (a primary killed mid-sale, and a lossy failover); here are also what only
// Sentinel has: a primary that hangs instead of dying, and a Worker edge whose StoreRelay follows the
// sentinels. ANTEROOM_HA_TRACE=1 prints a lossy sale step by step (test/support/ha-sale.ts).
import type { Redis } from 'ioredis'
import { afterEach, describe, expect, inject, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { type FailoverTopology, failoverMidSale, lossyFailoverSuite } from './contract/failover.js'
import { type RoomPlan, roomSettings, saleEnvironment } from './support/ha-sale.js'
import { ask, startSentinelSet, type TestSentinelSet, until } from './support/redis-sentinel.js'
import type { RedisServer } from './support/redis-server.js'
import { workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const env = saleEnvironment()

/** The sale's one room on the set: the primary is the master the sentinels name, the replica the other node. */
function sentinelTopology(set: TestSentinelSet, room: RoomPlan): FailoverTopology {
  return {
    label: 'sentinel',
    url: set.url,
    rooms: [room],
    async primaryAndReplica() {
      const primary = await set.master()
      return { primary, replica: set.nodes.find((n) => n.port !== primary) as RedisServer }
    },
    failPrimary: (options) => set.killMaster(options),
    stop: () => set.stop(),
  }
}

describe('Redis Sentinel: a primary, a replica, three sentinels', () => {
  let set: TestSentinelSet | undefined
  afterEach(async () => {
    await set?.stop()
    set = undefined
  })

  const room: RoomPlan = { id: 'ha-sentinel', cap: 10, perMinute: 60, initial: 50, late: 20 }

  it('the primary dies mid-sale: the replica is promoted, both edges follow it, and the sale keeps every rule', async () => {
    set = await startSentinelSet()
    const s = set
    await failoverMidSale(env, sentinelTopology(s, room), async (edges, failover) => {
      // Both edges are connected to the promoted replica, the master the sentinels name now.
      expect(await s.master()).toBe(failover.newPort)
      expect(edges.map((e) => (e.redis as Redis).stream.remotePort)).toEqual([failover.newPort, failover.newPort])
    })
  })

  // The last steps' writes reach only the primary (the replica is frozen and its link cut), then the
  // primary dies and the replica, those steps behind, is promoted.
  lossyFailoverSuite(
    'a lossy failover: the last steps before the kill never reached the replica',
    async () => sentinelTopology(await startSentinelSet(), room),
    { rooms: 1 },
  )

  it('a primary that hangs (frozen, its connections open): the edges drop it at +switch-master and follow the promotion', async () => {
    set = await startSentinelSet()
    const hang: RoomPlan = { ...room, id: 'ha-hang', cap: 1 }
    const { edges } = await env.twoEdges([hang], set.url)
    const [a, b] = edges as [Edge, Edge]
    const first = new Visitor()
    const second = new Visitor()
    expect(await first.status(a.app, hang.id)).toMatchObject({ state: 'admitted' })
    expect(await second.status(b.app, hang.id)).toMatchObject({ state: 'queued', position: 1 })
    let frozen = false
    const freezing = set.freezeMaster({ afterFreeze: () => (frozen = true) })
    await until('the primary frozen', async () => frozen)
    const frozenAt = Date.now()
    let busy = 0
    const answeredMs = [-1, -1]
    await until('both edges answering from the promoted replica', async () => {
      for (const [i, e] of edges.entries()) {
        if ((answeredMs[i] as number) >= 0) continue
        const res = await second.request(e.app, `/_anteroom/status?room=${hang.id}`, { json: true })
        if (res.status === 503) busy++
        if (res.status !== 200) continue
        expect(await res.json()).toMatchObject({ state: 'queued', position: 1, waiting: 1 })
        answeredMs[i] = Date.now() - frozenAt
      }
      return answeredMs.every((t) => t >= 0)
    })
    const failover = await freezing
    console.log(`[redis-ha] frozen primary: ${busy} polls answered 503 busy; edges answered again after ${answeredMs} ms`, failover)
    expect(busy).toBeGreaterThan(0)
    expect((await first.request(b.app, `/${hang.id}/page`)).status).toBe(200)
    // The old primary wakes up: the sentinels make it a replica; the edges stay on the new master.
    await failover.thaw()
    await until('the old primary turned replica', async () => ((await ask(failover.oldPort, 'ROLE')) as unknown[])[0] === 'slave')
    for (const e of edges) expect(await second.status(e.app, hang.id)).toMatchObject({ state: 'queued', position: 1 })
  })

  it('a Worker edge over Sentinel: its StoreRelay finds the master through the sentinels and follows a failover', async () => {
    set = await startSentinelSet()
    const worker = await workerRuntime(() => inject('redisUrl')).start({
      rooms: [roomSettings({ ...room, id: 'ha-worker', cap: 1 })],
      originUrl: env.origin.url,
      redisUrl: set.url,
    })
    env.closeAfterTest(worker)
    const first = new Visitor()
    const second = new Visitor()
    expect(await first.status(worker.app, 'ha-worker')).toMatchObject({ state: 'admitted' })
    expect(await second.status(worker.app, 'ha-worker')).toMatchObject({ state: 'queued', position: 1 })
    let killed = false
    const failing = set.killMaster({ afterKill: () => (killed = true) })
    await until('the primary killed', async () => killed)
    const killedAt = Date.now()
    let busy = 0
    let answeredMs = -1
    await until('the Worker answering from the promoted replica', async () => {
      const res = await second.request(worker.app, '/_anteroom/status?room=ha-worker', { json: true })
      if (res.status === 503) busy++
      if (res.status !== 200) return false
      expect(await res.json()).toMatchObject({ state: 'queued', position: 1, waiting: 1 })
      answeredMs = Date.now() - killedAt
      return true
    })
    const failover = await failing
    console.log(
      `[redis-ha] Worker over Sentinel: ${busy} polls answered 503 busy; answered again ${answeredMs} ms after the kill`,
      failover,
    )
    expect(busy).toBeGreaterThan(0)
    // The admitted visitor browses on through the failover: the Worker checks the token, not Redis.
    expect((await first.request(worker.app, '/ha-worker/page')).status).toBe(200)
    const master = await set.masterClient()
    expect(await master.zcard('anteroom:{ha-worker}:q')).toBe(1)
    master.disconnect()
  })
})

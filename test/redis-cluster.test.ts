// High availability over Redis Cluster on real processes (issue #12 §1): two Node edges over six nodes,
// three masters with a replica each, and three rooms on three masters. The failover tests that Sentinel
// shares run from test/contract/failover.ts (a master killed mid-sale, and a lossy failover); here the
// rooms on the other masters must not notice, the edges' slot maps must follow, and a Worker edge's
// StoreRelay must run each room on its master. ANTEROOM_HA_TRACE=1 prints a lossy sale step by step.
import { type Cluster, Redis } from 'ioredis'
import { afterEach, describe, expect, inject, it } from 'vitest'
import { type FailoverTopology, failoverMidSale, lossyFailoverSuite } from './contract/failover.js'
import { type RoomPlan, roomSettings, saleEnvironment } from './support/ha-sale.js'
import { type SixNodeCluster, startSixNodeCluster } from './support/redis-cluster.js'
import type { RedisServer } from './support/redis-server.js'
import { workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const env = saleEnvironment()

/** Three room ids whose hash tags land on three different masters. */
async function roomsOnThreeMasters(c: SixNodeCluster): Promise<{ rooms: RoomPlan[]; masters: number[] }> {
  const rooms: RoomPlan[] = []
  const masters: number[] = []
  for (let i = 0; rooms.length < 3 && i < 100; i++) {
    const id = `ha-c${i}`
    const master = await c.masterOf(await c.keySlot(`anteroom:{${id}}:q`))
    if (masters.includes(master)) continue
    masters.push(master)
    rooms.push({ id, cap: 6, perMinute: 36, initial: 24, late: 12 })
  }
  expect(new Set(masters).size).toBe(3)
  return { rooms, masters }
}

/** The sale's three rooms on the cluster; the master of the first one fails, and its replica replaces it. */
async function clusterTopology(c: SixNodeCluster): Promise<FailoverTopology> {
  const { rooms, masters } = await roomsOnThreeMasters(c)
  const primary = masters[0] as number
  return {
    label: 'cluster',
    url: c.url,
    rooms,
    async primaryAndReplica() {
      const replicaPort = await c.replicaOf(primary)
      return { primary, replica: c.nodes.find((n) => n.port === replicaPort)?.server as RedisServer }
    },
    failPrimary: (options) => c.failMaster(primary, options),
    stop: () => c.stop(),
  }
}

describe('Redis Cluster: three masters with a replica each, three rooms on three masters', () => {
  let cluster: SixNodeCluster | undefined
  afterEach(async () => {
    await cluster?.stop()
    cluster = undefined
  })

  it("one master fails over mid-sale: its room rides it out, the others don't notice, every rule holds", async () => {
    cluster = await startSixNodeCluster()
    const c = cluster
    const topology = await clusterTopology(c)
    const failing = topology.rooms[0] as RoomPlan
    await failoverMidSale(env, topology, async (edges, failover) => {
      // The promoted replica serves the room's slot, and both edges' slot maps say so.
      const slot = await c.keySlot(`anteroom:{${failing.id}}:q`)
      expect(await c.masterOf(slot)).toBe(failover.newPort)
      for (const e of edges) expect((e.redis as Cluster).slots[slot]?.[0]).toBe(`127.0.0.1:${failover.newPort}`)
    })
  })

  lossyFailoverSuite(
    'a lossy failover of one master: the last steps before the kill never reached its replica',
    async () => {
      const c = await startSixNodeCluster()
      try {
        return await clusterTopology(c)
      } catch (err) {
        await c.stop()
        throw err
      }
    },
    { rooms: 3 },
  )

  it('a Worker edge over the Cluster: its StoreRelay runs the rooms on their masters', async () => {
    cluster = await startSixNodeCluster()
    const { rooms, masters } = await roomsOnThreeMasters(cluster)
    const worker = await workerRuntime(() => inject('redisUrl')).start({
      rooms: rooms.map((r) => roomSettings({ ...r, cap: 1 })),
      originUrl: env.origin.url,
      redisUrl: cluster.url,
    })
    env.closeAfterTest(worker)
    for (const [i, r] of rooms.entries()) {
      expect(await new Visitor().status(worker.app, r.id)).toMatchObject({ state: 'admitted' })
      expect(await new Visitor().status(worker.app, r.id)).toMatchObject({ state: 'queued', position: 1 })
      const node = new Redis({ host: '127.0.0.1', port: masters[i] as number, maxRetriesPerRequest: 0 })
      expect([await node.zcard(`anteroom:{${r.id}}:act`), await node.zcard(`anteroom:{${r.id}}:q`)]).toEqual([1, 1])
      node.disconnect()
    }
  })
})

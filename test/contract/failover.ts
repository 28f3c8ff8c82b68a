// The failover tests that Redis Sentinel and Redis Cluster share (issue #12 §1, issue #33), run for each
// by test/redis-sentinel.test.ts and test/redis-cluster.test.ts on real processes: a FailoverTopology
// starts the servers and says which primary serves the sale's first room, which replica will replace
// it, and how to kill it. Mid-sale, while visitors poll and admitted visitors browse through two edges
// to a real origin, that primary is killed by pid; the replica is promoted, the edges follow it, and
// the sale goes on to the end under every rule (failoverMidSale).
//
// Replication is asynchronous, so a failover can lose the last writes. The lossy suite makes that
// happen on purpose (the replica is frozen and cut off for one step, then the primary dies) and holds
// the edges to the same rules, except that places may move back while the store recovers from the
// loss (expectPlacesAcrossALoss says by how much and why).
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../../src/entry/build.js'
import {
  expectOrder,
  expectTheCap,
  expectTheRules,
  type RoomPlan,
  report,
  Sale,
  type SaleEnvironment,
  saleEnvironment,
  type Tracked,
} from '../support/ha-sale.js'
import { ask, until } from '../support/redis-sentinel.js'
import type { RedisServer } from '../support/redis-server.js'

/** A primary's replacement: the port that served the room before, and the promoted replica's. */
export interface Promotion {
  oldPort: number
  newPort: number
}

/** A started Sentinel set or Cluster, as the failover tests drive it. */
export interface FailoverTopology {
  /** Names it in the reports ('sentinel', 'cluster'). */
  label: string
  /** What the edges are configured with (ANTEROOM_REDIS_URL). */
  url: string
  /** The sale's rooms; the first is served by the primary that fails. */
  rooms: RoomPlan[]
  /** That primary's port, and the replica that will replace it (asked when the failover is near). */
  primaryAndReplica(): Promise<{ primary: number; replica: RedisServer }>
  /**
   * Kills that primary (SIGKILL by pid) and resolves once its replica has been promoted and serves the
   * room. `afterKill` runs as soon as the primary is dead (the lossy suite thaws the replica there).
   */
  failPrimary(options?: { afterKill?: () => void }): Promise<Promotion>
  stop(): Promise<void>
}

/**
 * A failover mid-sale: 25 steps, then the primary of the first room is killed while everybody polls and
 * browses; the sale rides out the failover and goes on to the end. `followed` checks, right after the
 * failover, that the edges found the promoted replica, each topology in its own terms. The outage was
 * real for the first room, the rooms on other masters never noticed it, and every rule holds.
 */
export async function failoverMidSale(
  env: SaleEnvironment,
  topology: FailoverTopology,
  followed: (edges: Edge[], failover: Promotion) => Promise<void>,
): Promise<void> {
  const { rooms } = topology
  const failing = rooms[0] as RoomPlan
  const { edges, clock } = await env.twoEdges(rooms, topology.url)
  const sale = new Sale(rooms, edges, clock)
  await sale.arrivals()
  while (sale.step < 25) await sale.nextStep()
  const busyBefore = new Map(sale.counts.busyByRoom)
  // The kill lands among this step's polls and browses; visitors go on polling and browsing meanwhile.
  const killedAt = Date.now()
  const failingOver = topology.failPrimary()
  await sale.nextStep(undefined, true)
  const followedMs = await sale.rideOut(failing.id, killedAt, failingOver)
  const failover = await failingOver
  const busyDuring = Object.fromEntries(rooms.map((r) => [r.id, (sale.counts.busyByRoom.get(r.id) ?? 0) - (busyBefore.get(r.id) ?? 0)]))
  expect(failover.newPort).not.toBe(failover.oldPort)
  await followed(edges, failover)
  await sale.toTheEnd()
  report(`${topology.label} failover`, sale, { failover, edgesAnsweredAfterMs: followedMs, busyPollsDuringFailover: busyDuring })
  expect(sale.counts.busyPolls).toBeGreaterThan(0) // the outage was real
  expect(busyDuring[failing.id]).toBeGreaterThan(0) // for the first room
  // The rooms on the other masters answered throughout (a Cluster with cluster-require-full-coverage no).
  expect(rooms.slice(1).map((r) => busyDuring[r.id])).toEqual(rooms.slice(1).map(() => 0))
  expectTheRules(sale)
}

/** How many of these admitted visitors the replica on `port` has no session for (read before its promotion). */
async function missingOn(port: number, room: string, admitted: Tracked[]): Promise<number> {
  const replica = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0 })
  replica.on('error', () => {})
  try {
    // A cluster replica serves reads of its master's slots only after READONLY; elsewhere it is refused.
    await replica.call('READONLY').catch(() => {})
    let missing = 0
    for (const t of admitted) if ((await replica.zscore(`anteroom:{${room}}:act`, t.sub as string)) === null) missing++
    return missing
  } finally {
    replica.disconnect()
  }
}

/**
 * Makes the next failover lose writes, as asynchronous replication can: freezes the replica (SIGSTOP by
 * pid) and cuts its link on the primary (CLIENT KILL TYPE replica), so what follows reaches the primary
 * alone; runs steps until one admits somebody in `room` (at most 5, well inside the sentinels' and the
 * cluster's 1-s down-after); then kills the primary, thaws the replica, reads on it what it lacks, and
 * lets the sale ride out the failover.
 */
async function loseTheLastSteps(
  sale: Sale,
  room: RoomPlan,
  o: { primary: number; replica: RedisServer; kill(afterKill: () => void): Promise<unknown> },
): Promise<{ lostSteps: number; lost: { admitted: number; missing: number }; failover: unknown; edgesAnsweredAfterMs: number[] }> {
  process.kill(o.replica.pid, 'SIGSTOP')
  let thawed = false
  const thaw = () => {
    if (!thawed) process.kill(o.replica.pid, 'SIGCONT')
    thawed = true
  }
  try {
    await ask(o.primary, 'CLIENT', 'KILL', 'TYPE', 'replica')
    const admitted: Tracked[] = []
    let lostSteps = 0
    while (admitted.length === 0 && lostSteps < 5) {
      await sale.nextStep() // written to the primary alone
      lostSteps++
      admitted.push(...(sale.visitors.get(room.id) as Tracked[]).filter((t) => t.admittedAt === sale.now()))
    }
    const killedAt = Date.now()
    const failing = o.kill(thaw)
    await until('the primary killed and the replica thawed', async () => thawed)
    // The replica, about to be promoted, never saw those steps: their admissions are not there.
    const lost = { admitted: admitted.length, missing: await missingOn(o.replica.port, room.id, admitted) }
    sale.traced.push(...admitted)
    const edgesAnsweredAfterMs = await sale.rideOut(room.id, killedAt, failing)
    return { lostSteps, lost, failover: await failing, edgesAnsweredAfterMs }
  } finally {
    thaw()
  }
}

/**
 * What a lossy failover costs: the visitors whose admissions the promoted replica lost are back at the
 * head of its line, and the store cannot know they were admitted until their sessions come back (their
 * renewal takes them out of the line). So a waiting visitor's place may move back, but only while the
 * store is recovering from the loss (it admits nobody meanwhile) and by no more than the lost admissions.
 */
function expectPlacesAcrossALoss(sale: Sale, lostAdmissions: number): void {
  for (const rise of sale.rises) {
    expect(rise.recovering, 'a place moves back only while the store recovers').toBe(true)
    expect(rise.amount, 'by no more than the admissions the store lost').toBeLessThanOrEqual(lostAdmissions)
  }
}

/**
 * A lossy failover: the last steps' writes reach only the primary of the first room (its replica is
 * frozen and its link cut), then the primary dies and the replica, those steps behind, is promoted. One
 * sale, three verdicts. `rooms` is how many rooms the topology runs the sale in.
 */
export function lossyFailoverSuite(title: string, start: () => Promise<FailoverTopology>, o: { rooms: number }): void {
  describe(title, () => {
    const env = saleEnvironment()
    let topology: FailoverTopology | undefined
    let sale: Sale
    let lossy: Awaited<ReturnType<typeof loseTheLastSteps>>
    beforeAll(async () => {
      topology = await start()
      const t = topology
      expect(t.rooms.length).toBe(o.rooms)
      const failing = t.rooms[0] as RoomPlan
      const { edges, clock } = await env.twoEdges(t.rooms, t.url)
      sale = new Sale(t.rooms, edges, clock)
      await sale.arrivals()
      while (sale.step < 25 || !(await sale.willAdmit(failing))) await sale.nextStep()
      const { primary, replica } = await t.primaryAndReplica()
      lossy = await loseTheLastSteps(sale, failing, { primary, replica, kill: (afterKill) => t.failPrimary({ afterKill }) })
      await sale.toTheEnd()
      report(`${t.label} lossy failover`, sale, lossy)
    })
    afterAll(async () => {
      await topology?.stop()
    })

    it(`the promoted replica lacks those steps; arrival order holds${o.rooms > 1 ? ' in every room' : ''} and everybody is admitted`, () => {
      expect(lossy.lost.admitted).toBeGreaterThan(0)
      expect(lossy.lost.missing, 'the failover lost those steps: their admissions are not on the promoted replica').toBe(
        lossy.lost.admitted,
      )
      expectOrder(sale)
    })

    it('the cap holds across it (the store notices it went back in time and recovers)', () => {
      expect(sale.counts.recovering).toBeGreaterThan(0)
      expectTheCap(sale)
    })

    it('a place moves back only while the store recovers, by no more than the admissions it lost', () => {
      expectPlacesAcrossALoss(sale, lossy.lost.admitted)
    })
  })
}

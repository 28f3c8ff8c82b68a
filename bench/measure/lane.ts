// Measurement 6's ordered-lane row (issue #32 part 2): hot-seat claims through an event's ordered lane
// (src/booking/lane), against the same ceiling (the 1-row conditional UPDATE). Every worker is a visitor
// claiming the same seat as the origin claims it for a lane event (BookingLane.hold: the claim goes into
// the event's Redis Stream and its answer is awaited); a winner releases the seat at once (PostgreSQL,
// then a note into the lane), so the fight goes on. One allocator, in this process, decides the claims
// against its stock in memory and writes winners to PostgreSQL in batches. Target: ≥ 2 × the ceiling.
import { MemoryClaimGate } from '../../src/adapters/memory/claim-gate.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { PostgresLaneStore } from '../../src/adapters/postgres/lane-store.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../../src/adapters/postgres/seed.js'
import { RedisClaimLane } from '../../src/adapters/redis/claim-lane.js'
import { connectRedis, whenReady } from '../../src/adapters/redis/connect.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import { Allocator } from '../../src/booking/lane/allocator.js'
import { BookingLane } from '../../src/booking/lane/client.js'

export const LANE_EVENT = 'lanehot'

/** The lane's hot-seat load: one step per worker, and what the allocator did. */
export async function laneHotSeat(db: Db, redisUrl: string, workers: number) {
  await seedEvent(db, {
    id: LANE_EVENT,
    name: 'Bench lane night',
    room: 'sale',
    priceCents: 2500,
    maxPerVisitor: 4,
    rows: ['A'],
    seatsPerRow: 10,
  })
  const redis = connectRedis(redisUrl)
  if (!(await whenReady(redis, 5000))) throw new Error(`the lane's redis-server at ${redisUrl} did not answer`)
  const lane = new RedisClaimLane(redis, luaScripts())
  const store = new PostgresSeatStore(db)
  // The allocator reads on a connection of its own: a blocking read holds up its connection.
  const own = await lane.dedicated()
  const allocator = new Allocator({
    event: LANE_EVENT,
    lane: own.lane,
    store,
    batches: new PostgresLaneStore(db),
    stock: new MemoryClaimGate(),
  }).start()
  const bookingLane = await new BookingLane({ lane, events: (e) => e === LANE_EVENT, waitMs: 10_000 }).start()
  const steps = Array.from({ length: workers }, (_, w) => {
    const holder = `lane-${w}`
    return async () => {
      const t0 = performance.now()
      const o = await bookingLane.hold({ event: LANE_EVENT, holder, seats: ['A1'], items: [] })
      const ms = performance.now() - t0
      if (o.kind === 'held') {
        await store.release(o.hold.id, holder)
        await bookingLane.released(LANE_EVENT, o.hold.id)
      }
      return { outcome: o.kind === 'held' ? 'held' : o.kind === 'pending' ? 'pending (202)' : `${o.kind} (lane)`, ms }
    }
  })
  return {
    name: 'hot-seat claims through the ordered lane',
    step: (w: number) => (steps[w] as () => Promise<{ outcome: string; ms: number }>)(),
    allocator,
    async stop() {
      await allocator.stop()
      await bookingLane.close()
      own.close()
      redis.disconnect()
    },
  }
}

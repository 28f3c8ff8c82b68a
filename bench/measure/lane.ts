// Measurement 6's ordered-lane row (issue #32 part 2): hot-seat claims through an event's ordered lane
// (src/booking/lane), against the same ceiling (the 1-row conditional UPDATE). Every worker is a visitor
// claiming the same seat as the origin claims it for a lane event (BookingLane.hold: the claim goes into
// the event's Redis Stream and its answer is awaited); a winner releases the seat at once (PostgreSQL,
// then a note into the lane), so the fight goes on. One allocator, in this process, decides the claims
// against its stock in memory and writes winners to PostgreSQL in batches. Target: ≥ 2 × the ceiling.
// With a claim gate (the second row), the claims go as the origin sends them for a lane event
// (src/booking/app.ts): the gate first, which refuses the doomed ones, then the lane for the rest; a
// winner's release gives its units back to the gate, the database and the lane. Each row its own event.
import { MemoryClaimGate } from '../../src/adapters/memory/claim-gate.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { PostgresLaneStore } from '../../src/adapters/postgres/lane-store.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../../src/adapters/postgres/seed.js'
import { RedisClaimLane } from '../../src/adapters/redis/claim-lane.js'
import { connectRedis, whenReady } from '../../src/adapters/redis/connect.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import { BookingGate } from '../../src/booking/gate.js'
import { Allocator } from '../../src/booking/lane/allocator.js'
import { BookingLane } from '../../src/booking/lane/client.js'
import { Reconciler } from '../../src/booking/reconciler.js'
import type { ClaimGate } from '../../src/ports/claim-gate.js'

export const LANE_EVENT = 'lanehot'

/**
 * The lane's hot-seat load: one step per worker, and what the allocator did. With `gate`, the claims
 * ask the gate first (event lanegated), as the origin's do.
 */
export async function laneHotSeat(db: Db, redisUrl: string, workers: number, gate?: ClaimGate) {
  const event = gate === undefined ? LANE_EVENT : 'lanegated'
  await seedEvent(db, {
    id: event,
    name: 'Bench lane night',
    room: 'sale',
    priceCents: 2500,
    maxPerVisitor: 4,
    rows: ['A'],
    seatsPerRow: 10,
  })
  const store = new PostgresSeatStore(db)
  const bookingGate = gate === undefined ? undefined : new BookingGate(gate, store)
  if (bookingGate !== undefined) {
    await new Reconciler({ gate: bookingGate.gate, store, events: async () => [event] }).run()
    await bookingGate.prepare(event)
  }
  const redis = connectRedis(redisUrl)
  if (!(await whenReady(redis, 5000))) throw new Error(`the lane's redis-server at ${redisUrl} did not answer`)
  const lane = new RedisClaimLane(redis, luaScripts())
  // The allocator reads on a connection of its own: a blocking read holds up its connection.
  const own = await lane.dedicated()
  const allocator = new Allocator({
    event,
    lane: own.lane,
    store,
    batches: new PostgresLaneStore(db),
    stock: new MemoryClaimGate(),
  }).start()
  const bookingLane = await new BookingLane({ lane, events: (e) => e === event, waitMs: 10_000 }).start()
  const ttlMs = 600_000
  const steps = Array.from({ length: workers }, (_, w) => {
    const holder = `${event}-${w}`
    return async () => {
      const t0 = performance.now()
      const id = crypto.randomUUID()
      const asked = await bookingGate?.claim({ event, hold: id, seats: ['A1'], ttlMs })
      if (asked?.kind === 'gone') return { outcome: 'taken at the gate', ms: performance.now() - t0 }
      const o = await bookingLane.hold({ event, holder, seats: ['A1'], items: [], id: asked?.kind === 'pass' ? id : undefined })
      const ms = performance.now() - t0
      if (o.kind === 'held') {
        await store.release(o.hold.id, holder)
        await bookingLane.released(event, o.hold.id)
      }
      await bookingGate?.release(event, id)
      return { outcome: o.kind === 'held' ? 'held' : o.kind === 'pending' ? 'pending (202)' : `${o.kind} (lane)`, ms }
    }
  })
  return {
    name:
      gate === undefined
        ? 'hot-seat claims through the ordered lane'
        : 'hot-seat claims with the lane on, the gate in front (as the origin claims)',
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

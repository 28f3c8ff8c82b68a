// Builds the bundled booking origin: PostgreSQL (a server, or embedded PGlite), migrations, the
// demo events, a test payment provider, admission checks against the edge's JWKS, and the claim gate
// in front of PostgreSQL (on Redis, or in memory) with its reconciler.
import { MemoryClaimGate } from '../adapters/memory/claim-gate.js'
import { nodeSignatures } from '../adapters/node/es256.js'
import { TestPaymentProvider } from '../adapters/payments/test-provider.js'
import type { Db } from '../adapters/postgres/db.js'
import { meteredDb } from '../adapters/postgres/metered.js'
import { migrate } from '../adapters/postgres/migrate.js'
import { pgliteDb } from '../adapters/postgres/pglite.js'
import { postgresDb } from '../adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../adapters/postgres/seat-store.js'
import { seedEvent } from '../adapters/postgres/seed.js'
import { promExporter } from '../adapters/prom/exporter.js'
import { RedisClaimGate } from '../adapters/redis/claim-gate.js'
import { RedisClaimLane } from '../adapters/redis/claim-lane.js'
import { connectRedis, type RedisClient, whenReady } from '../adapters/redis/connect.js'
import { luaScripts } from '../adapters/redis/scripts.js'
import { createBookingApp } from '../booking/app.js'
import { BookingGate } from '../booking/gate.js'
import { BookingLane } from '../booking/lane/client.js'
import { BookingMeters } from '../booking/metrics.js'
import { Reconciler } from '../booking/reconciler.js'
import { requestIdOf } from '../http/request-id.js'
import type { ClaimGate } from '../ports/claim-gate.js'
import { buildAllocators } from './lane.js'

export interface BookingOptions {
  /** postgres:// URL; unset: embedded PGlite in memory. */
  databaseUrl: string | undefined
  jwksUrl: string
  issuer: string
  audience: string
  /** The demo event is sold through this room. */
  room: string
  /** The demo event's id (default "demo"). */
  eventId?: string
  /** Seats of the demo event: rows A, B, ... of ten (default 4 rows, 40 seats). */
  rows?: number
  /** Send Anteroom-Command: end-session with a confirmed purchase (default true); the room must allow it. */
  endSessionOnPurchase?: boolean
  /** The claim gate's Redis (the edge's ANTEROOM_REDIS_URL); unset: a gate in this process's memory. */
  redisUrl?: string
  /** Or a gate to use (the edge's, in one process); wins over redisUrl. */
  gate?: ClaimGate
  /** How often the reconciler makes the gate agree with PostgreSQL, ms (default 2000). */
  reconcileMs?: number
  log?: (event: string, fields: Record<string, unknown>) => void
  /**
   * Also seed "festival", an event of counted items only (default true): rooms for the nights of 12 and
   * 13 June, 40 each, and 5,000 general-admission tickets in 8 buckets, sold through the same room.
   */
  festival?: boolean
  /** Prometheus metrics at GET /metrics, for these bearer tokens (the metrics token, the admin tokens); unset: off. */
  metrics?: { tokens: readonly string[] }
  /** A request header whose value is the request's id in log lines; unset: ids are made. */
  requestIdHeader?: string
  /**
   * Events sold through the ordered lane (src/booking/lane; needs redisUrl), each with its allocator in
   * this process; unset or empty: none (claims go to PostgreSQL one by one).
   */
  laneEvents?: readonly string[]
}

export async function buildBooking(o: BookingOptions) {
  const meters = o.metrics === undefined ? undefined : new BookingMeters()
  const plainDb: Db = o.databaseUrl ? postgresDb(o.databaseUrl) : await pgliteDb()
  // Every statement timed by its SQL file's name, when metrics are on.
  const db = meters === undefined ? plainDb : meteredDb(plainDb, (name, seconds, ok) => meters.statement(name, seconds, ok))
  await migrate(db)
  const rows = Array.from({ length: o.rows ?? 4 }, (_, i) => rowName(i))
  await seedEvent(db, {
    id: o.eventId ?? 'demo',
    name: `Demo night: ${rows.length * 10} seats`,
    room: o.room,
    priceCents: 4500,
    rows,
    seatsPerRow: 10,
  })
  if (o.festival ?? true) {
    await seedEvent(db, {
      id: 'festival',
      name: 'Festival weekend: rooms for 12 and 13 June, general admission',
      room: o.room,
      priceCents: 9000,
      items: [
        { id: 'night-12', name: 'Double room, night of 12 June', quantity: 40 },
        { id: 'night-13', name: 'Double room, night of 13 June', quantity: 40 },
        { id: 'ga', name: 'General admission', quantity: 5000, buckets: 8 },
      ],
    })
  }
  const seats = new PostgresSeatStore(db)
  let redis: RedisClient | undefined
  let claimGate = o.gate
  if (claimGate === undefined && o.redisUrl !== undefined) {
    redis = connectRedis(o.redisUrl, (err) => o.log?.('gate_redis_error', { message: err.message }))
    claimGate = new RedisClaimGate(redis, luaScripts())
    // The first reconcile builds the gate: give Redis a moment to connect (without it, sales go on
    // on PostgreSQL alone and the next run builds it).
    await whenReady(redis, 2000)
  }
  claimGate ??= new MemoryClaimGate()
  const gate = new BookingGate(claimGate, seats, o.log)
  const reconciler = new Reconciler({ gate: claimGate, store: seats, events: () => seats.eventIds(), periodMs: o.reconcileMs, log: o.log })
  // The first run builds the gate before the first claim; then every period.
  await reconciler.run()
  reconciler.start()
  meters?.watch(gate, reconciler)
  const laneEvents = new Set(o.laneEvents ?? [])
  if (laneEvents.size > 0 && redis === undefined) throw new TypeError('laneEvents: the ordered lane needs Redis (redisUrl)')
  const lane =
    redis === undefined || laneEvents.size === 0
      ? undefined
      : await new BookingLane({ lane: new RedisClaimLane(redis, luaScripts()), events: (e) => laneEvents.has(e), log: o.log }).start()
  const allocators =
    redis === undefined || laneEvents.size === 0 ? undefined : await buildAllocators({ events: [...laneEvents], db, redis, log: o.log })
  const app = createBookingApp({
    seats,
    payments: new TestPaymentProvider(),
    // node:crypto's signature check: a claim's answer in the turn it is checked (src/booking/verify.ts).
    admission: { jwksUrl: o.jwksUrl, issuer: o.issuer, audience: o.audience, signatures: nodeSignatures },
    endSessionOnPurchase: o.endSessionOnPurchase ?? true,
    gate,
    reconciler,
    lane,
    log: o.log,
    requestId: (c) => requestIdOf(c, o.requestIdHeader),
    meters,
    metrics:
      meters === undefined || o.metrics === undefined ? undefined : { exporter: promExporter(meters.registry), tokens: o.metrics.tokens },
  })
  // Housekeeping only: claims check expiry themselves.
  const sweeper = setInterval(() => void seats.sweep().catch(() => {}), 30_000)
  sweeper.unref()
  return {
    app,
    seats,
    gate: claimGate,
    reconciler,
    async close() {
      clearInterval(sweeper)
      await reconciler.stop()
      await allocators?.stop()
      await lane?.close()
      redis?.disconnect()
      await seats.close()
    },
  }
}

/** A, B, ..., Z, AA, AB, ...: seat names stay letters and digits (A1, AB10). */
function rowName(i: number): string {
  return i < 26 ? String.fromCharCode(65 + i) : rowName(Math.floor(i / 26) - 1) + String.fromCharCode(65 + (i % 26))
}

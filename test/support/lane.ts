// An ordered lane for tests (src/booking/lane): the booking origin on the shared PostgreSQL server with
// the lane on for chosen events, on a Redis client of its own, and allocators made on demand.
import { createLocalJWKSet } from 'jose'
import { inject } from 'vitest'
import { MemoryClaimGate } from '../../src/adapters/memory/claim-gate.js'
import { TestPaymentProvider } from '../../src/adapters/payments/test-provider.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { PostgresLaneStore } from '../../src/adapters/postgres/lane-store.js'
import { migrate } from '../../src/adapters/postgres/migrate.js'
import { postgresDb } from '../../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { RedisClaimGate } from '../../src/adapters/redis/claim-gate.js'
import { RedisClaimLane } from '../../src/adapters/redis/claim-lane.js'
import { connectRedis, type RedisClient, whenReady } from '../../src/adapters/redis/connect.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import { createBookingApp } from '../../src/booking/app.js'
import { BookingGate } from '../../src/booking/gate.js'
import { Allocator, type AllocatorOptions } from '../../src/booking/lane/allocator.js'
import { BookingLane } from '../../src/booking/lane/client.js'
import { Reconciler } from '../../src/booking/reconciler.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../../src/core/admission-token.js'

/** What every lane test starts from: a migrated pool on the run's PostgreSQL server, and admission tokens as an edge signs them. */
export async function laneBase(): Promise<{ db: Db; tokens: AdmissionTokens }> {
  const db = postgresDb(inject('postgresUrl'), { max: 10 })
  await migrate(db)
  const tokens = new AdmissionTokens({
    keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
    issuer: 'anteroom',
    audience: 'origin',
  })
  return { db, tokens }
}

export interface LaneRig {
  app: ReturnType<typeof createBookingApp>
  lane: RedisClaimLane
  bookingLane: BookingLane
  seats: PostgresSeatStore
  redis: RedisClient
  /** An allocator for an event on this rig's database and Redis (not started). */
  allocator(event: string, o?: Partial<AllocatorOptions>): Promise<Allocator>
  /** A request as a visitor, with their admission token. */
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
  send(method: string, path: string, visitor: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>
  close(): Promise<void>
}

export async function laneRig(o: {
  db: Db
  redisUrl: string
  tokens: AdmissionTokens
  room: string
  laneEvents: string[]
  waitMs?: number
  /** Subscribe to the answers (default true; a Redis that is away cannot be subscribed to). */
  listen?: boolean
  /** The claim gate on the same Redis in front of the lane, built from PostgreSQL for these events. */
  gateEvents?: string[]
}): Promise<LaneRig> {
  const redis = connectRedis(o.redisUrl)
  if (o.listen !== false) await whenReady(redis, 5000)
  const lane = new RedisClaimLane(redis, luaScripts())
  const seats = new PostgresSeatStore(o.db)
  const on = new Set(o.laneEvents)
  const bookingLane = new BookingLane({ lane, events: (e) => on.has(e), waitMs: o.waitMs })
  if (o.listen !== false) await bookingLane.start()
  let gate: BookingGate | undefined
  if (o.gateEvents !== undefined) {
    const claimGate = new RedisClaimGate(redis, luaScripts())
    gate = new BookingGate(claimGate, seats)
    await new Reconciler({ gate: claimGate, store: seats, events: async () => o.gateEvents ?? [] }).run()
  }
  const app = createBookingApp({
    gate,
    seats,
    payments: new TestPaymentProvider(),
    admission: {
      jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
      issuer: 'anteroom',
      audience: 'origin',
      keys: createLocalJWKSet(o.tokens.jwks()),
    },
    lane: bookingLane,
  })
  const batches = new PostgresLaneStore(o.db)
  const allocators: { a: Allocator; close: () => void }[] = []
  const tokenCache = new Map<string, Promise<string>>()
  const tokenFor = (visitor: string) => {
    let t = tokenCache.get(visitor)
    if (t === undefined) {
      t = o.tokens.sign(
        { sub: visitor, jti: `s-${visitor}`, room: o.room, arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 },
        Date.now(),
      )
      tokenCache.set(visitor, t)
    }
    return t
  }
  return {
    app,
    lane,
    bookingLane,
    seats,
    redis,
    async allocator(event, more = {}) {
      // A connection of its own, as in production: its blocking reads would hold up the origin's claims.
      const own = await lane.dedicated()
      const a = new Allocator({
        event,
        lane: own.lane,
        store: seats,
        batches,
        blockMs: 50,
        stock: new MemoryClaimGate(more.clock),
        ...more,
      })
      allocators.push({ a, close: own.close })
      return a
    },
    async send(method, path, visitor, body) {
      const headers: Record<string, string> = { 'anteroom-admission': await tokenFor(visitor), 'content-type': 'application/json' }
      if (method === 'POST' && path.endsWith('/confirm')) headers['idempotency-key'] = `pay-${visitor}-${path.split('/')[2]}`
      const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
      return { status: res.status, body: await res.json(), headers: res.headers }
    },
    async close() {
      await Promise.all(allocators.map(({ a }) => a.stop()))
      for (const { close } of allocators) close()
      await bookingLane.close()
      redis.disconnect()
    },
  }
}

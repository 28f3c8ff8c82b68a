// The booking origin with its claim gate (src/booking/gate.ts, reconciler.ts) on a real PostgreSQL
// server and a real Redis: doomed claims cost the database nothing and skip the signature check;
// whatever the gate says, PostgreSQL never oversells and a free seat is claimable again after one
// reconcile; with Redis gone the origin sells on PostgreSQL alone and rebuilds the gate when it is back.
import { createLocalJWKSet, type JWTVerifyGetKey } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { connectRedis, type RedisClient, whenReady } from '../src/adapters/redis/connect.js'
import { gateKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { createBookingApp } from '../src/booking/app.js'
import { BookingGate, NearestSeats, nearestSeats } from '../src/booking/gate.js'
import { Reconciler } from '../src/booking/reconciler.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import type { ClaimGate } from '../src/ports/claim-gate.js'
import { type RedisServer, startRedis } from './support/redis-server.js'

let db: Db
let tokens: AdmissionTokens
let forger: AdmissionTokens
let jwks: JWTVerifyGetKey
/** Statements sent to PostgreSQL, and signature checks made, so far. */
const counted = { statements: 0, verifications: 0 }
const clients: RedisClient[] = []
let seq = 0

beforeAll(async () => {
  const real = postgresDb(inject('postgresUrl'), { max: 10 })
  db = {
    query: (text, params) => {
      counted.statements++
      return real.query(text, params)
    },
    transaction: (fn) => {
      counted.statements++
      return real.transaction(fn)
    },
    close: () => real.close(),
  }
  await migrate(db)
  tokens = new AdmissionTokens({
    keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
    issuer: 'anteroom',
    audience: 'origin',
  })
  // Same kid, another key: a forged token that only the signature check can tell apart.
  forger = new AdmissionTokens({
    keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
    issuer: 'anteroom',
    audience: 'origin',
  })
  const local = createLocalJWKSet(tokens.jwks())
  jwks = (header, token) => {
    counted.verifications++
    return local(header, token)
  }
})
afterAll(async () => {
  for (const c of clients) c.disconnect()
  await db.close()
})

/** A gate on a connected client (the production client queues nothing while it connects). */
const redisGate = async (url = inject('redisUrl')) => {
  const client = connectRedis(url)
  clients.push(client)
  expect(await whenReady(client, 5000)).toBe(true)
  return { gate: new RedisClaimGate(client, luaScripts()), client }
}

async function setup(
  gate: ClaimGate,
  o: {
    rows?: string[]
    holdSeconds?: number
    maxPerVisitor?: number
    items?: { id: string; name: string; quantity: number; buckets?: number }[]
  } = {},
) {
  const event = `gate${Date.now().toString(36)}${seq++}`
  await seedEvent(db, {
    id: event,
    name: 'Gate night',
    room: 'sale',
    priceCents: 2500,
    rows: o.rows ?? ['A', 'B', 'C', 'D'],
    seatsPerRow: 10,
    maxPerVisitor: o.maxPerVisitor ?? 4,
    holdSeconds: o.holdSeconds ?? 600,
    items: o.items,
  })
  const store = new PostgresSeatStore(db)
  const bookingGate = new BookingGate(gate, store)
  // Grace 0: these tests change PostgreSQL behind the gate's back, never while a claim is in flight.
  const reconciler = new Reconciler({ gate, store, events: async () => [event], periodMs: 2000, graceMs: 0 })
  const payments = new TestPaymentProvider()
  const app = createBookingApp({
    seats: store,
    payments,
    gate: bookingGate,
    reconciler,
    admission: { jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json', issuer: 'anteroom', audience: 'origin', keys: jwks },
  })
  await reconciler.run()
  expect(reconciler.stats).toMatchObject({ runs: 1, failures: 0, rebuilds: 1 })
  return { event, app, store, bookingGate, reconciler, payments }
}

const tokenFor = (visitor: string, t = tokens) =>
  t.sign({ sub: visitor, jti: `s-${visitor}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 }, Date.now())

type App = ReturnType<typeof createBookingApp>
async function call(app: App, method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await app.request(path, {
    method,
    headers: { 'anteroom-admission': token, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
  return { status: res.status, body: (await res.json()) as Record<string, any> }
}

const hold = (app: App, event: string, token: string, seats: string[]) => call(app, 'POST', `/events/${event}/holds`, token, { seats })

/** Seats held or sold in PostgreSQL, each with its holder; a seat appears once by the primary key. */
async function taken(event: string): Promise<Map<string, string>> {
  const rows = await db.query<{ seat: string; holder: string }>(
    "SELECT seat, holder FROM seats WHERE event_id = $1 AND (status = 'sold' OR (status = 'held' AND hold_expires_at > now()))",
    [event],
  )
  return new Map(rows.map((r) => [r.seat, r.holder]))
}

describe('the gate in front of PostgreSQL', () => {
  for (const [name, make] of [
    ['redis', async () => (await redisGate()).gate],
    ['memory', async () => new MemoryClaimGate()],
  ] as const) {
    it(`${name}: a claim the gate knows is doomed costs no statement and no signature check, and names the nearest free seats`, async () => {
      const { app, event } = await setup(await make())
      expect((await hold(app, event, await tokenFor('winner'), ['B5'])).status).toBe(201)
      const tokensOf = await Promise.all(Array.from({ length: 50 }, (_, i) => tokenFor(`loser-${i}`)))
      const before = { ...counted }
      const answers = await Promise.all(tokensOf.map((t) => hold(app, event, t, ['B5'])))
      expect(counted.statements - before.statements).toBe(0)
      expect(counted.verifications - before.verifications).toBe(0)
      for (const a of answers) {
        expect(a.status).toBe(409)
        expect(a.body.error.code).toBe('ERR_SEATS_TAKEN')
        expect(a.body.error.taken).toEqual(['B5'])
        expect(a.body.error.nearest).toEqual(['B4', 'B6', 'B3', 'B7'])
      }
    })
  }

  it('a rush on a cold origin reads the event and its seat layout once, not once per claim', async () => {
    const { gate } = await redisGate()
    const warm = await setup(gate)
    expect((await hold(warm.app, warm.event, await tokenFor('first'), ['A1'])).status).toBe(201)
    // Another origin process: its caches are empty.
    const store = new PostgresSeatStore(db)
    const app = createBookingApp({
      seats: store,
      payments: new TestPaymentProvider(),
      gate: new BookingGate(gate, store),
      admission: { jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json', issuer: 'anteroom', audience: 'origin', keys: jwks },
    })
    const rush = await Promise.all(Array.from({ length: 200 }, (_, i) => tokenFor(`cold-${i}`)))
    const before = counted.statements
    const answers = await Promise.all(rush.map((t) => hold(app, warm.event, t, ['A1'])))
    expect(answers.every((a) => a.status === 409)).toBe(true)
    expect(counted.statements - before).toBe(2)
  })

  it('a claim the gate lets through is verified before PostgreSQL: a forged token gets 401 and its mark is given back', async () => {
    const { app, event, bookingGate } = await setup((await redisGate()).gate)
    expect((await hold(app, event, await tokenFor('alice'), ['A1'])).status).toBe(201)
    const before = { ...counted }
    const forged = await hold(app, event, await tokenFor('mallory', forger), ['A2'])
    expect(forged.status).toBe(401)
    expect(forged.body.error.code).toBe('ERR_ADMISSION_SIGNATURE')
    expect(counted.statements - before.statements).toBe(0)
    expect(await bookingGate.gate.counts(event)).toMatchObject({ free: 39, held: 1 })
    // A forged token for a seat that is gone learns only that it is gone: what the seat map shows.
    const probe = await hold(app, event, await tokenFor('mallory', forger), ['A1'])
    expect(probe.status).toBe(409)
  })

  it('gives the units back when PostgreSQL refuses, on a release and on a lost hold; a sale takes them for good', async () => {
    const { app, event, store, bookingGate, reconciler } = await setup((await redisGate()).gate)
    const counts = () => bookingGate.gate.counts(event)
    // A hold written behind the gate's back (as while Redis was away): the gate passes, PostgreSQL refuses.
    const ev = await store.event(event)
    expect((await store.hold({ event: ev as NonNullable<typeof ev>, holder: 'behind', seats: ['A1'] })).kind).toBe('held')
    const refused = await hold(app, event, await tokenFor('bob'), ['A1', 'A2'])
    expect(refused.status).toBe(409)
    expect(refused.body.error.taken).toEqual(['A1'])
    expect(await counts()).toMatchObject({ free: 40, held: 0 })
    // The reconciler learns of the hold: then the gate refuses alone.
    await reconciler.run()
    expect(reconciler.stats.repairs).toBeGreaterThan(0)
    expect(await counts()).toMatchObject({ free: 39, held: 1 })
    // Release gives back; confirm sells for good.
    const carol = await tokenFor('carol')
    const h = await hold(app, event, carol, ['C1', 'C2'])
    expect(h.status).toBe(201)
    expect(await counts()).toMatchObject({ free: 37, held: 3 })
    expect((await call(app, 'DELETE', `/holds/${h.body.hold.id}`, carol)).status).toBe(200)
    expect(await counts()).toMatchObject({ free: 39, held: 1 })
    const h2 = await hold(app, event, carol, ['C3'])
    const paid = await call(app, 'POST', `/holds/${h2.body.hold.id}/confirm`, carol, undefined, { 'idempotency-key': 'gate-confirm-1' })
    expect(paid.status).toBe(200)
    expect(await counts()).toMatchObject({ free: 38, held: 1, sold: 1 })
    // A reconcile in agreement repairs nothing.
    const repairs = reconciler.stats.repairs
    await reconciler.run()
    expect(reconciler.stats.repairs).toBe(repairs)
    // A hold lost before its confirm: PostgreSQL's expiry passes (moved into the past, instead of waiting),
    // someone else takes the seat, the confirm refunds and the gate keeps the new holder's mark.
    const dave = await tokenFor('dave')
    const h3 = await hold(app, event, dave, ['D1'])
    await db.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1", [h3.body.hold.id])
    await db.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [h3.body.hold.id])
    await reconciler.run()
    expect((await hold(app, event, await tokenFor('erin'), ['D1'])).status).toBe(201)
    const lost = await call(app, 'POST', `/holds/${h3.body.hold.id}/confirm`, dave, undefined, { 'idempotency-key': 'gate-confirm-2' })
    expect(lost.body.error.code).toBe('ERR_HOLD_LOST')
    expect(await counts()).toMatchObject({ free: 37, held: 2, sold: 1 })
    expect((await hold(app, event, await tokenFor('frank'), ['D1'])).status).toBe(409)
  })

  it('whatever the gate says, PostgreSQL never oversells, and after one reconcile every free seat can be claimed again', async () => {
    const { gate, client } = await redisGate()
    const { app, event, reconciler } = await setup(gate, { maxPerVisitor: 2 })
    const seats = ['A', 'B', 'C', 'D'].flatMap((r) => Array.from({ length: 10 }, (_, i) => `${r}${i + 1}`))
    const [left, holds, units] = gateKeys(event)
    const corruptions: [string, () => Promise<unknown>][] = [
      ['every seat free', () => client.hset(left, Object.fromEntries(seats.map((s) => [`seat:${s}`, 1])))],
      ['every seat gone', () => client.hset(left, Object.fromEntries(seats.map((s) => [`seat:${s}`, 0])))],
      ['more than one of each', () => client.hset(left, Object.fromEntries(seats.map((s) => [`seat:${s}`, 5])))],
      ['forgotten', () => client.del(left, holds, units, gateKeys(event)[3])],
      [
        'holds that never were',
        () =>
          client.hset(
            units,
            Object.fromEntries(seats.slice(0, 20).map((s, i) => [`ghost-${i}`, JSON.stringify({ b: 0, u: [`seat:${s}`, 1] })])),
          ),
      ],
    ]
    let round = 0
    for (const [what, corrupt] of corruptions) {
      await corrupt()
      // A rush: 120 visitors, two random seats each, some the same.
      const rush = await Promise.all(
        Array.from({ length: 120 }, async (_, i) => {
          const a = seats[(i * 7 + round * 13) % 40] as string
          const b = seats[(i * 11 + round * 5 + 3) % 40] as string
          return hold(app, event, await tokenFor(`r${round}-${i}`), a === b ? [a] : [a, b])
        }),
      )
      for (const r of rush) expect([201, 409], what).toContain(r.status)
      const held = await taken(event)
      const winners = rush.filter((r) => r.status === 201).flatMap((r) => r.body.hold.seats as string[])
      // No seat was handed to two claims: every seat a claim won is held by exactly one holder.
      expect(new Set(winners).size, what).toBe(winners.length)
      for (const s of winners) expect(held.has(s), what).toBe(true)
      // One reconcile later, the gate agrees: every seat PostgreSQL has free can be held through the gate.
      await reconciler.run()
      const free = seats.filter((s) => !held.has(s))
      const before = counted.statements
      for (const [i, s] of free.entries()) {
        const r = await hold(app, event, await tokenFor(`after-${round}-${i}`), [s])
        expect(r.status, `${what}: ${s}`).toBe(201)
      }
      // And every seat it has taken is refused at the gate, with no statement.
      const mid = counted.statements
      for (const s of held.keys()) expect((await hold(app, event, await tokenFor(`late-${round}`), [s])).status).toBe(409)
      expect(counted.statements - mid, what).toBe(0)
      expect(mid - before).toBeGreaterThan(0)
      // Free everything for the next round.
      await db.query("UPDATE seats SET status = 'free', holder = NULL, hold_id = NULL, hold_expires_at = NULL WHERE event_id = $1", [event])
      await db.query("UPDATE holds SET status = 'released' WHERE event_id = $1", [event])
      await reconciler.run()
      round++
    }
  })
})

describe('the gate and counted items', () => {
  const nights = [
    { id: 'night-12', name: 'Night of 12', quantity: 40 },
    { id: 'night-13', name: 'Night of 13', quantity: 40 },
  ]
  const pkg = (first: string, second: string) => ({
    items: [
      { item: first, quantity: 1 },
      { item: second, quantity: 1 },
    ],
  })

  it('2,000 packages for 40 rooms on two nights, in both click orders: exactly 40 a night, and the doomed ones cost no statement', async () => {
    const { app, event, store, bookingGate } = await setup((await redisGate()).gate, { rows: [], items: nights })
    const rush = await Promise.all(Array.from({ length: 2000 }, (_, i) => tokenFor(`pkg-${i}`)))
    const before = counted.statements
    const answers = await Promise.all(
      rush.map((t, i) =>
        call(app, 'POST', `/events/${event}/holds`, t, i % 2 === 0 ? pkg('night-12', 'night-13') : pkg('night-13', 'night-12')),
      ),
    )
    const held = answers.filter((a) => a.status === 201)
    expect(held).toHaveLength(40)
    for (const a of answers.filter((x) => x.status !== 201)) {
      expect(a.status).toBe(409)
      expect(a.body.error.code).toBe('ERR_ITEMS_SHORT')
    }
    // The database saw the 40 winners (one statement each, plus the event and a first read), no more.
    expect(counted.statements - before).toBeLessThanOrEqual(40 + 4)
    expect(bookingGate.stats.refused).toBe(1960)
    const items = Object.fromEntries((await store.itemMap(event)).map((i) => [i.item, i]))
    expect(items['night-12']).toMatchObject({ held: 40, free: 0 })
    expect(items['night-13']).toMatchObject({ held: 40, free: 0 })
    // A single night is refused at the gate with what is left.
    const single = await call(app, 'POST', `/events/${event}/holds`, await tokenFor('late'), { items: [{ item: 'night-13', quantity: 1 }] })
    expect(single.status).toBe(409)
    expect(single.body.error.short).toEqual([{ item: 'night-13', wanted: 1, left: 0 }])
    // Released, a package's rooms come back at the gate.
    const first = held[0] as (typeof held)[number]
    const owner = rush[answers.indexOf(first)] as string
    expect((await call(app, 'DELETE', `/holds/${first.body.hold.id}`, owner)).status).toBe(200)
    expect(await bookingGate.gate.counts(event)).toMatchObject({ free: 2, held: 78 })
    expect((await call(app, 'POST', `/events/${event}/holds`, await tokenFor('second'), pkg('night-13', 'night-12'))).status).toBe(201)
  })

  it('whatever the gate says of items, PostgreSQL never oversells them, and one reconcile makes it right', async () => {
    const { gate, client } = await redisGate()
    const { app, event, store, reconciler } = await setup(gate, { rows: [], items: nights, maxPerVisitor: 2 })
    // The gate believes there are 400 rooms a night.
    await client.hset(gateKeys(event)[0], { 'item:night-12': 400, 'item:night-13': 400 })
    const rush = await Promise.all(Array.from({ length: 300 }, (_, i) => tokenFor(`over-${i}`)))
    const answers = await Promise.all(rush.map((t) => call(app, 'POST', `/events/${event}/holds`, t, pkg('night-12', 'night-13'))))
    expect(answers.filter((a) => a.status === 201)).toHaveLength(40)
    const items = Object.fromEntries((await store.itemMap(event)).map((i) => [i.item, i]))
    expect(items['night-12']).toMatchObject({ held: 40 })
    expect(items['night-13']).toMatchObject({ held: 40 })
    await reconciler.run()
    expect(await gate.counts(event)).toMatchObject({ free: 0, held: 80 })
  })
})

describe('with Redis gone', () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    await server.stop().catch(() => {})
  })

  it('the origin sells on PostgreSQL alone, then rebuilds the gate when Redis is back', async () => {
    const { gate, client } = await redisGate(server.url)
    const { app, event, bookingGate, reconciler } = await setup(gate)
    expect((await hold(app, event, await tokenFor('g1'), ['A1'])).status).toBe(201)
    await server.stop()
    // Sales go on: PostgreSQL decides alone, taken seats are still refused (by the database).
    expect((await hold(app, event, await tokenFor('g2'), ['A2'])).status).toBe(201)
    const refused = await hold(app, event, await tokenFor('g3'), ['A1'])
    expect(refused.status).toBe(409)
    expect(refused.body.error.taken).toEqual(['A1'])
    expect(bookingGate.stats.failures).toBeGreaterThan(0)
    const failures = reconciler.stats.failures
    await reconciler.run()
    expect(reconciler.stats.failures).toBe(failures + 1)
    // Redis comes back empty (same port, nothing kept): the next run rebuilds the gate from PostgreSQL.
    server = await startRedis([], server.port)
    for (let i = 0; i < 200 && client.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 25))
    expect(client.status).toBe('ready')
    await reconciler.run()
    expect(reconciler.stats.rebuilds).toBe(2)
    expect(await gate.counts(event)).toMatchObject({ free: 38, held: 2 })
    const before = counted.statements
    expect((await hold(app, event, await tokenFor('g4'), ['A2'])).status).toBe(409)
    expect(counted.statements - before).toBe(0)
  })
})

describe('the gate at the origin, over time', () => {
  it('refuses seats asked for before without a statement, also after the layout would be read again (60 s)', async () => {
    const gate = new MemoryClaimGate()
    const { event, bookingGate } = await setup(gate)
    await new Reconciler({ gate, store: new PostgresSeatStore(db), events: async () => [event] }).run()
    await bookingGate.prepare(event)
    expect((await bookingGate.claim({ event, hold: crypto.randomUUID(), seats: ['A1'], ttlMs: 600_000 })).kind).toBe('pass')
    const start = Date.now()
    const clock = vi.spyOn(Date, 'now')
    try {
      for (const later of [0, 61_000, 125_000]) {
        clock.mockReturnValue(start + later)
        const before = counted.statements
        const refused = await bookingGate.claim({ event, hold: crypto.randomUUID(), seats: ['A1'], ttlMs: 600_000 })
        expect(refused.kind, `${later} ms later`).toBe('gone')
        expect(counted.statements - before, `${later} ms later`).toBe(0)
      }
      // Seats not asked for before are looked up in a layout read again once it is 60 s old.
      const before = counted.statements
      expect((await bookingGate.claim({ event, hold: crypto.randomUUID(), seats: ['A1', 'A2'], ttlMs: 600_000 })).kind).toBe('gone')
      expect(counted.statements - before).toBe(1)
    } finally {
      clock.mockRestore()
    }
  })
})

describe('nearest seats', () => {
  it('orders by rows apart × 1000 + numbers apart, then name, as anteroom_hold does, and keeps the best few', () => {
    const layout = ['A', 'B', 'C'].flatMap((row) => Array.from({ length: 5 }, (_, i) => ({ seat: `${row}${i + 1}`, row, number: i + 1 })))
    expect(nearestSeats(layout, ['B3'], 6)).toEqual(['B2', 'B4', 'B1', 'B5', 'A3', 'C3'])
    expect(nearestSeats(layout, ['A1', 'C5'], 3)).toEqual(['A2', 'C4', 'A3'])
    expect(nearestSeats(layout, ['Z9'], 3)).toEqual([])
  })

  it("gives the same seats from each seat's own list (NearestSeats) as from a pass over the layout, for any layout and claim", () => {
    // A seeded generator: the same cases every run.
    let seed = 20261207
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T
    let compared = 0
    for (let c = 0; c < 60; c++) {
      // Rows that share a first letter (A, AB), gaps in the numbers, rows longer than 1,000 seats.
      const rows = Array.from(
        { length: 1 + Math.floor(random() * 8) },
        (_, i) => pick(['A', 'B', 'C', 'AB', 'D', 'Z', 'E', 'F']) + (i % 3 === 0 ? '' : String(i)),
      )
      const layout: { seat: string; row: string; number: number }[] = []
      const names = new Set<string>()
      for (const row of rows) {
        const length = pick([1, 3, 10, 40, 120, 1500])
        for (let n = 1; n <= length; n++) {
          const number = c % 5 === 0 ? n * 7 : n
          const seat = `${row}-${number}`
          if (!names.has(seat) && random() < 0.9) {
            names.add(seat)
            layout.push({ seat, row, number })
          }
        }
      }
      if (c % 2 === 0) layout.reverse()
      const index = new NearestSeats(layout)
      for (let k = 0; k < 20; k++) {
        const size = pick([1, 1, 2, 3, 4, 50, 52])
        const wanted = Array.from({ length: size }, () => (random() < 0.05 ? 'Q-404' : pick(layout).seat))
        const count = pick([1, 4, 32])
        expect(index.nearest(wanted, count), `case ${c}.${k}`).toEqual(nearestSeats(layout, wanted, count))
        compared++
      }
    }
    expect(compared).toBe(1200)
    // Spot checks on the small layout above.
    const small = ['A', 'B', 'C'].flatMap((row) => Array.from({ length: 5 }, (_, i) => ({ seat: `${row}${i + 1}`, row, number: i + 1 })))
    expect(new NearestSeats(small).nearest(['B3'], 6)).toEqual(['B2', 'B4', 'B1', 'B5', 'A3', 'C3'])
    expect(new NearestSeats(small).nearest(['A1', 'C5'], 3)).toEqual(['A2', 'C4', 'A3'])
    expect(new NearestSeats(small).nearest(['Z9'], 3)).toEqual([])
  })
})

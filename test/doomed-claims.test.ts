// Doomed claims (issue #32 part 3): a claim the claim gate knows cannot be had is answered over real
// HTTP without a statement to PostgreSQL, with a 409 whose body keeps its documented shape
// (docs/errors.md; src/booking/refusals.ts writes it without an AnteroomError) and equals what the
// database path answers for the same seats. A malformed body is a 400 naming the field before the
// gate is asked, sold out or not, and a body is still held to its size limit however it is sent.
import { createLocalJWKSet } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { connectRedis, type RedisClient, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { createBookingApp } from '../src/booking/app.js'
import { MAX_BODY_BYTES } from '../src/booking/body.js'
import { shortItems } from '../src/booking/claims.js'
import { BookingGate } from '../src/booking/gate.js'
import { Reconciler } from '../src/booking/reconciler.js'
import { itemsShortBody, SHORT_HEADERS, seatsTakenBody, TAKEN_HEADERS } from '../src/booking/refusals.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import { AnteroomError } from '../src/core/errors.js'
import { errorBody } from '../src/http/errors.js'
import { type Served, serveOnFreePort } from './support/serve.js'

let real: Db
let redis: RedisClient
let tokens: AdmissionTokens
/** Every statement the origins under test sent. */
const sent: string[] = []
const servers: Served[] = []
let seq = 0

beforeAll(async () => {
  real = postgresDb(inject('postgresUrl'), { max: 10 })
  await migrate(real)
  redis = connectRedis(inject('redisUrl'))
  expect(await whenReady(redis, 5000)).toBe(true)
  tokens = new AdmissionTokens({
    keys: await importSigningKeys([await generateSigningJwk('edge-1')]),
    issuer: 'anteroom',
    audience: 'origin',
  })
})
afterAll(async () => {
  for (const s of servers) await s.close()
  redis.disconnect()
  await real.close()
})

const counting: () => Db = () => ({
  query: (text, params) => {
    sent.push(text)
    return real.query(text, params)
  },
  transaction: (fn) =>
    real.transaction((tx) =>
      fn({
        query: (text, params) => {
          sent.push(text)
          return tx.query(text, params)
        },
      }),
    ),
  close: async () => {},
})

/** The booking app served over HTTP on a free loopback port, with the claim gate on Redis or without it. */
async function booking(gated: boolean, seed: { rows?: string[]; items?: { id: string; quantity: number }[] }) {
  const event = `doomed${Date.now().toString(36)}${seq++}`
  await seedEvent(real, { id: event, name: 'Doomed night', room: 'sale', priceCents: 2500, seatsPerRow: 5, maxPerVisitor: 4, ...seed })
  const store = new PostgresSeatStore(counting())
  const claimGate = new RedisClaimGate(redis, luaScripts())
  const gate = gated ? new BookingGate(claimGate, store) : undefined
  if (gated) await new Reconciler({ gate: claimGate, store: new PostgresSeatStore(real), events: async () => [event] }).run()
  const app = createBookingApp({
    seats: store,
    payments: new TestPaymentProvider(),
    gate,
    admission: { jwksUrl: 'http://127.0.0.1:1/', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
  })
  const server = await serveOnFreePort(app.fetch)
  servers.push(server)
  return { event, url: server.url }
}

const tokenFor = (visitor: string) =>
  tokens.sign({ sub: visitor, jti: `s-${visitor}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 }, Date.now())

/** A claim over HTTP: the body as given (a string is sent as is), with its Content-Length. */
async function claim(o: { url: string; event: string }, visitor: string, body: unknown) {
  const res = await fetch(`${o.url}/events/${o.event}/holds`, {
    method: 'POST',
    headers: { 'anteroom-admission': await tokenFor(visitor), 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) }
}

/** Runs fn with Date.now held still: the store's event cache (5 s) cannot lapse while it runs. */
async function clockStill<T>(fn: () => Promise<T>): Promise<T> {
  const now = Date.now()
  const spy = vi.spyOn(Date, 'now').mockReturnValue(now)
  try {
    return await fn()
  } finally {
    spy.mockRestore()
  }
}

describe('doomed claims', () => {
  it('are answered over HTTP without a statement, with the documented 409, the same as the database would give', async () => {
    const gated = await booking(true, { rows: ['A', 'B'] })
    const plain = await booking(false, { rows: ['A', 'B'] })
    for (const o of [gated, plain]) {
      for (let i = 0; i < 10; i += 4) {
        const seats = ['A', 'B'].flatMap((r) => [1, 2, 3, 4, 5].map((n) => `${r}${n}`)).slice(i, i + 4)
        expect((await claim(o, `holder-${i}`, { seats })).status).toBe(201)
      }
    }
    const asked = { seats: ['B5', 'A1'] }
    const answers = await clockStill(async () => {
      const before = sent.length
      const got = await Promise.all(Array.from({ length: 20 }, (_, i) => claim(gated, `late-${i}`, asked)))
      expect(sent.slice(before)).toEqual([])
      return got
    })
    const fromDb = await claim(plain, 'late-db', asked)
    for (const a of [...answers, fromDb]) {
      expect(a.status).toBe(409)
      expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8')
      expect(a.headers.get('cache-control')).toBe('no-store')
      // The documented shape, key by key and in this order: code, message, taken, nearest.
      expect(Object.keys(a.body)).toEqual(['error'])
      expect(Object.keys(a.body.error)).toEqual(['code', 'message', 'taken', 'nearest'])
      expect(a.body.error.code).toBe('ERR_SEATS_TAKEN')
      expect([...a.body.error.taken].sort()).toEqual(['A1', 'B5'])
      expect(a.body.error.nearest).toEqual([])
      expect(a.body.error.message).toBe(`Taken: ${a.body.error.taken.join(', ')}`)
    }
  })

  it("write the bodies and headers that rendering the database path's errors writes", () => {
    for (const [taken, nearest] of [
      [['A1'], ['A2', 'B1']],
      [['B5', 'A1'], []],
      [['AB10'], ['AB9', 'AA10', 'AC10']],
    ] as const) {
      const err = new AnteroomError('ERR_SEATS_TAKEN', `Taken: ${taken.join(', ')}`, { extra: { taken, nearest } })
      expect(seatsTakenBody(taken, nearest)).toBe(JSON.stringify(errorBody(err)))
    }
    const short = [
      { item: 'night-12', wanted: 1, left: 0 },
      { item: 'night-13', wanted: 2, left: 1 },
    ]
    expect(itemsShortBody(short)).toBe(JSON.stringify(errorBody(shortItems(short))))
    expect(JSON.parse(itemsShortBody(short))).toEqual({
      error: {
        code: 'ERR_ITEMS_SHORT',
        message: 'Not enough left: night-12 (1 wanted, 0 left), night-13 (2 wanted, 1 left)',
        field: 'items',
        short,
      },
    })
    expect(TAKEN_HEADERS).toEqual({ 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' })
    expect(SHORT_HEADERS).toEqual(TAKEN_HEADERS)
  })

  it('of items are answered without a statement, with ERR_ITEMS_SHORT naming what is left', async () => {
    const o = await booking(true, { items: [{ id: 'night-12', quantity: 2 }] })
    expect((await claim(o, 'first', { items: [{ item: 'night-12', quantity: 2 }] })).status).toBe(201)
    const late = await clockStill(async () => {
      const before = sent.length
      const got = await claim(o, 'late', { items: [{ item: 'night-12', quantity: 1 }] })
      expect(sent.slice(before)).toEqual([])
      return got
    })
    expect(late.status).toBe(409)
    expect(late.body).toEqual({
      error: {
        code: 'ERR_ITEMS_SHORT',
        message: 'Not enough left: night-12 (1 wanted, 0 left)',
        field: 'items',
        short: [{ item: 'night-12', wanted: 1, left: 0 }],
      },
    })
  })

  it('with a malformed body get their 400 naming the field before the gate is asked, sold out or not', async () => {
    const o = await booking(true, { rows: ['A'] })
    expect((await claim(o, 'all', { seats: ['A1', 'A2', 'A3', 'A4'] })).status).toBe(201)
    expect((await claim(o, 'rest', { seats: ['A5'] })).status).toBe(201)
    const before = sent.length
    const cases: [unknown, string][] = [
      [{ seats: 'A1' }, 'seats'],
      [{ seats: ['A1'], colour: 'red' }, 'colour'],
      [{ seats: ['A1', 'A1'] }, 'seats'],
      [{ seats: ['A1', 'A2', 'A3', 'A4', 'A5'] }, 'seats'],
      [{ items: [{ item: 'night-12' }] }, 'items[0].quantity'],
    ]
    for (const [body, field] of cases) {
      const a = await claim(o, 'malformed', body)
      expect(a.status, JSON.stringify(body)).toBe(400)
      expect(a.body.error.code).toBe('ERR_BODY')
      expect(a.body.error.field, JSON.stringify(body)).toBe(field)
    }
    const notJson = await claim(o, 'malformed', '{"seats": [')
    expect(notJson.status).toBe(400)
    expect(notJson.body.error.code).toBe('ERR_BODY')
    // Refused before the gate: nothing was marked, and nothing was asked of PostgreSQL but the event.
    expect(sent.slice(before).every((s) => /event-get/.test(s) || /FROM events/i.test(s))).toBe(true)
  })

  it('are held to the body limit whether the body has a Content-Length or is chunked', async () => {
    const o = await booking(true, { rows: ['A'] })
    const big = JSON.stringify({ seats: ['A1'], pad: 'x'.repeat(MAX_BODY_BYTES) })
    const withLength = await claim(o, 'big', big)
    expect(withLength.status).toBe(413)
    const chunks = new TextEncoder().encode(big)
    const chunked = await fetch(`${o.url}/events/${o.event}/holds`, {
      method: 'POST',
      headers: { 'anteroom-admission': await tokenFor('big'), 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < chunks.length; i += 1024) c.enqueue(chunks.slice(i, i + 1024))
          c.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    expect(chunked.status).toBe(413)
    expect(((await chunked.json()) as { error: { code: string } }).error.code).toBe('ERR_BODY_TOO_LARGE')
  })
})

// PostgreSQL restarted mid-rush (issue #14): the booking origin on its own PostgreSQL server (not the
// shared one), a rush of holds and confirms, and a fast shutdown of that server while requests are in
// flight, then a start on the same port and data directory. Every request completes once or is
// answered 503 with Retry-After (never a 500, never a hang); a confirm cut off after its charge is
// finished by its repeat with the same Idempotency-Key and charged once; no seat is sold twice and
// sold = tickets = paid afterwards; the pool reconnects by itself.
import { createLocalJWKSet } from 'jose'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db } from '../src/adapters/postgres/db.js'
import { migrate } from '../src/adapters/postgres/migrate.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { createBookingApp } from '../src/booking/app.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import { isAnteroomError } from '../src/core/errors.js'
import type { PaymentProvider } from '../src/ports/payments.js'
import { type PostgresServer, startPostgres } from './support/postgres-server.js'

/** Every request is bounded by this; none may reach it. */
const REQUEST_BOUND_MS = 20_000
const ROWS = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H']
const SEATS = ROWS.flatMap((r) => Array.from({ length: 25 }, (_, i) => `${r}${i + 1}`))
/** Loops holding and releasing a seat of their own (transactions in flight when the server stops): the last seats. */
const CHURNERS = 10
/** The seats of the rush: all but the churners'. */
const RUSH_SEATS = SEATS.slice(0, SEATS.length - CHURNERS)
/** Visitors in the rush, each after one seat: 300 for 190 seats, so 110 seats are fought over. */
const VISITORS = 300
/** Confirms held at the payment gate when the server is stopped. */
const AT_GATE = 40
/** Loops reading the seat map, so that statements are in flight when the server stops. */
const READERS = 20

/** Conditions to wait on: `until(check)` resolves once check() holds, re-checked at every `changed()`. */
function conditions() {
  const watchers = new Set<() => void>()
  return {
    changed(): void {
      for (const w of [...watchers]) w()
    },
    until(check: () => boolean): Promise<void> {
      return new Promise((resolve) => {
        const w = () => {
          if (!check()) return
          watchers.delete(w)
          resolve()
        }
        watchers.add(w)
        w()
      })
    },
  }
}

interface Answer {
  status: number
  code?: string
  retryAfter: string | null
  // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
  body: Record<string, any>
}

let pg: PostgresServer
let db: Db

beforeAll(async () => {
  pg = await startPostgres()
  db = postgresDb(pg.url, { max: 10 })
  await migrate(db)
})

afterAll(async () => {
  await db?.close()
  await pg?.stop()
})

describe('PostgreSQL restarted mid-rush', () => {
  it('no double booking, a 503 with Retry-After or one completion per request, each key charged once, and the pool reconnects', async () => {
    const event = 'restart-night'
    await seedEvent(db, { id: event, name: 'Restart night', room: 'sale', priceCents: 2500, rows: ROWS, seatsPerRow: 25 })
    const keys = await importSigningKeys([await generateSigningJwk('edge-1')])
    const tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
    const payments = new TestPaymentProvider()
    const when = conditions()
    // The keys whose charge reached the provider and whose confirm has not been answered since.
    const charging = new Set<string>()
    const provider: PaymentProvider = {
      charge: (input) => {
        charging.add(input.idempotencyKey)
        when.changed()
        return payments.charge(input)
      },
      refund: (id) => payments.refund(id),
    }
    // What the driver said when the database was unavailable (the causes of ERR_DB_UNAVAILABLE).
    const causes: Record<string, number> = {}
    const noted = <T>(run: () => Promise<T>): Promise<T> =>
      run().catch((err: unknown) => {
        if (isAnteroomError(err, 'ERR_DB_UNAVAILABLE')) {
          const code = String((err.cause as { code?: unknown } | undefined)?.code)
          causes[code] = (causes[code] ?? 0) + 1
        }
        throw err
      })
    const watched: Db = {
      query: (text, params) => noted(() => db.query(text, params)),
      transaction: (fn) => noted(() => db.transaction(fn)),
      close: () => db.close(),
    }
    const store = new PostgresSeatStore(watched)
    const logs: Record<string, unknown>[] = []
    const app = createBookingApp({
      seats: store,
      payments: provider,
      admission: {
        jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
        issuer: 'anteroom',
        audience: 'origin',
        keys: createLocalJWKSet(tokens.jwks()),
      },
      log: (name, fields) => logs.push({ ...fields, log: name }),
    })
    const tokenFor = (visitor: string) =>
      tokens.sign(
        { sub: visitor, jti: `s-${visitor}`, room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 },
        Date.now(),
      )

    let phase: 'before' | 'down' | 'after' = 'before'
    let back = () => {}
    const serverBack = new Promise<void>((resolve) => {
      back = resolve
    })
    const answers: (Answer & { what: string; phase: string })[] = []
    let timedOut = 0

    /** One request, bounded; its answer is recorded with the phase the server was in when it was sent. */
    async function call(what: string, method: string, path: string, token: string, headers: Record<string, string> = {}, body?: unknown) {
      const sentIn = phase
      const request = (async (): Promise<Answer> => {
        const res = await app.request(path, {
          method,
          headers: { 'anteroom-admission': token, ...(method === 'GET' ? {} : { 'content-type': 'application/json' }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        const json = (await res.json()) as Answer['body']
        return { status: res.status, code: json.error?.code, retryAfter: res.headers.get('retry-after'), body: json }
      })()
      let timer: ReturnType<typeof setTimeout> | undefined
      const bound = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), REQUEST_BOUND_MS)
      })
      const a = await Promise.race([request, bound])
      clearTimeout(timer)
      if (a === 'timeout') {
        timedOut++
        throw new Error(`${what} ${path} took longer than ${REQUEST_BOUND_MS} ms`)
      }
      answers.push({ ...a, what, phase: sentIn })
      if (headers['idempotency-key'] !== undefined) charging.delete(headers['idempotency-key'])
      when.changed()
      return a
    }

    /**
     * A request repeated as a client does on a 503: after its Retry-After, here once the server is
     * back (a condition, not a timer); a few 503s after that (a lock timeout, say) are retried too.
     */
    async function retried(send: () => Promise<Answer>): Promise<Answer & { tries: number }> {
      for (let tries = 1; ; tries++) {
        const a = await send()
        if (a.status !== 503 || tries >= 20) return { ...a, tries }
        await serverBack
      }
    }

    // The rush: every visitor holds a seat, then confirms it with an Idempotency-Key. Charges wait at
    // the gate, so that confirms are in flight (charged or about to be) when the server stops.
    const gate = payments.pause()
    const visitors = await Promise.all(
      Array.from({ length: VISITORS }, async (_, i) => ({
        id: `rush-${i}`,
        token: await tokenFor(`rush-${i}`),
        seat: RUSH_SEATS[i % RUSH_SEATS.length] as string,
      })),
    )
    const purchases = visitors.map(async (v) => {
      const hold = await retried(() => call('hold', 'POST', `/events/${event}/holds`, v.token, {}, { seats: [v.seat] }))
      if (hold.status !== 201) return { visitor: v.id, hold, confirm: undefined }
      const key = `pay-${v.id}-0001`
      const confirm = await retried(() =>
        call('confirm', 'POST', `/holds/${hold.body.hold.id}/confirm`, v.token, { 'idempotency-key': key }),
      )
      return { visitor: v.id, key, hold, confirm }
    })
    // Statements and transactions in flight at the stop: readers of the seat map, and visitors who hold
    // and release a seat of their own over and over, until each has had an answer after the restart.
    const readerToken = await tokenFor('reader')
    const readers = Array.from({ length: READERS }, async () => {
      for (;;) {
        const a = await call('seat map', 'GET', `/events/${event}/seats`, readerToken)
        if (a.status === 503) await serverBack
        else if (phase === 'after') return
      }
    })
    const churners = SEATS.slice(RUSH_SEATS.length).map(async (seat, i) => {
      const token = await tokenFor(`churn-${i}`)
      for (;;) {
        const h = await call('churn hold', 'POST', `/events/${event}/holds`, token, {}, { seats: [seat] })
        if (h.status === 201) {
          const r = await call('churn release', 'DELETE', `/holds/${h.body.hold.id}`, token)
          if (r.status === 503) await serverBack
          else if (phase === 'after') return
        } else if (h.status === 503) await serverBack
        else if (phase === 'after') return
      }
    })

    await when.until(() => charging.size >= AT_GATE)
    const oldPid = pg.pid
    let downAnswers: Answer[] = []
    const newPid = await pg.restart(async () => {
      phase = 'down'
      const gated = charging.size
      // The gated confirms go on to book() while the server is away: charged, then cut off.
      gate.release()
      // New requests meet a server that is not there.
      const fresh = await tokenFor('fresh-while-down')
      downAnswers = await Promise.all([
        call('hold while down', 'POST', `/events/${event}/holds`, fresh, {}, { seats: ['A1'] }),
        call('seat map while down', 'GET', `/events/${event}/seats`, fresh),
      ])
      // Every confirm that reached the provider has been answered (a 503: book() had no database).
      await when.until(() => charging.size === 0)
      expect(gated).toBeGreaterThanOrEqual(AT_GATE)
    })
    phase = 'after'
    back()
    const results = await Promise.all(purchases)
    await Promise.all([...readers, ...churners])

    // The server was restarted by us, on the same port, as a new postmaster.
    expect(newPid).not.toBe(oldPid)
    expect(timedOut).toBe(0)

    // Never a 500: each answer is a completion or a 503 with Retry-After.
    const unexpected = answers.filter((a) => a.status >= 500 && a.status !== 503)
    expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([])
    const unavailable = answers.filter((a) => a.status === 503)
    for (const a of unavailable) {
      expect(['ERR_DB_UNAVAILABLE', 'ERR_DB_BUSY']).toContain(a.code)
      expect(a.retryAfter).toBe('1')
    }
    expect(logs.filter((l) => l.log === 'origin_error')).toEqual([])
    for (const a of downAnswers) expect(a).toMatchObject({ status: 503, code: 'ERR_DB_UNAVAILABLE', retryAfter: '1' })
    // The stop cut off work in flight: confirms after their charge, and statements of the readers.
    const cutConfirms = answers.filter((a) => a.what === 'confirm' && a.status === 503 && a.phase !== 'after')
    expect(cutConfirms.length).toBeGreaterThanOrEqual(AT_GATE)
    expect(answers.some((a) => a.what === 'seat map' && a.status === 503 && a.phase === 'before')).toBe(true)

    // What the driver reported: connections cut at the stop, and refused while the server was down.
    expect(
      Object.keys(causes).some((c) => ['CONNECTION_CLOSED', '57P01'].includes(c)),
      JSON.stringify(causes),
    ).toBe(true)
    expect(causes.ECONNREFUSED, JSON.stringify(causes)).toBeGreaterThan(0)

    // Every rush seat went to one visitor: sold to whoever got a 201, or still held by a visitor whose
    // hold was committed while its answer was lost to the stop (their repeat found the seat taken).
    const held = results.filter((r) => r.hold.status === 201)
    expect(results.filter((r) => r.hold.status !== 201).every((r) => r.hold.status === 409)).toBe(true)
    const [orphans] = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM seats WHERE event_id = $1 AND status = 'held' AND seat = ANY ($2::text[]) AND hold_id <> ALL ($3::uuid[])",
      [event, RUSH_SEATS, held.map((r) => r.hold.body.hold.id)],
    )
    expect(held.length + (orphans?.n ?? 0)).toBe(RUSH_SEATS.length)
    expect(orphans?.n ?? 0).toBeLessThanOrEqual(answers.filter((a) => a.what === 'hold' && a.status === 503).length)
    // Everyone who got a seat paid for it, with one charge per key; cut-off confirms were finished by their repeat.
    for (const r of held) expect(r.confirm, r.visitor).toMatchObject({ status: 200, body: { booked: true } })
    expect(held.filter((r) => (r.confirm?.tries ?? 0) > 1).length).toBeGreaterThanOrEqual(AT_GATE)
    const chargesByKey = new Map<string, number>()
    for (const ch of payments.charges) chargesByKey.set(ch.idempotencyKey, (chargesByKey.get(ch.idempotencyKey) ?? 0) + 1)
    expect([...chargesByKey.values()].every((n) => n === 1)).toBe(true)
    expect([...chargesByKey.keys()].sort()).toEqual(held.map((r) => r.key).sort())
    expect(payments.refunds).toEqual([])
    const chargeIds = new Set(payments.charges.map((ch) => ch.chargeId))
    for (const r of held) expect(chargeIds.has(r.confirm?.body.chargeId)).toBe(true)
    // No payment is left pending: no charge without its booking.
    expect(await db.query("SELECT status, count(*)::int AS n FROM payments WHERE status <> 'confirmed' GROUP BY status")).toEqual([])

    // No double booking: one ticket per seat, and sold = tickets = paid.
    const [tickets] = await db.query<{ n: number; seats: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT seat)::int AS seats FROM tickets WHERE event_id = $1',
      [event],
    )
    expect(tickets).toEqual({ n: held.length, seats: held.length })
    expect(await store.invariant(event)).toEqual({ sold: held.length, tickets: held.length, paid: held.length })

    // After the restart the pool serves again: a new event, a new visitor who holds and buys.
    await seedEvent(db, { id: 'after-night', name: 'After', room: 'sale', priceCents: 1000, rows: ['A'], seatsPerRow: 2 })
    const late = await tokenFor('after-restart')
    const hold = await call('hold after', 'POST', '/events/after-night/holds', late, {}, { seats: ['A1'] })
    expect(hold.status).toBe(201)
    const bought = await call('confirm after', 'POST', `/holds/${hold.body.hold.id}/confirm`, late, {
      'idempotency-key': 'after-restart-0001',
    })
    expect(bought).toMatchObject({ status: 200, body: { booked: true, amountCents: 1000 } })
    expect(await store.invariant('after-night')).toEqual({ sold: 1, tickets: 1, paid: 1 })
  })

  it('a backend killed mid-transaction: nothing of that transaction is committed, and the next transaction and statements run', async () => {
    const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
    try {
      await db.query('CREATE TABLE kill_probe (id int PRIMARY KEY)')
      const killed = db.transaction(async (tx) => {
        await tx.query('INSERT INTO kill_probe VALUES ($1)', [1])
        const [me] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
        await admin`SELECT pg_terminate_backend(${me?.pid ?? 0})`
        // Once the backend is gone (and its connection's close has had time to arrive), the rest of the
        // transaction must not run on a new connection, in autocommit.
        for (;;) {
          const [left] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${me?.pid ?? 0}`
          if (left?.n === 0) break
        }
        await admin`SELECT 1`
        await tx.query('INSERT INTO kill_probe VALUES ($1)', [2])
      })
      await expect(killed).rejects.toMatchObject({ code: 'ERR_DB_UNAVAILABLE' })
      expect(await db.query('SELECT id FROM kill_probe')).toEqual([])
      await db.transaction((tx) => tx.query('INSERT INTO kill_probe VALUES ($1)', [3]))
      expect(await db.query('SELECT id FROM kill_probe')).toEqual([{ id: 3 }])

      // Every other backend killed, the statement connections among them: a statement may meet the
      // closed connection once (503), then the fresh client answers.
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
      let answer: unknown
      for (let attempt = 0; attempt < 2 && answer === undefined; attempt++) {
        answer = await db.query<{ x: number }>('SELECT $1::int AS x', [7]).catch((err: { code?: string }) => {
          expect(err.code).toBe('ERR_DB_UNAVAILABLE')
          return undefined
        })
      }
      expect(answer).toEqual([{ x: 7 }])
      expect(await db.query<{ a: string[] }>('SELECT $1::text[] AS a', [['A1', 'B2']])).toEqual([{ a: ['A1', 'B2'] }])
    } finally {
      await admin.end({ timeout: 5 })
    }
  })
})

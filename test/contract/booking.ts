// The booking origin contract: holds, confirms, refunds and the proofs under concurrency, run
// against every database the origin supports (a real PostgreSQL server, embedded PGlite).
// Every request carries an admission token verified with the edge's public keys only.
// The tests are in test/contract/booking/, one file a topic; this file makes the database, the keys
// and the helpers they share.
import { createLocalJWKSet, SignJWT } from 'jose'
import { afterAll, beforeAll, describe } from 'vitest'
import { TestPaymentProvider } from '../../src/adapters/payments/test-provider.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { migrate } from '../../src/adapters/postgres/migrate.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { type ItemSeed, seedEvent } from '../../src/adapters/postgres/seed.js'
import { createBookingApp } from '../../src/booking/app.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys, type SigningKey } from '../../src/core/admission-token.js'
import { bodiesContract } from './booking/bodies.js'
import { confirmContract } from './booking/confirm.js'
import { contentionContract } from './booking/contention.js'
import { holdsContract } from './booking/holds.js'
import { itemsContract } from './booking/items.js'

export type App = ReturnType<typeof createBookingApp>

/** The database and keys, once made (in beforeAll), and a counter for unique event ids. */
interface State {
  db: Db
  tokens: AdmissionTokens
  signingKey: SigningKey
  seq: number
}

/** What each topic's tests need: an event and its app, tokens, calls, the seats' states. */
export type BookingContext = ReturnType<typeof helpers>

function helpers(s: State) {
  async function setup(
    options: {
      seatsPerRow?: number
      rows?: string[]
      maxPerVisitor?: number
      holdSeconds?: number
      openAdmissions?: 'accept' | 'refuse'
      endSessionOnPurchase?: boolean
      items?: ItemSeed[]
    } = {},
  ) {
    const event = `ev${Date.now().toString(36)}${s.seq++}`
    await seedEvent(s.db, {
      id: event,
      name: 'Test night',
      room: 'sale',
      priceCents: 2500,
      rows: options.rows ?? ['A', 'B', 'C', 'D'],
      seatsPerRow: options.seatsPerRow ?? 10,
      maxPerVisitor: options.maxPerVisitor ?? 4,
      holdSeconds: options.holdSeconds ?? 600,
      items: options.items,
    })
    const payments = new TestPaymentProvider()
    const store = new PostgresSeatStore(s.db)
    const app = createBookingApp({
      seats: store,
      payments,
      admission: {
        jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
        issuer: 'anteroom',
        audience: 'origin',
        keys: createLocalJWKSet(s.tokens.jwks()),
        ...(options.openAdmissions ? { openAdmissions: options.openAdmissions } : {}),
      },
      endSessionOnPurchase: options.endSessionOnPurchase,
      log: (event, fields) => {
        logs.push({ ...fields, log: event })
        if (event === 'origin_error') console.error(event, JSON.stringify(fields))
      },
    })
    const logs: Record<string, unknown>[] = []
    return { event, app, payments, store, logs }
  }

  async function tokenFor(visitor: string, room = 'sale', expSeconds = 600): Promise<string> {
    return s.tokens.sign(
      { sub: visitor, jti: `s-${visitor}`, room, arr: Date.now(), exp: Math.floor(Date.now() / 1000) + expSeconds },
      Date.now(),
    )
  }

  /** An open admission as the edge issues it without its store: the visitor's own sub, "open": true, 60 s. */
  async function openTokenFor(visitor: string, room = 'sale'): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ room, arr: Date.now(), open: true })
      .setProtectedHeader({ alg: 'ES256', kid: s.signingKey.kid, typ: 'JWT' })
      .setIssuer('anteroom')
      .setAudience('origin')
      .setSubject(visitor)
      .setJti(`s-${visitor}`)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(s.signingKey.privateKey)
  }

  async function call(
    app: App,
    method: string,
    path: string,
    o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token) headers['anteroom-admission'] = o.token
    // JSON bodies only; a POST says so even without a body, as every client of the origin does.
    if (o.body !== undefined || method === 'POST') headers['content-type'] = 'application/json'
    const res = await app.request(path, {
      method,
      headers,
      body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
    })
    // biome-ignore lint/suspicious/noExplicitAny: test responses are read field by field
    return { status: res.status, body: (await res.json()) as Record<string, any> }
  }

  async function statuses(event: string): Promise<Record<string, string>> {
    const rows = await s.db.query<{ seat: string; status: string }>('SELECT seat, status FROM seats WHERE event_id = $1', [event])
    return Object.fromEntries(rows.map((r) => [r.seat, r.status]))
  }

  async function expireHold(holdId: string): Promise<void> {
    // Moves the hold's expiry into the past on the database's own clock, instead of sleeping.
    await s.db.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1", [holdId])
    await s.db.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [holdId])
    await s.db.query("UPDATE hold_items SET expires_at = now() - interval '1 second' WHERE hold_id = $1", [holdId])
  }

  return {
    setup,
    tokenFor,
    openTokenFor,
    call,
    statuses,
    expireHold,
    get db() {
      return s.db
    },
    get tokens() {
      return s.tokens
    },
    get signingKey() {
      return s.signingKey
    },
    get seq() {
      return s.seq
    },
  }
}

export function bookingContract(name: string, makeDb: () => Promise<Db>): void {
  describe(`booking origin contract: ${name}`, () => {
    const s = { seq: 0 } as State

    beforeAll(async () => {
      s.db = await makeDb()
      await migrate(s.db)
      const keys = await importSigningKeys([await generateSigningJwk('edge-1')])
      s.signingKey = keys[0] as SigningKey
      s.tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
    })
    afterAll(async () => {
      await s.db.close()
    })

    const c = helpers(s)
    holdsContract(c)
    itemsContract(c)
    confirmContract(c)
    bodiesContract(c)
    contentionContract(c)
  })
}

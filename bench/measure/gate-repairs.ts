// Measurement 10: how often the reconciler has to repair the claim gate in a steady sale.
//   A sale of 2,000 seats through the booking origin's HTTP app with the gate on Redis and its
//   reconciler (every 2 s): visitors claim one or two seats; of the holds they get, some are bought
//   (confirm), some released, some abandoned (left to expire: holds last 3 s here). Repairs come from
//   races the gate cannot see (a release between the reconciler's read and its write, the gate's and
//   the database's clocks letting a hold lapse a moment apart). Reported per minute of sale, with the
//   invariant and the seats sold; no target (information, as the issue asks).
// Environment (optional): BENCH_GATE_SALE_SECONDS (20).
import { createLocalJWKSet } from 'jose'
import { TestPaymentProvider } from '../../src/adapters/payments/test-provider.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { seedEvent } from '../../src/adapters/postgres/seed.js'
import { createBookingApp } from '../../src/booking/app.js'
import { BookingGate } from '../../src/booking/gate.js'
import { Reconciler } from '../../src/booking/reconciler.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../../src/core/admission-token.js'
import { fmtInt, log, type Measured, sleep } from '../lib.js'
import { type BookingDatabase, bump, POOL } from '../postgres.js'

const SALE_SECONDS = Number(process.env.BENCH_GATE_SALE_SECONDS ?? 20)
const VISITORS = 20
const HOLD_SECONDS = 3
const RECONCILE_MS = 2000
const ROWS = Array.from({ length: 20 }, (_, i) => String.fromCharCode(65 + i))
const PER_ROW = 100

export async function measureGateRepairs(pg: BookingDatabase): Promise<Measured> {
  const db = pg.open(POOL)
  const gate = await pg.gate()
  const event = 'steady'
  await seedEvent(db, {
    id: event,
    name: 'Steady sale',
    room: 'sale',
    priceCents: 1000,
    rows: ROWS,
    seatsPerRow: PER_ROW,
    holdSeconds: HOLD_SECONDS,
  })
  const seats = ROWS.flatMap((r) => Array.from({ length: PER_ROW }, (_, i) => `${r}${i + 1}`))
  const store = new PostgresSeatStore(db)
  const reconciler = new Reconciler({ gate, store, events: async () => [event], periodMs: RECONCILE_MS })
  await reconciler.run()
  const tokens = new AdmissionTokens({
    keys: await importSigningKeys([await generateSigningJwk('bench')]),
    issuer: 'anteroom',
    audience: 'origin',
  })
  const app = createBookingApp({
    seats: store,
    payments: new TestPaymentProvider(),
    gate: new BookingGate(gate, store),
    reconciler,
    admission: { jwksUrl: 'http://127.0.0.1:1/', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
  })
  const outcomes: Record<string, number> = {}
  const repairsAtStart = reconciler.stats.repairs
  reconciler.start()
  log(`steady sale through the claim gate: ${VISITORS} visitors, ${fmtInt(seats.length)} seats, ${SALE_SECONDS} s`)
  const until = Date.now() + SALE_SECONDS * 1000
  let n = 0
  await Promise.all(
    Array.from({ length: VISITORS }, async (_, v) => {
      while (Date.now() < until && !pg.stopping()) {
        const visitor = `steady-${v}-${n++}`
        const now = Date.now()
        const token = await tokens.sign(
          { sub: visitor, jti: `j-${visitor}`, room: 'sale', arr: now, exp: Math.floor(now / 1000) + 600 },
          now,
        )
        const headers = { 'anteroom-admission': token, 'content-type': 'application/json' }
        const pick = Array.from({ length: 1 + (n % 2) }, () => seats[Math.floor(Math.random() * seats.length)] as string)
        const res = await app.request(`/events/${event}/holds`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ seats: [...new Set(pick)] }),
        })
        const body = (await res.json()) as { hold?: { id: string } }
        bump(outcomes, `hold ${res.status}`)
        if (res.status === 201 && body.hold) {
          const fate = Math.random()
          if (fate < 0.4) {
            const paid = await app.request(`/holds/${body.hold.id}/confirm`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': `k-${visitor}` },
            })
            await paid.arrayBuffer()
            bump(outcomes, `confirm ${paid.status}`)
          } else if (fate < 0.7) {
            const freed = await app.request(`/holds/${body.hold.id}`, { method: 'DELETE', headers })
            await freed.arrayBuffer()
            bump(outcomes, `release ${freed.status}`)
          } else bump(outcomes, 'abandoned')
        }
        await sleep(50)
      }
    }),
  )
  await reconciler.stop()
  const repairs = reconciler.stats.repairs - repairsAtStart
  const perMinute = repairs / (SALE_SECONDS / 60)
  const invariant = await store.invariant(event)
  await pg.close(db)
  const note =
    `steady sale through the claim gate (${VISITORS} visitors, ${fmtInt(seats.length)} seats, holds of ${HOLD_SECONDS} s, ` +
    `reconciler every ${RECONCILE_MS / 1000} s, ${SALE_SECONDS} s): outcomes ${JSON.stringify(outcomes)}; ${reconciler.stats.runs} reconciler runs, ` +
    `${repairs} repairs (${perMinute.toFixed(1)} a minute), ${reconciler.stats.failures} failed runs; sold ${invariant.sold}, tickets ${invariant.tickets}, paid ${invariant.paid}`
  const ok = invariant.sold === invariant.tickets && invariant.tickets === invariant.paid
  return {
    rows: [
      {
        id: 'gate_repairs_per_minute',
        measurement: '10. claim gate repairs a minute, steady sale with expiring holds',
        value: perMinute.toFixed(1),
        baseline: `${fmtInt(outcomes['hold 201'] ?? 0)} holds, ${fmtInt(invariant.sold)} sold`,
        ratio: '-',
        target: 'info',
        met: null,
      },
      {
        id: 'gate_steady_invariant',
        measurement: '10. steady sale: sold = tickets = paid',
        value: `${invariant.sold}=${invariant.tickets}=${invariant.paid}`,
        baseline: '-',
        ratio: '-',
        target: 'equal',
        met: ok,
      },
    ],
    notes: [note],
    warnings: ok ? [] : [`steady sale: invariant broken: ${JSON.stringify(invariant)}`],
    results: { gateRepairs: { repairs, perMinute, outcomes, invariant, reconciler: reconciler.stats } },
  }
}

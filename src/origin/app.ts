// createOriginApp: the booking origin behind the waiting room. Every route requires a valid
// admission; the visitor in the token (sub) holds whatever seats they claim. PostgreSQL decides
// every claim (see ../adapters/postgres/sql); payment happens outside any transaction. Bodies are
// JSON only and at most MAX_BODY_BYTES (./body.ts). Open admissions (issued by the edge without
// its store) are accepted like any other, each visitor under their own sub, and logged on a hold.
// A confirmed purchase ends the visitor's session (Anteroom-Command: end-session, when the room
// allows origin commands): they are done, and their slot goes to the next in line at once.
import { type Context, Hono } from 'hono'
import { AnteroomError, errorSpec, isAnteroomError } from '../core/errors.js'
import { errorBody, renderError } from '../http/errors.js'
import type { PaymentProvider } from '../ports/payments.js'
import type { EventInfo, Hold, SeatStore, StoredAnswer } from '../ports/seat-store.js'
import { type BodyEnv, jsonBodies } from './body.js'
import type { OriginGate } from './gate.js'
import { demoPage } from './page.js'
import type { Reconciler } from './reconciler.js'
import {
  ADMISSION_HEADER,
  type Admission,
  type AdmissionCheckOptions,
  admissionVerifier,
  peekAdmission,
  refuseAdmission,
  requireAdmission,
} from './verify.js'

export interface OriginDeps {
  seats: SeatStore
  payments: PaymentProvider
  admission: AdmissionCheckOptions
  /** How long a repeat of an Idempotency-Key waits for the first request to finish, ms. */
  repeatWaitMs?: number
  /**
   * The claim gate in front of PostgreSQL (./gate.ts): claims it knows are doomed are answered
   * without the database, and before the admission's signature check. Left out: PostgreSQL alone.
   */
  gate?: OriginGate
  /** The gate's reconciler, whose figures GET /events/:event/stock shows. */
  reconciler?: Reconciler
  /** Send Anteroom-Command: end-session with a confirmed purchase (and its replays); default false. */
  endSessionOnPurchase?: boolean
  log?: (event: string, fields: Record<string, unknown>) => void
}

type Env = { Variables: { admission: Admission } & BodyEnv['Variables'] }

const utf8 = new TextDecoder('utf-8', { fatal: true })

const MAX_SEATS_PER_REQUEST = 50
const SEAT_NAME = /^[A-Za-z0-9-]{1,16}$/
const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{8,200}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const badBody = (message: string, field?: string) => new AnteroomError('ERR_BODY', message, { field })

/** Parses {"seats": [...]}; a 400 names the problem. */
function readSeats(c: Context<Env>, event: EventInfo): string[] {
  let body: unknown
  try {
    body = JSON.parse(utf8.decode(c.get('body')))
  } catch {
    throw badBody('The body must be JSON like {"seats": ["A1", "A2"]}')
  }
  const seats = (body as { seats?: unknown } | null)?.seats
  if (!Array.isArray(seats)) throw badBody('seats: must be a list of seat names', 'seats')
  if (seats.length === 0) throw badBody('seats: must name at least one seat', 'seats')
  const max = Math.min(MAX_SEATS_PER_REQUEST, event.maxPerVisitor)
  if (seats.length > max) throw badBody(`seats: at most ${max} seats in one hold, got ${seats.length}`, 'seats')
  for (const [i, s] of seats.entries()) {
    if (typeof s !== 'string' || !SEAT_NAME.test(s)) throw badBody(`seats[${i}]: must be a seat name like "A12"`, `seats[${i}]`)
  }
  if (new Set(seats).size !== seats.length) throw badBody('seats: names a seat twice', 'seats')
  return seats as string[]
}

/** A checkout's answer, stored with its payment so that a repeat of the Idempotency-Key replays it. */
function failedCheckout(err: AnteroomError, more: Record<string, unknown>): StoredAnswer {
  return { status: errorSpec(err.code).status, body: { ...errorBody(err), ...more } }
}

export function createOriginApp(deps: OriginDeps): Hono<Env> {
  const app = new Hono<Env>()
  const { seats: store, payments } = deps
  const repeatWaitMs = deps.repeatWaitMs ?? 10_000
  /** Every error of the origin, thrown or returned, is rendered here (src/http/errors.ts). */
  const answer = (c: Context, err: unknown) => renderError(c, err, { json: true, log: (fields) => deps.log?.('origin_error', fields) })

  const gate = deps.gate
  const verify = admissionVerifier(deps.admission)

  // A claim, registered before the admission middleware: it asks the gate first, with the token only
  // read (peekAdmission), so that a claim the gate knows is doomed costs neither a signature check nor
  // the database. Whatever passes the gate is verified, then decided by PostgreSQL.
  app.post('/events/:event/holds', jsonBodies(), async (c) => {
    const token = c.req.header(ADMISSION_HEADER)
    const peeked = gate === undefined ? undefined : peekAdmission(token)
    const event = await store.event(c.req.param('event') ?? '')
    if (peeked === undefined || event === undefined || event.room !== peeked.room) {
      const checked = await verify(token)
      if (!checked.ok) return refuseAdmission(c, checked)
      c.set('admission', checked.admission)
      return claim(c, await eventFor(c), undefined)
    }
    const seats = readSeats(c, event)
    const id = crypto.randomUUID()
    const asked = await (gate as OriginGate).claim({ event: event.id, hold: id, seats, ttlMs: event.holdSeconds * 1000 })
    if (asked.kind === 'gone') {
      const taken = asked.gone.map((g) => g.unit.slice('seat:'.length))
      const nearest = asked.nearest.map((u) => u.slice('seat:'.length))
      return taken409(c, taken, nearest)
    }
    const checked = await verify(token)
    if (!checked.ok) {
      if (asked.kind === 'pass') await gate?.release(event.id, id)
      return refuseAdmission(c, checked)
    }
    c.set('admission', checked.admission)
    return claim(c, event, asked.kind === 'pass' ? id : undefined, seats)
  })

  app.use('*', requireAdmission(deps.admission))
  app.use('*', jsonBodies())

  /** The event, if it exists and the visitor's admission is for its room. */
  async function eventFor(c: Context<Env>): Promise<EventInfo> {
    const event = await store.event(c.req.param('event') ?? '')
    if (event === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such event')
    if (event.room !== c.get('admission').room) throw new AnteroomError('ERR_ADMISSION_WRONG_ROOM', 'The admission is for another room')
    return event
  }

  /** The hold, if it exists and belongs to this visitor; anything else is a 404. */
  async function ownHold(c: Context<Env>): Promise<Hold> {
    const id = c.req.param('hold') ?? ''
    const hold = UUID.test(id) ? await store.getHold(id) : undefined
    if (hold === undefined || hold.holder !== c.get('admission').sub) throw new AnteroomError('ERR_NOT_FOUND', 'No such hold')
    if (hold.room !== c.get('admission').room) throw new AnteroomError('ERR_ADMISSION_WRONG_ROOM', 'The admission is for another room')
    return hold
  }

  const taken409 = (c: Context, taken: string[], nearest: string[]) =>
    answer(c, new AnteroomError('ERR_SEATS_TAKEN', `Taken: ${taken.join(', ') || 'some of these seats'}`, { extra: { taken, nearest } }))

  /**
   * Holds the seats in PostgreSQL for the verified visitor. `gated` is the hold id the gate marked
   * the seats under: whatever the database answers other than a hold gives them back.
   */
  async function claim(c: Context<Env>, event: EventInfo, gated: string | undefined, asked?: string[]): Promise<Response> {
    const seats = asked ?? readSeats(c, event)
    const admission = c.get('admission')
    let outcome: Awaited<ReturnType<SeatStore['hold']>>
    try {
      outcome = await store.hold({ event, holder: admission.sub, seats, id: gated })
    } catch (err) {
      if (gated !== undefined) await gate?.release(event.id, gated)
      throw err
    }
    if (outcome.kind !== 'held' && gated !== undefined) await gate?.release(event.id, gated)
    switch (outcome.kind) {
      case 'held':
        // Open admissions are the edge failing open (its store was down): worth knowing afterwards.
        if (admission.open) deps.log?.('hold_open_admission', { event: event.id, hold: outcome.hold.id, seats: seats.length })
        return c.json({ hold: { id: outcome.hold.id, seats: outcome.hold.seats, expiresAt: outcome.hold.expiresAt } }, 201)
      case 'taken':
        return taken409(c, outcome.taken, outcome.nearest)
      case 'limit':
        return answer(
          c,
          new AnteroomError('ERR_VISITOR_LIMIT', `At most ${outcome.limit} seats per visitor; you have ${outcome.current}`, {
            extra: { limit: outcome.limit, current: outcome.current },
          }),
        )
      case 'unknown-seats':
        return answer(
          c,
          new AnteroomError('ERR_UNKNOWN_SEATS', `No such seats: ${outcome.unknown.join(', ')}`, {
            field: 'seats',
            extra: { unknown: outcome.unknown },
          }),
        )
      default:
        throw new AnteroomError('ERR_INTERNAL', `Unexpected hold outcome ${outcome.kind}`)
    }
  }

  app.get('/', (c) => c.html(demoPage()))

  app.get('/events/:event/seats', async (c) => {
    const event = await eventFor(c)
    return c.json({ event: { id: event.id, name: event.name, priceCents: event.priceCents }, seats: await store.seatMap(event.id) })
  })

  const replay = (c: Context, answer: StoredAnswer) => {
    // A repeat of a purchase that went through ends the session too: the first answer may have been lost.
    if (deps.endSessionOnPurchase && answer.status === 200 && (answer.body as { booked?: unknown }).booked === true) {
      c.header('anteroom-command', 'end-session')
    }
    return c.json(answer.body as object, answer.status as 200)
  }

  app.post('/holds/:hold/confirm', async (c) => {
    const key = c.req.header('idempotency-key')
    if (key === undefined || !IDEMPOTENCY_KEY.test(key)) {
      throw new AnteroomError('ERR_IDEMPOTENCY_KEY', 'An Idempotency-Key header of 8-200 letters, digits or _.:- is required', {
        field: 'Idempotency-Key',
      })
    }
    const hold = await ownHold(c)
    const amountCents = hold.priceCents * hold.seats.length
    const seen = await store.beginPayment({ key, holdId: hold.id, holder: hold.holder, amountCents })
    if (seen !== undefined) {
      if (seen.holdId !== hold.id || seen.holder !== hold.holder) {
        throw new AnteroomError('ERR_IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another checkout')
      }
      // A repeat: answer what the first request answered, waiting for it if it is still running.
      for (let waited = 0; ; waited += 50) {
        const payment = await store.getPayment(key)
        if (payment?.responseStatus != null) return replay(c, { status: payment.responseStatus, body: payment.response })
        // Retry-After: 1 (the registry's).
        if (waited >= repeatWaitMs)
          return answer(c, new AnteroomError('ERR_IN_PROGRESS', 'This checkout is still being processed; try again'))
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    if (!hold.live) {
      const lost = failedCheckout(new AnteroomError('ERR_HOLD_LOST', 'The hold has expired or ended; nothing was charged'), {
        refunded: false,
      })
      await store.finishPayment(key, 'failed', null, lost)
      return replay(c, lost)
    }
    let chargeId: string
    try {
      chargeId = (await payments.charge({ idempotencyKey: key, amountCents, holder: hold.holder })).chargeId
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_PAYMENT_DECLINED')) throw err
      const declined = failedCheckout(err, {})
      await store.finishPayment(key, 'failed', null, declined)
      return replay(c, declined)
    }
    const booked = await store.book({
      hold,
      paymentKey: key,
      chargeId,
      answer: (tickets) => ({ status: 200, body: { booked: true, holdId: hold.id, chargeId, amountCents, tickets } }),
    })
    if (booked !== undefined) {
      await gate?.sold(hold)
      return replay(c, booked)
    }
    // The hold was lost while the payment ran: give the money back and say so.
    await gate?.release(hold.eventId, hold.id)
    await payments.refund(chargeId)
    const refunded = failedCheckout(
      new AnteroomError('ERR_HOLD_LOST', 'The hold expired and the seats went to someone else; your payment was refunded'),
      { refunded: true, chargeId },
    )
    await store.finishPayment(key, 'refunded', chargeId, refunded)
    return replay(c, refunded)
  })

  app.delete('/holds/:hold', async (c) => {
    const hold = await ownHold(c)
    if (hold.status !== 'active') return answer(c, new AnteroomError('ERR_HOLD_NOT_ACTIVE', `The hold is already ${hold.status}`))
    const released = await store.release(hold.id, hold.holder)
    await gate?.release(hold.eventId, hold.id)
    return c.json({ released })
  })

  // What the gate counts for the event (what the waiting room reads), and how the gate is kept honest.
  app.get('/events/:event/stock', async (c) => {
    const event = await eventFor(c)
    const counts = gate === undefined ? undefined : await gate.gate.counts(event.id).catch(() => undefined)
    return c.json({ event: event.id, counts: counts ?? null, gate: gate?.stats ?? null, reconciler: deps.reconciler?.stats ?? null })
  })

  app.get('/events/:event/invariant', async (c) => {
    const event = await eventFor(c)
    const r = await store.invariant(event.id)
    return c.json({ ...r, ok: r.sold === r.tickets && r.tickets === r.paid })
  })

  app.notFound((c) => answer(c, new AnteroomError('ERR_NOT_FOUND', 'No such route')))

  // ERR_DB_BUSY is a 503 with Retry-After: 1; anything unexpected a 500 ERR_INTERNAL, logged.
  app.onError((err, c) => answer(c, err))

  return app
}

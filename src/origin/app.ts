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
import type { EventInfo, Hold, Payment, SeatStore, StoredAnswer } from '../ports/seat-store.js'
import { type BodyEnv, jsonBodies } from './body.js'
import { demoPage } from './page.js'
import { type Admission, type AdmissionCheckOptions, requireAdmission } from './verify.js'

export interface OriginDeps {
  seats: SeatStore
  payments: PaymentProvider
  admission: AdmissionCheckOptions
  /**
   * How long a repeat of an Idempotency-Key waits for the first request to finish, ms: then a first
   * request in this process is answered ERR_IN_PROGRESS, and one elsewhere is taken as stopped and resumed.
   */
  repeatWaitMs?: number
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

/** Whether p settles (either way) before the deadline (a Date.now() value). */
async function settles(p: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()))
  })
  const settled = p.then(
    () => true,
    () => true,
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
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

  app.get('/', (c) => c.html(demoPage()))

  app.get('/events/:event/seats', async (c) => {
    const event = await eventFor(c)
    return c.json({ event: { id: event.id, name: event.name, priceCents: event.priceCents }, seats: await store.seatMap(event.id) })
  })

  app.post('/events/:event/holds', async (c) => {
    const event = await eventFor(c)
    const seats = readSeats(c, event)
    const admission = c.get('admission')
    const outcome = await store.hold({ event, holder: admission.sub, seats })
    switch (outcome.kind) {
      case 'held':
        // Open admissions are the edge failing open (its store was down): worth knowing afterwards.
        if (admission.open) deps.log?.('hold_open_admission', { event: event.id, hold: outcome.hold.id, seats: seats.length })
        return c.json({ hold: { id: outcome.hold.id, seats: outcome.hold.seats, expiresAt: outcome.hold.expiresAt } }, 201)
      case 'taken':
        return answer(
          c,
          new AnteroomError('ERR_SEATS_TAKEN', `Taken: ${outcome.taken.join(', ') || 'some of these seats'}`, {
            extra: { taken: outcome.taken, nearest: outcome.nearest },
          }),
        )
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
    }
  })

  const replay = (c: Context, answer: StoredAnswer) => {
    // A repeat of a purchase that went through ends the session too: the first answer may have been lost.
    if (deps.endSessionOnPurchase && answer.status === 200 && (answer.body as { booked?: unknown }).booked === true) {
      c.header('anteroom-command', 'end-session')
    }
    return c.json(answer.body as object, answer.status as 200)
  }

  /** Checkouts running in this process, by Idempotency-Key: a repeat here waits for the first one. */
  const running = new Map<string, Promise<StoredAnswer>>()
  /**
   * Keys whose checkout failed in this process after its payment row was written (the database went
   * away mid-checkout): nothing runs them any more, so their next repeat finishes them at once.
   */
  const abandoned = new Set<string>()

  const stored = (p: Payment): StoredAnswer => ({ status: p.responseStatus as number, body: p.response })

  /** Records how a checkout ended unless another request for its key did first, and returns the stored answer. */
  async function finish(key: string, status: 'refunded' | 'failed', chargeId: string | null, ended: StoredAnswer): Promise<StoredAnswer> {
    await store.finishPayment(key, status, chargeId, ended)
    const p = await store.getPayment(key)
    return p?.responseStatus != null ? stored(p) : ended
  }

  /**
   * One checkout for a key. A key whose first request stopped before storing its answer (the
   * database went away after the charge, say) is resumed by its repeat: the charge is asked for again
   * by the same key (the provider returns the first charge), then booked or refunded. A resumed
   * checkout may run alongside its first request in another process: the provider charges once per
   * key, a finish only writes over a pending payment (payment-finish.sql), and a lost hold is only
   * refunded when no request for the key booked it.
   */
  async function checkout(key: string, hold: Hold, amountCents: number, deadline: number): Promise<StoredAnswer> {
    const seen = await store.beginPayment({ key, holdId: hold.id, holder: hold.holder, amountCents })
    if (seen !== undefined) {
      if (seen.holdId !== hold.id || seen.holder !== hold.holder) {
        throw new AnteroomError('ERR_IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another checkout')
      }
      // A repeat: answer what the first request answered, waiting for it if it may still be running
      // in another process; at the deadline, or at once if it failed here, it is resumed.
      for (let payment: Payment | undefined = seen; ; payment = await store.getPayment(key)) {
        if (payment?.responseStatus != null) return stored(payment)
        if (abandoned.has(key) || Date.now() >= deadline) break
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    abandoned.delete(key)
    return charged(key, hold, amountCents, seen !== undefined)
  }

  async function charged(key: string, hold: Hold, amountCents: number, resumed: boolean): Promise<StoredAnswer> {
    // A resumed checkout may have been charged already, so it does not take this short cut: it asks for
    // the charge again and refunds it below if the hold is gone.
    if (!hold.live && !resumed) {
      const lost = failedCheckout(new AnteroomError('ERR_HOLD_LOST', 'The hold has expired or ended; nothing was charged'), {
        refunded: false,
      })
      return finish(key, 'failed', null, lost)
    }
    let chargeId: string
    try {
      chargeId = (await payments.charge({ idempotencyKey: key, amountCents, holder: hold.holder })).chargeId
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_PAYMENT_DECLINED')) throw err
      return finish(key, 'failed', null, failedCheckout(err, {}))
    }
    const booked = await store.book({
      hold,
      paymentKey: key,
      chargeId,
      answer: (tickets) => ({ status: 200, body: { booked: true, holdId: hold.id, chargeId, amountCents, tickets } }),
    })
    if (booked !== undefined) return booked
    // Not booked: another request for this key may have booked the hold meanwhile; then that is the answer.
    const now = await store.getPayment(key)
    if (now?.status === 'confirmed' && now.responseStatus != null) return stored(now)
    // The hold was lost while the payment ran: give the money back and say so.
    await payments.refund(chargeId)
    const refunded = failedCheckout(
      new AnteroomError('ERR_HOLD_LOST', 'The hold expired and the seats went to someone else; your payment was refunded'),
      { refunded: true, chargeId },
    )
    return finish(key, 'refunded', chargeId, refunded)
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
    const deadline = Date.now() + repeatWaitMs
    // A repeat of a checkout running in this process waits for it (then replays its answer, or resumes it).
    for (let first = running.get(key); first !== undefined; first = running.get(key)) {
      if (!(await settles(first, deadline))) {
        // Retry-After: 1 (the registry's).
        return answer(c, new AnteroomError('ERR_IN_PROGRESS', 'This checkout is still being processed; try again'))
      }
    }
    const attempt = checkout(key, hold, amountCents, deadline)
    running.set(key, attempt)
    try {
      return replay(c, await attempt)
    } catch (err) {
      // A decline or a lost hold is a stored answer; this is anything else, the database away mostly.
      // The payment row may have been written (or its answer lost): the next repeat resumes it at once.
      abandoned.add(key)
      if (abandoned.size > 10_000) abandoned.delete(abandoned.values().next().value as string)
      throw err
    } finally {
      if (running.get(key) === attempt) running.delete(key)
    }
  })

  app.delete('/holds/:hold', async (c) => {
    const hold = await ownHold(c)
    if (hold.status !== 'active') return answer(c, new AnteroomError('ERR_HOLD_NOT_ACTIVE', `The hold is already ${hold.status}`))
    return c.json({ released: await store.release(hold.id, hold.holder) })
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

// createBookingApp: the booking origin behind the waiting room. Every route requires a valid
// admission; the visitor in the token (sub) holds whatever seats they claim. PostgreSQL decides
// every claim (see ../adapters/postgres/sql); payment happens outside any transaction. Bodies are
// JSON only and at most MAX_BODY_BYTES (./body.ts). Open admissions (issued by the edge without
// its store) are accepted like any other, each visitor under their own sub, and logged on a hold.
// A confirmed purchase ends the visitor's session (Anteroom-Command: end-session, when the room
// allows origin commands): they are done, and their slot goes to the next in line at once.
import { type Context, Hono } from 'hono'
import { AnteroomError, errorSpec, isAnteroomError } from '../core/errors.js'
import type { MetricsExporter } from '../core/metrics.js'
import { errorBody, renderError } from '../http/errors.js'
import { bearerIn } from '../http/metrics.js'
import { requestIdOf } from '../http/request-id.js'
import type { GateClaim } from '../ports/claim-gate.js'
import type { PaymentProvider } from '../ports/payments.js'
import type { EventInfo, Hold, Payment, SeatStore, StoredAnswer } from '../ports/seat-store.js'
import { bookingApiDocument } from './api-description.js'
import { type BodyEnv, jsonBodies } from './body.js'
import {
  type Claim,
  HOLD_ID,
  heldBody,
  holdAmount,
  IDEMPOTENCY_KEY,
  LANE_ENTRY_ID,
  readClaim,
  releasedBody,
  shortItems,
  unknownItems,
} from './claims.js'
import { type BookingGate, holdUnits, ITEM_UNIT, itemUnit, SEAT_UNIT } from './gate.js'
import type { BookingLane, PendingClaim } from './lane/client.js'
import type { BookingMeters, ConfirmOutcome, HoldOutcome } from './metrics.js'
import { demoPage } from './page.js'
import type { Reconciler } from './reconciler.js'
import { itemsShortBody, SHORT_HEADERS, seatsTakenBody, TAKEN_HEADERS, takenMessage } from './refusals.js'
import {
  ADMISSION_HEADER,
  type Admission,
  type AdmissionCheckOptions,
  admissionVerifier,
  peekAdmission,
  refuseAdmission,
  requireAdmission,
} from './verify.js'

export interface BookingDeps {
  seats: SeatStore
  payments: PaymentProvider
  admission: AdmissionCheckOptions
  /**
   * How long a repeat of an Idempotency-Key waits for the first request to finish, ms: then a first
   * request in this process is answered ERR_IN_PROGRESS, and one elsewhere is taken as stopped and resumed.
   */
  repeatWaitMs?: number
  /**
   * The claim gate in front of PostgreSQL (./gate.ts): claims it knows are doomed are answered
   * without the database, and before the admission's signature check. Left out: PostgreSQL alone.
   */
  gate?: BookingGate
  /**
   * The ordered lane (./lane/client.ts): claims for the events it is on for are decided by the event's
   * allocator, in arrival order, instead of one by one in PostgreSQL. Left out: off for every event.
   */
  lane?: BookingLane
  /** The gate's reconciler, whose figures GET /events/:event/stock shows. */
  reconciler?: Reconciler
  /** Send Anteroom-Command: end-session with a confirmed purchase (and its replays); default false. */
  endSessionOnPurchase?: boolean
  log?: (event: string, fields: Record<string, unknown>) => void
  /** The request's id in log lines (src/http/request-id.ts); made per request when unset. */
  requestId?: (c: Context) => string
  /** Counts holds and confirms (./metrics.ts); unset: metrics are off. */
  meters?: BookingMeters
  /** Serves GET /metrics: the exporter and the bearer tokens that may read it. */
  metrics?: { exporter: MetricsExporter; tokens: readonly string[] }
}

type Env = { Variables: { admission: Admission } & BodyEnv['Variables'] }

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

/** A hold's outcome (SeatStore.hold) as the metrics name it. */
const HOLD_OUTCOMES = {
  held: 'held',
  taken: 'taken',
  limit: 'limit',
  'unknown-seats': 'unknown_seats',
  short: 'short',
  'unknown-items': 'unknown_items',
} as const satisfies Record<Awaited<ReturnType<SeatStore['hold']>>['kind'], HoldOutcome>

/** How a checkout ended, from its stored answer. */
function confirmOutcome(ended: StoredAnswer): ConfirmOutcome {
  if (ended.status === 200) return 'booked'
  const body = ended.body as { refunded?: unknown; error?: { code?: unknown } }
  if (body.error?.code === 'ERR_PAYMENT_DECLINED') return 'declined'
  if (body.error?.code === 'ERR_HOLD_LOST') return body.refunded === true ? 'refunded' : 'hold_lost'
  return 'error'
}

/** A checkout's answer, stored with its payment so that a repeat of the Idempotency-Key replays it. */
function failedCheckout(err: AnteroomError, more: Record<string, unknown>): StoredAnswer {
  return { status: errorSpec(err.code).status, body: { ...errorBody(err), ...more } }
}

export function createBookingApp(deps: BookingDeps): Hono<Env> {
  const app = new Hono<Env>()
  const { seats: store, payments } = deps
  const repeatWaitMs = deps.repeatWaitMs ?? 10_000
  const requestId = deps.requestId ?? ((c: Context) => requestIdOf(c, undefined))
  /** Every error of the origin, thrown or returned, is rendered here (src/http/errors.ts). */
  const answer = (c: Context, err: unknown) =>
    renderError(c, err, { json: true, log: (fields) => deps.log?.('origin_error', { ...fields, requestId: requestId(c) }) })
  const meters = deps.meters

  // Prometheus metrics, for a bearer metrics or admin token: registered before the admission check.
  app.get('/metrics', async (c) => {
    const metrics = deps.metrics
    if (metrics === undefined) return answer(c, new AnteroomError('ERR_NOT_FOUND', 'Metrics are switched off (ANTEROOM_METRICS=off)'))
    if (!bearerIn(c.req.header('authorization'), metrics.tokens)) {
      c.header('www-authenticate', 'Bearer realm="anteroom-metrics"')
      return answer(
        c,
        new AnteroomError(
          'ERR_UNAUTHORIZED',
          'Metrics need Authorization: Bearer with the metrics token (ANTEROOM_METRICS_TOKEN) or an admin token',
        ),
      )
    }
    return c.body(await metrics.exporter.text(), 200, { 'content-type': metrics.exporter.contentType, 'cache-control': 'no-store' })
  })

  const gate = deps.gate
  const verify = admissionVerifier(deps.admission)

  // The API's description (OpenAPI 3.1), before the admission check: it is public, like its source.
  app.get('/openapi.json', (c) => c.json(bookingApiDocument(), 200, { 'cache-control': 'no-store' }))

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
    const asked = readClaim(c.get('body'), event)
    const id = crypto.randomUUID()
    const gated = await (gate as BookingGate).claim({ event: event.id, hold: id, ...asked, ttlMs: event.holdSeconds * 1000 })
    if (gated.kind === 'gone') {
      meters?.hold(event.id, 'gate')
      return gone409(c, gated, asked)
    }
    const checked = await verify(token)
    if (!checked.ok) {
      if (gated.kind === 'pass') await gate?.release(event.id, id)
      return refuseAdmission(c, checked)
    }
    c.set('admission', checked.admission)
    return claim(c, event, gated.kind === 'pass' ? id : undefined, asked)
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
    const hold = HOLD_ID.test(id) ? await store.getHold(id) : undefined
    if (hold === undefined || hold.holder !== c.get('admission').sub) throw new AnteroomError('ERR_NOT_FOUND', 'No such hold')
    if (hold.room !== c.get('admission').room) throw new AnteroomError('ERR_ADMISSION_WRONG_ROOM', 'The admission is for another room')
    return hold
  }

  const taken409 = (c: Context, taken: string[], nearest: string[]) =>
    answer(c, new AnteroomError('ERR_SEATS_TAKEN', takenMessage(taken), { extra: { taken, nearest } }))

  /**
   * The gate's refusal, in the words the database would use: seats taken first, else items short.
   * Written straight to JSON (./refusals.ts): the same body and headers as taken409 and shortItems.
   */
  const gone409 = (c: Context, gone: Extract<GateClaim, { kind: 'gone' }>, asked: Claim) => {
    const taken = gone.gone.filter((g) => g.unit.startsWith(SEAT_UNIT)).map((g) => g.unit.slice(SEAT_UNIT.length))
    if (taken.length > 0)
      return c.body(
        seatsTakenBody(
          taken,
          gone.nearest.map((u) => u.slice(SEAT_UNIT.length)),
        ),
        409,
        TAKEN_HEADERS,
      )
    const wanted = new Map(asked.items.map((i) => [itemUnit(i.item), i.quantity]))
    const short = gone.gone.map((g) => ({
      item: g.unit.slice(ITEM_UNIT.length),
      wanted: wanted.get(g.unit) ?? 0,
      left: Math.max(0, g.left),
    }))
    return c.body(itemsShortBody(short), 409, SHORT_HEADERS)
  }

  /**
   * Holds the seats and items in PostgreSQL for the verified visitor (through the event's ordered lane
   * when it is on). `gated` is the hold id the gate marked them under: whatever the database answers
   * other than a hold gives them back.
   */
  async function claim(c: Context<Env>, event: EventInfo, gated: string | undefined, asked?: Claim): Promise<Response> {
    const { seats, items } = asked ?? readClaim(c.get('body'), event)
    const admission = c.get('admission')
    let outcome: Awaited<ReturnType<SeatStore['hold']>> | PendingClaim
    try {
      const lane = deps.lane?.on(event.id) ? deps.lane : undefined
      outcome = lane
        ? await lane.hold({ event: event.id, holder: admission.sub, seats, items, id: gated })
        : await store.hold({ event, holder: admission.sub, seats, items, id: gated })
    } catch (err) {
      meters?.hold(event.id, 'error')
      if (gated !== undefined) await gate?.release(event.id, gated)
      throw err
    }
    if (outcome.kind === 'pending') return pendingAnswer(c, event, outcome)
    meters?.hold(event.id, HOLD_OUTCOMES[outcome.kind])
    if (outcome.kind !== 'held' && gated !== undefined) await gate?.release(event.id, gated)
    // Open admissions are the edge failing open (its store was down): worth knowing afterwards.
    if (outcome.kind === 'held' && admission.open)
      deps.log?.('hold_open_admission', { event: event.id, hold: outcome.hold.id, seats: seats.length, requestId: requestId(c) })
    return holdAnswer(c, outcome)
  }

  /** A lane claim not decided within the wait: 202, and where to poll it. */
  function pendingAnswer(c: Context, event: EventInfo, pending: PendingClaim): Response {
    const at = `/events/${encodeURIComponent(event.id)}/claims/${pending.claim}?entry=${pending.entry}`
    return c.json({ claim: { id: pending.claim, status: 'pending', entry: pending.entry } }, 202, { location: at, 'retry-after': '1' })
  }

  /** The answer of a decided claim: 201 with the hold, or the refusal. */
  function holdAnswer(c: Context, outcome: Awaited<ReturnType<SeatStore['hold']>>): Response {
    switch (outcome.kind) {
      case 'held':
        return c.json(heldBody(outcome.hold), 201)
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
      case 'short':
        return answer(c, shortItems(outcome.short))
      case 'unknown-items':
        return answer(c, unknownItems(outcome.unknown))
    }
  }

  app.get('/', (c) => c.html(demoPage()))

  // A lane claim's answer (the 202's Location): the claim's own answer once decided, 202 until then.
  app.get('/events/:event/claims/:claim', async (c) => {
    const event = await eventFor(c)
    const id = c.req.param('claim') ?? ''
    const entry = c.req.query('entry') ?? ''
    const found =
      deps.lane !== undefined && HOLD_ID.test(id) && LANE_ENTRY_ID.test(entry)
        ? await deps.lane.answer(event.id, id, entry, c.get('admission').sub)
        : undefined
    if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such claim')
    return found.kind === 'pending' ? pendingAnswer(c, event, found) : holdAnswer(c, found)
  })

  app.get('/events/:event/seats', async (c) => {
    const event = await eventFor(c)
    return c.json({ event: { id: event.id, name: event.name, priceCents: event.priceCents }, seats: await store.seatMap(event.id) })
  })

  app.get('/events/:event/items', async (c) => {
    const event = await eventFor(c)
    return c.json({ event: { id: event.id, name: event.name, priceCents: event.priceCents }, items: await store.itemMap(event.id) })
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
    if (booked !== undefined) {
      await gate?.sold(hold)
      await deps.lane?.sold(hold.eventId, hold.id, holdUnits(hold))
      return booked
    }
    // Not booked: another request for this key may have booked the hold meanwhile; then that is the answer.
    const now = await store.getPayment(key)
    if (now?.status === 'confirmed' && now.responseStatus != null) return stored(now)
    // The hold was lost while the payment ran: give the money back and say so.
    await gate?.release(hold.eventId, hold.id)
    await deps.lane?.released(hold.eventId, hold.id)
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
    const amountCents = holdAmount(hold)
    const deadline = Date.now() + repeatWaitMs
    // A repeat of a checkout running in this process waits for it (then replays its answer, or resumes it).
    for (let first = running.get(key); first !== undefined; first = running.get(key)) {
      if (!(await settles(first, deadline))) {
        meters?.confirm('in_progress')
        // Retry-After: 1 (the registry's).
        return answer(c, new AnteroomError('ERR_IN_PROGRESS', 'This checkout is still being processed; try again'))
      }
    }
    const attempt = checkout(key, hold, amountCents, deadline)
    running.set(key, attempt)
    try {
      const ended = await attempt
      meters?.confirm(confirmOutcome(ended))
      return replay(c, ended)
    } catch (err) {
      meters?.confirm('error')
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
    const released = await store.release(hold.id, hold.holder)
    await gate?.release(hold.eventId, hold.id)
    await deps.lane?.released(hold.eventId, hold.id)
    return c.json(releasedBody(hold, released))
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

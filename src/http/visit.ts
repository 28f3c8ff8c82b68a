// A visitor without a valid admission: their queue token (or, in a room with proof of work, a solved
// challenge: src/http/pow.ts; or an access code to redeem first: src/http/access.ts), one store poll,
// the decision (decideVisit, core/visit.ts), and the tokens and cookies that carry it out. A place in
// the room's separate lane is polled in the lane's own line (core/access.ts lineOf).
import { arrivalTimeUs, type Lane, laneOfArrival, lineOf } from '../core/access.js'
import { isAnteroomError } from '../core/errors.js'
import type { QueuedPoll } from '../core/eta.js'
import { asksHumanCheck, type HumanCheckStatus } from '../core/human-check.js'
import { pollLateness, stallMattersMs } from '../core/lateness.js'
import type { ChallengeStatus } from '../core/pow.js'
import { newVisitorId, type QueueTicket } from '../core/queue-token.js'
import { type AdmissionLimits, type RoomSettings, type Schedule, schedulePhase } from '../core/settings.js'
import { pollLimits, type StockStop, stockStop } from '../core/stock.js'
import { asksStore, decideVisit, type KeptPlace, NO_PLACE, type PollOutcome, type Verdict, type VisitorStatus } from '../core/visit.js'
import type { PollResult } from '../ports/queue-store.js'
import { accessValueIn, type LanePlace, redeemAccess } from './access.js'
import { signAdmission } from './admission.js'
import { queueCookieName, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { humanCheckStep } from './human-check.js'
import { admitNetwork, capsJoins } from './join-cap.js'
import { type RoomMeter, secondsSince, ticks, UNTIMED } from './metrics.js'
import { asksPow, powGate, powRefusal } from './pow.js'
import type { Incoming } from './request.js'

/** A verdict carried out: what to answer, with the admission token to forward and the cookies to set. */
export type Answer =
  | { kind: 'wait'; status: VisitorStatus; httpStatus: 200 | 503; cookies: string[]; redeemed?: true }
  | { kind: 'admit'; status: VisitorStatus; visitor: string; token: string; cookies: string[]; lane?: Lane; redeemed?: true }
  | { kind: 'open'; status: VisitorStatus; visitor: string; token: string; cookies: string[] }
  /** No place yet: the visitor must solve this challenge first (src/http/pow.ts). */
  | { kind: 'challenge'; status: ChallengeStatus }
  /** No place yet: the visitor must pass the human check first (src/http/human-check.ts). */
  | { kind: 'human_check'; status: HumanCheckStatus }

/** @param endedVisitor the visitor of an admission whose session an admin ended: they stay who they are (and out). */
export function visit(edge: EdgeContext, room: RoomSettings, req: Incoming, endedVisitor?: string): Promise<Answer> {
  const now = edge.now()
  // Read up to abandonAfter past its expiry; whether it still counts is the edge's lateness's to say.
  const abandonMs = room.abandonAfterSeconds * 1000
  const read = edge.deps.queueTokens.verify(readCookie(req.cookie, queueCookieName(room.id)), room.id, now - abandonMs)
  const token = read === undefined ? undefined : onTime(edge, room, read, now, abandonMs)
  // A token of an identity without a place (an ended visitor's) keeps who they are, and restores nothing.
  const ticket = token?.arrival === NO_PLACE ? undefined : token
  const known = endedVisitor ?? token?.visitor
  // A room linked to an event with nothing free lets nobody new in (core/stock.ts), from the edge's
  // last look at the event's stock: no store call for it here.
  const stop = stockStop(room, edge.deps.rooms.stock(room.id), now)
  const asks = asksStore(room, now, stop, ticket === undefined)
  // The visitor's id is settled below, or by joinThenPoll for a newcomer who must pass its steps first.
  // Every visit is counted; one in ANTEROOM_METRICS_TIME_EVERY is timed too (a clock read allocates).
  const started = edge.deps.meters?.room(room.id).timed() ? ticks() : UNTIMED
  // A place in a lane is one whose arrival lies in the lane's band (core/access.ts): the token says so.
  const lane = ticket === undefined ? undefined : laneOfArrival(ticket.arrival, now * 1000)
  const v: Visit = { edge, room, req, now, ticket, endedVisitor, stop, asks, visitor: '', started, lane, redeemed: undefined }
  // An access code or invite link to redeem first (a room that takes them; one store call more). A
  // visitor an admin ended is kept out whatever they bring: nothing is redeemed for them.
  const code = asks && endedVisitor === undefined ? accessValueIn(room, req) : undefined
  if (code !== undefined) return redeemThenVisit(v, known, code)
  // A scheduled room (its draw), or a newcomer to a room with a proof of work or a cap on joins: those
  // steps wait first.
  if (isScheduled(room) || (asks && ticket === undefined && (asksPow(room) || capsJoins(room) || asksHumanCheck(room))))
    return joinThenPoll(v, known)
  v.visitor = known ?? newVisitorId()
  // The poll the edge serves most: one store call, and one step after it.
  if (!asks) return Promise.resolve(answer(v, NOT_ASKED))
  return pollStore(v, undefined).then(
    (result) => answer(v, polledOutcome(v, result)),
    (err) => answer(v, unavailable(v, err)),
  )
}

/**
 * A queue token read past its expiry still counts while this edge's lateness covers it (at most
 * abandonAfter): the visitor polled when told, and the edge served the poll late (core/lateness.ts).
 * Each token's poll tells how late the edge is.
 */
function onTime(edge: EdgeContext, room: RoomSettings, token: QueueTicket, now: number, abandonMs: number): QueueTicket | undefined {
  const rooms = edge.deps.rooms
  if (token.arrival !== NO_PLACE) rooms.noteLate(pollLateness(now, token.arrival, token.expires, abandonMs, room.refreshSeconds * 1000))
  if (token.expires > now) return token
  return token.expires > now - Math.min(rooms.late(), abandonMs) ? token : undefined
}

/** A visit, as the steps after the store call read it. */
interface Visit {
  edge: EdgeContext
  room: RoomSettings
  req: Incoming
  now: number
  /** The place the visitor's verified queue token keeps, if any. */
  ticket: { arrival: number; expires: number } | undefined
  endedVisitor: string | undefined
  stop: StockStop | undefined
  asks: boolean
  visitor: string
  /** When the visit began, in the metrics' clock ticks (src/http/metrics.ts), if it is one of those timed; else UNTIMED. */
  started: number
  /** The lane of the visitor's place (their token's, or the code just redeemed); undefined: the public line. */
  lane: Lane | undefined
  /** The place a code redeemed in this visit gives (Poll.lane). */
  redeemed: LanePlace | undefined
}

const NOT_ASKED: PollOutcome = { kind: 'not-asked' }

/**
 * A visitor with an access code (src/http/access.ts): redeemed first, for their id (or a new one), then
 * the visit as any other, its poll taking the lane's place. A code holder is not asked for a proof of
 * work nor counted against the cap on joins: the code is their ticket, and a used one is spent.
 */
async function redeemThenVisit(v: Visit, known: string | undefined, code: string): Promise<Answer> {
  v.visitor = known ?? newVisitorId()
  v.redeemed = await redeemAccess(v.edge, v.room, v.req, v.visitor, code)
  v.lane = v.redeemed.lane
  let done: Answer
  if (isScheduled(v.room)) done = await joinThenPoll(v, v.visitor)
  else {
    const outcome = await pollStore(v, undefined).then(
      (result) => polledOutcome(v, result),
      (err) => unavailable(v, err),
    )
    done = await answer(v, outcome)
  }
  // A browser then goes to the same URL without the code (src/http/app.ts), so that a reload redeems nothing.
  if (done.kind === 'wait' || done.kind === 'admit') done.redeemed = true
  return done
}

/** A newcomer's steps before the store call (a proof of work, the cap on joins, a scheduled room's draw), then the visit. */
async function joinThenPoll(v: Visit, known: string | undefined): Promise<Answer> {
  const { edge, room, req, now, ticket, endedVisitor, asks } = v
  let visitor = known
  // A human check first (src/http/human-check.ts): the widget, the shadow lane, or on to a place; one
  // who passed it is not also asked for a proof of work.
  const checked = visitor === undefined && asks && asksHumanCheck(room)
  if (checked) {
    const step = await humanCheckStep(edge, room, req, now, v.stop)
    if (step.kind === 'answer') return step.answer
  }
  if (visitor === undefined && asksPow(room) && asks && !checked) {
    // A new place only for a solved challenge: its visitor id, so a replayed answer yields this same place.
    const gate = await powGate(edge, room, req)
    if (gate.kind === 'refused') {
      edge.deps.refusals.note(room.id, 'pow')
      const meter = edge.deps.meters?.room(room.id)
      if (meter !== undefined) meter.visits.challenge.value++
      if (gate.problem !== undefined) throw powRefusal(gate.problem, gate.status)
      return { kind: 'challenge', status: gate.status }
    }
    visitor = gate.visitor
  }
  visitor ??= newVisitorId()
  v.visitor = visitor
  // A new place: counted against the visitor's network (after the proof of work, so that failed
  // answers use up none of it), and refused (429) beyond the room's cap.
  if (ticket === undefined && endedVisitor === undefined && v.redeemed === undefined && capsJoins(room) && asks)
    await admitNetwork(edge, room, req)
  // A joiner during a scheduled room's pre-queue brings the place the draw gives them (core/draw.ts).
  const scheduled = isScheduled(room) ? room : undefined
  const draw =
    scheduled && ticket === undefined && schedulePhase(room, now) === 'prequeue'
      ? await edge.deps.draws.arrival(scheduled, visitor)
      : undefined
  const outcome = asks
    ? await pollStore(v, draw).then(
        (result) => polledOutcome(v, result),
        (err) => unavailable(v, err),
      )
    : NOT_ASKED
  if (scheduled) {
    const verdict = verdictOf(v, outcome)
    await showDraw(edge, scheduled, visitor, outcome, verdict)
    return carryOut(edge, room, req, visitor, verdict, v.lane)
  }
  return answer(v, outcome)
}

/** The decision on what the store said (core/visit.ts); a queued visitor's wait from the edge's last look at the room. */
function verdictOf(v: Visit, outcome: PollOutcome): Verdict {
  const { edge, room } = v
  // A place in the separate lane waits in the lane's line: its wait is estimated from the lane's.
  const line = lineOf(room, v.lane)
  const verdict = decideVisit(room, outcome, v.ticket?.arrival, v.now, (poll: QueuedPoll) => edge.deps.rooms.estimate(line, poll), v.stop)
  if (v.lane !== undefined && verdict.status.position !== null) verdict.status.lane = v.lane
  return verdict
}

/** The visit's answer, once the store has spoken (or was not asked). */
function answer(v: Visit, outcome: PollOutcome): Answer | Promise<Answer> {
  const verdict = verdictOf(v, outcome)
  const meter = v.edge.deps.meters?.room(v.room.id)
  if (meter !== undefined) meterVerdict(meter, v.room, v.started, verdict)
  return carryOut(v.edge, v.room, v.req, v.visitor, verdict, v.lane)
}

/** Counts a visit by its verdict, and its time from its start to the verdict (an admission's signature not included). */
export function meterVerdict(meter: RoomMeter, room: RoomSettings, started: number, verdict: Verdict): void {
  meter.visits[verdict.kind].value++
  if (started !== UNTIMED) meter.pollSeconds.observe(secondsSince(started))
  if (verdict.kind === 'admit') {
    // From arrival to admission. A drawn arrival lies before the opening by design (core/draw.ts), and
    // nobody got in before the opening: such a visitor's wait counts from it. A lane's counts from its
    // redemption (core/access.ts).
    const { now } = verdict.session
    const arrival = arrivalTimeUs(verdict.session.arrival, now * 1000)
    const from = room.schedule === null ? arrival / 1000 : Math.max(arrival / 1000, Date.parse(room.schedule.opensAt))
    meter.queueWait.observe(Math.max(0, now - from) / 1000)
  }
}

const isScheduled = (room: RoomSettings): room is RoomSettings & { schedule: Schedule } => room.schedule !== null

/**
 * In a scheduled room a visitor who holds a place sees their id, their ticket in the draw; after the
 * opening one who was in the draw sees their value and rank, and where to check them.
 */
async function showDraw(
  edge: EdgeContext,
  room: RoomSettings & { schedule: Schedule },
  visitor: string,
  outcome: PollOutcome,
  verdict: Verdict,
) {
  if (verdict.kind === 'wait' && verdict.place === undefined) return
  verdict.status.ticket = visitor
  if (outcome.kind !== 'polled' || outcome.result.state === 'ended' || outcome.result.drawRank === 0) return
  if (outcome.result.state === 'prequeue') return
  verdict.status.draw = {
    value: await edge.deps.draws.value(room, visitor),
    rank: outcome.result.drawRank,
    check: `/_anteroom/draw?room=${room.id}`,
  }
}

/** A room's admission limits, worked out once per settings object (the directory makes new ones when settings change). */
const roomLimits = new WeakMap<RoomSettings, AdmissionLimits>()
/** The same while its stock stops admissions: a paused room, as by an admin's pause (core/stock.ts). */
const stoppedLimits = new WeakMap<RoomSettings, AdmissionLimits>()
function limitsOf(room: RoomSettings, stop: StockStop | undefined): AdmissionLimits {
  const cache = stop === undefined ? roomLimits : stoppedLimits
  let limits = cache.get(room)
  if (limits === undefined) cache.set(room, (limits = Object.freeze(pollLimits(room, stop))))
  return limits
}

/**
 * One store call: the visitor's place or turn. While the room's stock stops admissions the rule is
 * handed a paused room (pollLimits), as by an admin's pause.
 */
function pollStore(v: Visit, draw: number | undefined): Promise<PollResult> {
  const { edge, ticket } = v
  // The room's line, or its separate lane's (a line of its own, with the lane's limits).
  const line = lineOf(v.room, v.lane)
  try {
    return edge.deps.queue.poll({
      room: line.id,
      visitor: v.visitor,
      arrival: ticket?.arrival,
      tokenExpires: ticket?.expires,
      draw,
      lane: v.redeemed?.arrival,
      limits: limitsOf(line, v.stop),
      now: edge.storeNow(),
      hint: edge.deps.rooms.hint(line.id, stallMattersMs(line.abandonAfterSeconds * 1000, line.refreshSeconds * 1000)),
    })
  } catch (err) {
    return Promise.reject(err)
  }
}

function polledOutcome(v: Visit, result: PollResult): PollOutcome {
  const line = lineOf(v.room, v.lane)
  v.edge.deps.rooms.noteLife(line.id, result.life)
  const meters = v.edge.deps.meters
  if (meters !== undefined) {
    if (v.started !== UNTIMED) meters.storeCall('poll', secondsSince(v.started), true)
    if (result.state !== 'ended' && line === v.room) meters.room(v.room.id).recovering = result.state === 'recovering'
  }
  return { kind: 'polled', result }
}

/** A store that does not answer is an outcome too; anything else it throws is not. */
function unavailable(v: Visit, err: unknown): PollOutcome {
  if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
  const meters = v.edge.deps.meters
  // A failure is counted whether or not the visit was timed; its time only if it was.
  if (meters !== undefined) meters.storeCall('poll', v.started === UNTIMED ? undefined : secondsSince(v.started), false)
  v.edge.deps.rooms.noteStoreFailure()
  v.edge.log('store_unavailable', { room: v.room.id, policy: v.room.onStoreError, requestId: v.edge.requestId(v.req.context) })
  return { kind: 'unavailable' }
}

/**
 * Signs what the verdict says: the admission (the store's, or an open one) and the queue token. A
 * wait is answered in the same turn; an admission is signed (ES256) first.
 */
function carryOut(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  visitor: string,
  verdict: Verdict,
  lane: Lane | undefined,
): Answer | Promise<Answer> {
  if (verdict.kind !== 'wait') return admit(edge, room, req, visitor, verdict, lane)
  if (verdict.place === undefined) return { kind: 'wait', status: verdict.status, httpStatus: verdict.httpStatus, cookies: [] }
  const cookie = placeCookie(edge, room, visitor, verdict.place, req.secure)
  return { kind: 'wait', status: verdict.status, httpStatus: verdict.httpStatus, cookies: [cookie] }
}

async function admit(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  visitor: string,
  verdict: Exclude<Verdict, { kind: 'wait' }>,
  lane: Lane | undefined,
): Promise<Answer> {
  const secure = req.secure
  const { session } = verdict
  const claims = {
    sub: visitor,
    jti: newVisitorId(),
    room: room.id,
    // Arrival in ms (the store counts in µs so that arrivals never tie); a lane's, when it was redeemed.
    arr: Math.floor(arrivalTimeUs(session.arrival, session.now * 1000) / 1000),
    exp: Math.floor(session.expires / 1000),
    // An open admission says so, so that an origin can tell it apart (src/booking/verify.ts).
    ...(verdict.kind === 'open' ? { open: true as const } : {}),
    // A lane's admission says which: its session is renewed and ended in the lane's line (core/access.ts).
    ...(lane === undefined ? {} : { lane }),
  }
  const { token, cookie } = await signAdmission(edge, room, claims, session.now, secure)
  if (verdict.kind === 'open') {
    const place = await placeCookie(edge, room, visitor, verdict.place, secure)
    return { kind: 'open', status: verdict.status, visitor, token, cookies: [cookie, place] }
  }
  edge.log('admitted', { room: room.id, requestId: edge.requestId(req.context), visitor, arrival: claims.arr, expires: claims.exp })
  const dropQueue = serializeCookie(queueCookieName(room.id), '', { maxAgeSeconds: 0, secure })
  return { kind: 'admit', status: verdict.status, visitor, token, cookies: [cookie, dropQueue], ...(lane === undefined ? {} : { lane }) }
}

/** The queue token that keeps a visitor's place, as a cookie. */
function placeCookie(edge: EdgeContext, room: RoomSettings, visitor: string, place: KeptPlace, secure: boolean): string {
  const token = edge.deps.queueTokens.sign({ room: room.id, visitor, arrival: place.arrival, expires: place.expires })
  return serializeCookie(queueCookieName(room.id), token, { maxAgeSeconds: place.maxAgeSeconds, secure })
}

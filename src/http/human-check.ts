// The human check at the edge (core/human-check.ts), a newcomer's first step in a room that asks for
// it (visit.ts, before the cap on joins and the store): a visitor in the shadow lane is answered from
// it at once; one who has not answered gets the widget (page: human-check-page.ts; JSON: state
// "human_check"); an answer goes to siteverify. Passed: on to a place in the real line. Failed: into
// the shadow lane (core/shadow.ts), answered without the store from then on. Siteverify could not say
// (an error, a timeout, no provider on this edge): the room's humanCheckOnError lets them join
// unchecked ("open") or holds them with 503 ERR_HUMAN_CHECK_UNAVAILABLE ("closed"). A room with a
// human check does not also ask for proof of work: the check is the stronger of the two.
import { AnteroomError } from '../core/errors.js'
import {
  HUMAN_CHECK_HEADER,
  type HumanCheckJudgement,
  type HumanCheckStatus,
  humanCheckStatus,
  judgeSiteVerify,
  plausibleToken,
} from '../core/human-check.js'
import { type RoomSettings, schedulePhase } from '../core/settings.js'
import { shadowPosition } from '../core/shadow.js'
import type { StockStop } from '../core/stock.js'
import { decideVisit, type VisitorStatus } from '../core/visit.js'
import type { PollResult } from '../ports/queue-store.js'
import { queueCookieName, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import type { Incoming } from './request.js'

/** What the human check answers instead of a place: the widget, or the shadow lane's queue page. */
export type HumanCheckAnswer =
  | { kind: 'human_check'; status: HumanCheckStatus }
  | { kind: 'wait'; status: VisitorStatus; httpStatus: 200; cookies: string[] }

/** Go on to a place in the real line, or answer this instead. */
export type HumanCheckStep = { kind: 'pass' } | { kind: 'answer'; answer: HumanCheckAnswer }

const PASS: HumanCheckStep = { kind: 'pass' }

/** A newcomer's human check; `stop` is the room's stock stop, which the shadow lane shows as the real line does. */
export async function humanCheckStep(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  now: number,
  stop: StockStop | undefined,
): Promise<HumanCheckStep> {
  const guards = edge.deps.guards
  if (guards === undefined) return unavailable(edge, room, req, { outcome: 'error', reason: 'no human check on this edge' })
  // Already in the shadow lane: the same answers as before, without the store.
  const shadow = guards.shadow.verify(readCookie(req.cookie, queueCookieName(room.id)), room.id, now)
  if (shadow !== undefined) return { kind: 'answer', answer: shadowAnswer(edge, room, req, shadow.visitor, shadow.arrival, now, stop) }
  const meter = guards.meters.human(room.id)
  const provider = guards.humanCheck
  if (provider === undefined) return unavailable(edge, room, req, { outcome: 'error', reason: 'no human check provider on this edge' })
  const token = req.context.req.header(HUMAN_CHECK_HEADER)
  if (token === undefined || token === '') {
    meter.outcomes.asked.value++
    return { kind: 'answer', answer: { kind: 'human_check', status: humanCheckStatus(room, provider.widget) } }
  }
  // A value no widget makes is not worth a call: it fails as a forged token would.
  const judgement: HumanCheckJudgement = plausibleToken(token)
    ? judgeSiteVerify(await provider.verifier.verify({ response: token, remoteip: req.client, idempotencyKey: crypto.randomUUID() }), {
        hostname: req.host,
        cdata: room.id,
      })
    : { outcome: 'failed', reason: 'not a token' }
  meter.outcomes[judgement.outcome].value++
  const fields = { room: room.id, outcome: judgement.outcome, reason: judgement.reason, requestId: edge.requestId(req.context) }
  if (judgement.outcome === 'passed') {
    edge.log('human_check_passed', fields)
    return PASS
  }
  if (judgement.outcome === 'failed') {
    edge.log('human_check_failed', fields)
    // Into the shadow lane, behind everyone who is waiting now.
    const seen = edge.deps.rooms.seen(room.id)
    const visitor = guards.shadow.newId({ ahead: seen?.waiting ?? 0, admitted: seen?.admitted ?? 0 })
    return { kind: 'answer', answer: shadowAnswer(edge, room, req, visitor, now * 1000, now, stop) }
  }
  return unavailable(edge, room, req, judgement)
}

/** Siteverify could not say: the room's humanCheckOnError decides. */
function unavailable(edge: EdgeContext, room: RoomSettings, req: Incoming, judgement: HumanCheckJudgement): HumanCheckStep {
  const open = room.humanCheckOnError === 'open'
  edge.log('human_check_unavailable', {
    room: room.id,
    outcome: judgement.outcome,
    reason: judgement.reason,
    policy: room.humanCheckOnError,
    requestId: edge.requestId(req.context),
  })
  if (open) return PASS
  throw new AnteroomError(
    'ERR_HUMAN_CHECK_UNAVAILABLE',
    'We could not check your answer just now, so no place in line was given yet. Please try again in a moment.',
    { field: 'Anteroom-Human-Check' },
  )
}

/** A life mark for the shadow lane's made-up poll: decideVisit does not read it. */
const NO_LIFE = Object.freeze({ epoch: 0, born: 0, seq: 0 })

/**
 * The shadow lane's answer: the queue page or JSON that a visitor at their place would get, from the
 * edge's last look at the room (no store call), and their shadow token re-signed as a queue token is.
 */
function shadowAnswer(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  visitor: string,
  arrival: number,
  now: number,
  stop: StockStop | undefined,
): HumanCheckAnswer {
  const guards = edge.deps.guards as NonNullable<EdgeContext['deps']['guards']>
  guards.meters.human(room.id).shadowVisits.value++
  const seen = edge.deps.rooms.seen(room.id)
  const origin = guards.shadow.origin(visitor)
  const position = shadowPosition(origin, seen?.admitted ?? origin.admitted)
  const waiting = Math.max(position, seen?.waiting ?? 0)
  const phase = schedulePhase(room, now)
  const state = phase === 'prequeue' ? 'prequeue' : room.mode === 'paused' || stop !== undefined ? 'paused' : 'queued'
  const result: PollResult = { state, arrival, position, waiting, admittedLastMinute: 0, now, drawRank: 0, life: NO_LIFE }
  const verdict = decideVisit(room, { kind: 'polled', result }, arrival, now, (poll) => edge.deps.rooms.estimate(room, poll), stop)
  if (verdict.kind !== 'wait' || verdict.place === undefined) {
    // decideVisit answers a polled, queued visitor with a place: anything else is a bug, not a visitor's doing.
    throw new AnteroomError('ERR_INTERNAL', 'the shadow lane made no place')
  }
  if (room.schedule !== null) verdict.status.ticket = visitor
  const { place } = verdict
  const token = guards.shadow.sign({ room: room.id, visitor, arrival: place.arrival, expires: place.expires })
  const cookie = serializeCookie(queueCookieName(room.id), token, { maxAgeSeconds: place.maxAgeSeconds, secure: req.secure })
  return { kind: 'wait', status: verdict.status, httpStatus: 200, cookies: [cookie] }
}

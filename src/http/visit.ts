// A visitor without a valid admission: their queue token (or, in a room with proof of work, a solved
// challenge: src/http/pow.ts), one store poll, the decision (decideVisit, core/visit.ts), and the
// tokens and cookies that carry it out.
import { isAnteroomError } from '../core/errors.js'
import type { QueuedPoll } from '../core/eta.js'
import type { ChallengeStatus } from '../core/pow.js'
import { newVisitorId } from '../core/queue-token.js'
import { admissionLimits, type RoomSettings } from '../core/settings.js'
import { asksStore, decideVisit, type KeptPlace, type PollOutcome, type Verdict, type VisitorStatus } from '../core/visit.js'
import { signAdmission } from './admission.js'
import { queueCookieName, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { asksPow, powGate, powRefusal } from './pow.js'
import type { Incoming } from './request.js'

/** A verdict carried out: what to answer, with the admission token to forward and the cookies to set. */
export type Answer =
  | { kind: 'wait'; status: VisitorStatus; httpStatus: 200 | 503; cookies: string[] }
  | { kind: 'admit'; status: VisitorStatus; token: string; cookies: string[] }
  | { kind: 'open'; status: VisitorStatus; token: string; cookies: string[] }
  /** No place yet: the visitor must solve this challenge first (src/http/pow.ts). */
  | { kind: 'challenge'; status: ChallengeStatus }

/** @param endedVisitor the visitor of an admission whose session an admin ended: they stay who they are (and out). */
export async function visit(edge: EdgeContext, room: RoomSettings, req: Incoming, endedVisitor?: string): Promise<Answer> {
  const now = edge.now()
  const ticket = await edge.deps.queueTokens.verify(readCookie(req.cookie, queueCookieName(room.id)), room.id, now)
  let visitor = endedVisitor ?? ticket?.visitor
  if (visitor === undefined && asksPow(room)) {
    // A new place only for a solved challenge: its visitor id, so a replayed answer yields this same place.
    const gate = await powGate(edge, room, req)
    if (gate.kind === 'refused') {
      // refusal: pow
      if (gate.problem !== undefined) throw powRefusal(gate.problem, gate.status)
      return { kind: 'challenge', status: gate.status }
    }
    visitor = gate.visitor
  }
  visitor ??= newVisitorId()
  const outcome: PollOutcome = asksStore(room) ? await pollStore(edge, room, visitor, ticket?.arrival) : { kind: 'not-asked' }
  // A queued visitor's wait comes from the edge's last look at the room (no store call).
  const estimate = (poll: QueuedPoll) => edge.deps.rooms.estimate(room, poll)
  return carryOut(edge, room, req, visitor, decideVisit(room, outcome, ticket?.arrival, now, estimate))
}

/** One store call: the visitor's place or turn; a store that does not answer is an outcome too. */
async function pollStore(edge: EdgeContext, room: RoomSettings, visitor: string, arrival: number | undefined): Promise<PollOutcome> {
  try {
    const result = await edge.deps.queue.poll({
      room: room.id,
      visitor,
      arrival,
      limits: admissionLimits(room),
      now: edge.storeNow(),
      hint: edge.deps.rooms.hint(room.id),
    })
    edge.deps.rooms.noteLife(room.id, result.life)
    return { kind: 'polled', result }
  } catch (err) {
    if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
    edge.log('store_unavailable', { room: room.id, policy: room.onStoreError })
    return { kind: 'unavailable' }
  }
}

/** Signs what the verdict says: the admission (the store's, or an open one) and the queue token. */
async function carryOut(edge: EdgeContext, room: RoomSettings, req: Incoming, visitor: string, verdict: Verdict): Promise<Answer> {
  const secure = req.secure
  if (verdict.kind === 'wait') {
    const cookies = verdict.place === undefined ? [] : [await placeCookie(edge, room, visitor, verdict.place, secure)]
    return { kind: 'wait', status: verdict.status, httpStatus: verdict.httpStatus, cookies }
  }
  const { session } = verdict
  const claims = {
    sub: visitor,
    jti: newVisitorId(),
    room: room.id,
    // Arrival in ms (the store counts in µs so that arrivals never tie).
    arr: Math.floor(session.arrival / 1000),
    exp: Math.floor(session.expires / 1000),
    // An open admission says so, so that an origin can tell it apart (src/origin/verify.ts).
    ...(verdict.kind === 'open' ? { open: true as const } : {}),
  }
  const { token, cookie } = await signAdmission(edge, room, claims, session.now, secure)
  if (verdict.kind === 'open') {
    return { kind: 'open', status: verdict.status, token, cookies: [cookie, await placeCookie(edge, room, visitor, verdict.place, secure)] }
  }
  const dropQueue = serializeCookie(queueCookieName(room.id), '', { maxAgeSeconds: 0, secure })
  return { kind: 'admit', status: verdict.status, token, cookies: [cookie, dropQueue] }
}

/** The queue token that keeps a visitor's place, as a cookie. */
async function placeCookie(edge: EdgeContext, room: RoomSettings, visitor: string, place: KeptPlace, secure: boolean): Promise<string> {
  const token = await edge.deps.queueTokens.sign({ room: room.id, visitor, arrival: place.arrival, expires: place.expires })
  return serializeCookie(queueCookieName(room.id), token, { maxAgeSeconds: place.maxAgeSeconds, secure })
}

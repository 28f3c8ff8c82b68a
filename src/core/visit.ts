// What the edge answers a visitor who holds no valid admission, decided from the room, the store's
// answer and the clock alone: a pure function, so the rule reads (and tests) without HTTP or tokens.
// The edge (src/http/visit.ts) asks the store, calls decideVisit, and signs what the verdict says.
import type { PollResult } from '../ports/queue-store.js'
import type { Lane } from './access.js'
import type { QueuedPoll, WaitEstimate } from './eta.js'
import { nextPollMs } from './polling.js'
import { type RoomSettings, schedulePhase } from './settings.js'
import type { StockStop } from './stock.js'

/** sold_out and all_held: a room linked to an event with nothing free (core/stock.ts). */
export const VISITOR_STATES = [
  'queued',
  'admitted',
  'paused',
  'closed',
  'busy',
  'ended',
  'recovering',
  'scheduled',
  'prequeue',
  'sold_out',
  'all_held',
] as const
export type VisitorState = (typeof VISITOR_STATES)[number]

/** A scheduled room's times, as a status carries them; the countdowns are from the edge's clock. */
export interface ScheduleStatus {
  prequeueAt: string
  opensAt: string
  closesAt: string | null
  /** Seconds until the pre-queue opens, and until the sale opens (0 once passed). */
  prequeueInSeconds: number
  opensInSeconds: number
}

/**
 * A visitor's state as clients see it: the body of GET /_anteroom/status and of a JSON answer on a
 * protected path (documented in the README), and the numbers of the queue page.
 */
export interface VisitorStatus {
  room: string
  state: VisitorState
  /** 1-based place in line; null without one. */
  position: number | null
  ahead: number | null
  waiting: number | null
  /**
   * The estimated wait, seconds: until the poll that lets the visitor in, if they poll every
   * refreshSeconds (core/eta.ts). null while nothing can be estimated (paused, recovering, closed).
   */
  etaSeconds: number | null
  /** The range around etaSeconds, [low, high] seconds; null with it. */
  etaRange: [number, number] | null
  refreshSeconds: number
  /**
   * When to poll again, seconds (ms precision): a waiting visitor's place has its own phase within the
   * refresh (core/polling.ts), so that visitors who arrived together do not poll together. Otherwise
   * refreshSeconds.
   */
  nextPollSeconds: number
  /** A scheduled room: its times (absent otherwise). */
  schedule?: ScheduleStatus
  /** A scheduled room: the visitor's id, their ticket in the draw (absent otherwise). */
  ticket?: string
  /** After a scheduled room's draw, for a visitor who was in it: their draw value (hex) and rank (core/draw.ts). */
  draw?: { value: string; rank: number; check: string }
  /** A visitor whose place is in a lane, from an access code or invite link (core/access.ts): which. */
  lane?: Lane
}

/** A queued visitor's wait, from what their poll answered (core/eta.ts), or null if none can be estimated. */
export type WaitEstimator = (poll: QueuedPoll) => WaitEstimate | null

/** What the store said about the visitor. A closed room does not ask it. */
export type PollOutcome = { kind: 'polled'; result: PollResult } | { kind: 'unavailable' } | { kind: 'not-asked' }

/** A place in line, kept in the visitor's queue token: their arrival (µs) until `expires` (ms). */
export interface KeptPlace {
  arrival: number
  expires: number
  maxAgeSeconds: number
}

/** An admission to sign: since `arrival` (µs), until `expires` (ms), judged at `now` (ms) on the clock that decided it. */
export interface Session {
  arrival: number
  expires: number
  now: number
}

export type Verdict =
  /** The queue page or its JSON, with this status; `place` is re-signed into the queue token. */
  | { kind: 'wait'; status: VisitorStatus; httpStatus: 200 | 503; place?: KeptPlace }
  /** The store admitted the visitor: an admission for the session; the queue token goes. */
  | { kind: 'admit'; status: VisitorStatus; session: Session }
  /**
   * The store is away and the room fails open (onStoreError: "open"): the visitor keeps their own
   * identity (their queue token's visitor id, or a new one) and gets an admission marked `open`, so an
   * origin can tell these apart and apply its own policy. It lasts OPEN_ADMISSION_MS and is kept in the
   * visitor's cookie (one signature a minute); the queue token is re-signed to outlast it, so the place
   * in line is still theirs when the store is back. A status request is told `busy`.
   */
  | { kind: 'open'; status: VisitorStatus; session: Session; place: KeptPlace }

/** The arrival in the queue token of a visitor who holds an identity but no place (an ended one). */
export const NO_PLACE = 0

/** How long an open admission lasts; it is never renewed, so the visitor's queue token takes over after it. */
export const OPEN_ADMISSION_MS = 60_000

/**
 * Whether a visit asks the store: a closed room answers without it, and so does a scheduled room
 * before its pre-queue and after it closes, and a sold-out room for a visitor with no place in line
 * to keep (`joining`: a newcomer gets the sold-out page, no place; core/stock.ts).
 */
export function asksStore(room: RoomSettings, now: number, stop?: StockStop, joining = false): boolean {
  const phase = schedulePhase(room, now)
  return room.mode !== 'closed' && (phase === 'prequeue' || phase === 'open') && !(stop === 'sold_out' && joining)
}

/** A scheduled room's times for a status at `now` (ms, the edge's clock). */
export function scheduleStatus(room: RoomSettings, now: number): ScheduleStatus | undefined {
  const s = room.schedule
  if (s === null) return undefined
  const until = (iso: string) => Math.max(0, Math.ceil((Date.parse(iso) - now) / 1000))
  return {
    prequeueAt: s.prequeueAt,
    opensAt: s.opensAt,
    closesAt: s.closesAt ?? null,
    prequeueInSeconds: until(s.prequeueAt),
    opensInSeconds: until(s.opensAt),
  }
}

/** The numbers of a status with no place in line (none), and when to look again (a refresh). */
export function noPlace(room: RoomSettings) {
  return {
    position: null,
    ahead: null,
    waiting: null,
    etaSeconds: null,
    etaRange: null,
    refreshSeconds: room.refreshSeconds,
    nextPollSeconds: room.refreshSeconds,
  }
}

/** A status with no place in line: closed, busy, ended, a scheduled room before its pre-queue, or sold out to a newcomer. */
export function statusWithoutPlace(room: RoomSettings, state: 'closed' | 'busy' | 'ended' | 'scheduled' | 'sold_out'): VisitorStatus {
  return { room: room.id, state, ...noPlace(room) }
}

export function admittedStatus(room: RoomSettings): VisitorStatus {
  return {
    room: room.id,
    state: 'admitted',
    position: 0,
    ahead: 0,
    waiting: null,
    etaSeconds: 0,
    etaRange: [0, 0],
    refreshSeconds: room.refreshSeconds,
    nextPollSeconds: room.refreshSeconds,
  }
}

/** The status of a visitor the store answered for; a queued one's wait from `estimate` (none without). */
export function statusOf(room: RoomSettings, result: PollResult, estimate?: WaitEstimator): VisitorStatus {
  if (result.state === 'admitted') return admittedStatus(room)
  if (result.state === 'ended') return statusWithoutPlace(room, 'ended')
  const eta = result.state === 'queued' ? (estimate?.(result) ?? null) : null
  // In the pre-queue the order is the draw's, secret until the opening: only how many are in it.
  const hidden = result.state === 'prequeue'
  return {
    room: room.id,
    state: result.state,
    position: hidden ? null : result.position,
    ahead: hidden ? null : result.position - 1,
    waiting: result.waiting,
    etaSeconds: eta?.seconds ?? null,
    etaRange: eta === null ? null : [eta.low, eta.high],
    refreshSeconds: room.refreshSeconds,
    nextPollSeconds: nextPollMs(result.arrival, result.now, room.refreshSeconds * 1000) / 1000,
  }
}

/**
 * The answer to a visit without an admission.
 * @param ticketArrival the arrival (µs) in the visitor's verified queue token, if any
 * @param now the edge's clock (ms): an open admission runs on it, everything else on the store's
 * @param estimate a queued visitor's wait (the edge's RoomDirectory.estimate, from its last look at the room)
 * @param stop why the room's stock lets nobody new in (core/stock.ts): the store was polled as for a
 *   paused room (or, sold out to a newcomer, not asked), and the visitor is told why
 */
export function decideVisit(
  room: RoomSettings,
  outcome: PollOutcome,
  ticketArrival: number | undefined,
  now: number,
  estimate?: WaitEstimator,
  stop?: StockStop,
): Verdict {
  const verdict = decide(room, outcome, ticketArrival, now, estimate, stop)
  const schedule = scheduleStatus(room, now)
  if (schedule !== undefined) verdict.status.schedule = schedule
  return verdict
}

/** decideVisit's verdict, from the same arguments, before the room's schedule is added to its status. */
function decide(...[room, outcome, ticketArrival, now, estimate, stop]: Parameters<typeof decideVisit>): Verdict {
  const phase = schedulePhase(room, now)
  if (outcome.kind === 'not-asked') {
    // A newcomer to a sold-out room: no place (they join the line if they come back once stock has).
    if (stop === 'sold_out' && asksStore(room, now)) return { kind: 'wait', status: statusWithoutPlace(room, 'sold_out'), httpStatus: 200 }
    const state = room.mode !== 'closed' && phase === 'scheduled' ? 'scheduled' : 'closed'
    const status = statusWithoutPlace(room, state)
    // Before the pre-queue: look again at the latest when it opens.
    if (state === 'scheduled')
      status.nextPollSeconds = Math.max(1, Math.min(room.refreshSeconds, scheduleStatus(room, now)?.prequeueInSeconds ?? 0))
    return { kind: 'wait', status, httpStatus: 200 }
  }
  const abandonMs = room.abandonAfterSeconds * 1000
  if (outcome.kind === 'unavailable') {
    const status = statusWithoutPlace(room, 'busy')
    // Nobody goes in before a scheduled sale opens, whatever the policy, nor while there is nothing to buy.
    if (room.onStoreError !== 'open' || phase === 'prequeue' || stop !== undefined) {
      // The visitor keeps their place through the outage: their token is re-signed with the same
      // arrival, so a long failover does not let it lapse (and send them to the back).
      if (ticketArrival === undefined) return { kind: 'wait', status, httpStatus: 503 }
      const place = { arrival: ticketArrival, expires: now + abandonMs, maxAgeSeconds: room.abandonAfterSeconds }
      return { kind: 'wait', status, httpStatus: 503, place }
    }
    // Each visitor keeps their own identity and arrival; the place outlasts the open admission.
    const arrival = ticketArrival ?? now * 1000
    const keepMs = OPEN_ADMISSION_MS + abandonMs
    return {
      kind: 'open',
      status,
      session: { arrival, expires: now + OPEN_ADMISSION_MS, now },
      place: { arrival, expires: now + keepMs, maxAgeSeconds: keepMs / 1000 },
    }
  }
  const { result } = outcome
  const status = statusOf(room, result, estimate)
  // Polled as a paused room for its stock: the visitor keeps their place and is told why.
  if (stop !== undefined && result.state === 'paused') status.state = stop
  if (result.state === 'admitted') {
    return { kind: 'admit', status, session: { arrival: result.arrival, expires: result.sessionExpires, now: result.now } }
  }
  // An ended visitor keeps their identity (so they stay out) but no place: their token's arrival is
  // NO_PLACE, so that should an admin let them back, they join at the back as they come.
  const arrival = result.state === 'ended' ? NO_PLACE : result.arrival
  return {
    kind: 'wait',
    status,
    httpStatus: 200,
    place: { arrival, expires: result.now + abandonMs, maxAgeSeconds: room.abandonAfterSeconds },
  }
}

// The QueueStore port: the line, the active sessions and the admission rate of each room.
// Redis and the in-process memory store implement it; test/contract/queue-store.ts holds them to it.
import type { EdgeHint, LifeMark, PollAnswer } from '../core/admission.js'
import type { AdmissionLimits } from '../core/settings.js'

export interface PollInput {
  room: string
  visitor: string
  /** Arrival (µs) from a verified queue token: restores the visitor's place if the store forgot it. */
  arrival?: number
  /** When that token expires, ms (see Poll.tokenExpires in core/admission.ts). */
  tokenExpires?: number
  /** A scheduled room: the visitor's drawn arrival (µs), the place they take if they join during the pre-queue. */
  draw?: number
  /** The arrival (µs) an access code the visitor just redeemed gives (Poll.lane in core/admission.ts). */
  lane?: number
  limits: AdmissionLimits
  /** Time in ms. Leave it out and the store uses its own authoritative clock (Redis TIME). */
  now?: number
  /** What the polling edge knows of the room (its life, the active count it saw): lets the store tell that it forgot. */
  hint?: EdgeHint
}

/** Every answer also says what the room's life in the store is (epoch, birth, polls answered). */
export type PollResult = PollAnswer

export interface RenewInput {
  room: string
  visitor: string
  sessionMs: number
  now?: number
}

/**
 * The session's new expiry, or undefined when an admin ended the session. Renew is only called for a
 * visitor with a valid admission token, so a session the store does not know (after a flush) is restored.
 */
export type RenewResult = { sessionExpires: number; now: number } | undefined

/** The origin is done with a visitor (Anteroom-Command: end-session): their session ends, they are not kept out. */
export interface FinishInput {
  room: string
  visitor: string
  /**
   * How long to remember the end, ms: while a token issued before it may still be valid (a session
   * length, and a little). Until then a renewal of such a token is refused, not restored.
   */
  keepMs: number
  now?: number
}

/** Whether the visitor had an active session, and when it ended (ms, the store's clock). */
export interface FinishResult {
  active: boolean
  at: number
}

export interface RoomStats {
  waiting: number
  active: number
  admittedLastMinute: number
  /** Visitors dropped for not polling, in all. */
  abandoned: number
  /** ... and in about the last minute (10-s granularity). */
  abandonedLastMinute: number
  now: number
}

/** What every edge reads of a room once a second. */
export interface RoomWatch {
  /** Sessions ended since the time asked, by an admin or by the origin (finishSession), oldest first. */
  ended: EndedSession[]
  /** The room's life in the store (its epoch, birth ms and polls answered); null before its first poll. */
  life: LifeMark | null
  /** Active sessions now (entries of the active set, including any whose expiry passed since the last poll). */
  active: number
  /** Visitors in line now. */
  waiting: number
  /** The slot of the last admission on the room's pace timeline, µs (core/admission.ts dueAdmissions); null before the first. */
  lastSlotUs: number | null
  /** Slots kept for sessions from before a loss of the room, until `reservedUntil` (ms); 0 and 0 without. */
  reserved: number
  reservedUntil: number
  /**
   * The active set's entries at the ranks asked for (WatchLook.ranks; a negative rank counts from the
   * end, -1 the last) as [rank, expiry ms, visitor], rank ascending and each rank once; ranks past the
   * end are left out.
   */
  expiries: [number, number, string][]
  /** The expiry (ms) of each visitor asked for (WatchLook.visitors), in order; null for one not active. */
  tracked: (number | null)[]
  /** Running totals of this life of the room: visitors admitted, and dropped for not polling. */
  admitted: number
  abandoned: number
}

/** What a watch samples of the active set, besides the rest (core/line-observation.ts lookFor asks for it). */
export interface WatchLook {
  ranks: readonly number[]
  visitors: readonly string[]
}

/** A session an admin or the origin ended: the visitor, and when (ms). */
export interface EndedSession {
  visitor: string
  at: number
}

/** The order of RoomWatch.ended, in every store: by time, then by visitor (as Redis orders equal scores). */
export function byEndTime(a: EndedSession, b: EndedSession): number {
  return a.at - b.at || (a.visitor < b.visitor ? -1 : a.visitor > b.visitor ? 1 : 0)
}

/** One point of the admin chart. */
export interface RoomSample {
  t: number
  waiting: number
  active: number
  admittedLastMinute: number
  abandonedLastMinute: number
}

/** How much history the admin chart keeps. */
export const HISTORY_MS = 30 * 60_000

export interface DrawPage {
  total: number
  entries: [visitor: string, arrival: number][]
}

export interface QueueStore {
  /** One visitor's poll: join or keep their place, drop stale entries, admit in FIFO order. */
  poll(input: PollInput): Promise<PollResult>
  /** Extends an admitted visitor's session (or restores one the store forgot). */
  renew(input: RenewInput): Promise<RenewResult>
  /** Ends one visitor's session; their token is refused at its next renewal. Returns whether there was one. */
  endSession(room: string, visitor: string, now?: number): Promise<boolean>
  /**
   * Ends one visitor's session because the origin is done with them: the slot frees at once, every
   * edge refuses their admission within a second (watch), and a renewal of a token from before is
   * refused. Unlike endSession, they are not kept out: a poll puts them at the back of the line.
   */
  finishSession(input: FinishInput): Promise<FinishResult>
  /**
   * Sessions an admin or the origin ended at or after `since` (ms), oldest first, at most `limit`: every edge reads
   * them once a second, so an ended session stops everywhere without a store call per request. With
   * them, in the same round trip, what the edge estimates waits from (core/eta.ts): the line's length,
   * the pace, the running totals, and the active set's entries at some ranks and of some visitors.
   */
  watch(room: string, endedSince: number, limit?: number, look?: WatchLook): Promise<RoomWatch>
  /** Lets a visitor whose session an admin ended back into the line (at the back); returns whether they were kept out. */
  allowAgain(room: string, visitor: string): Promise<boolean>
  /**
   * A scheduled room's draw (core/draw.ts): who got a drawn place, in rank order from `offset` (0-based),
   * at most `limit`, with their drawn arrivals (µs), and how many there are in all.
   */
  draw(room: string, offset: number, limit: number): Promise<DrawPage>
  /** Ends every session of a room; returns how many there were. */
  endAllSessions(room: string, now?: number): Promise<number>
  stats(room: string, now?: number): Promise<RoomStats>
  /** Records the room's numbers for its 10-s bucket, unless another edge already did. */
  recordSample(room: string, now?: number): Promise<void>
  /** The samples of the last 30 minutes, oldest first. */
  history(room: string): Promise<RoomSample[]>
  /** Cheap liveness check for /_anteroom/health. */
  ping(): Promise<boolean>
  close(): Promise<void>
}

// Access codes and invite links (issue #31): what lets a visitor into a lane, before the public line or
// in a separate lane with its own cap and rate. No runtime and no store here: the edge redeems through
// the AccessStore port (src/http/access.ts), whose memory adapter runs `redeem` below and whose Redis
// adapter runs the same steps in adapters/redis/lua/access-redeem-7.lua.
//
//   access code   16 characters of Crockford's base32 (80 random bits), shown as XXXX-XXXX-XXXX-XXXX.
//                 The store keeps only its MAC under the queue secret ("access-code|<room>|<code>"):
//                 a code is shown once, when it is made, and neither a store's dump nor the admin
//                 list gives it away. Wrong codes are counted per client network (CODE_TRIES_PER_MINUTE).
//   invite link   i1.<room>.<grant id>.<lane p|s>.<max uses, base 36>.<expiry ms, base 36>.<mac>, the
//                 MAC over "invite|" and the rest, so that a link never passes for a queue token, a
//                 challenge or an admin session. A forged, foreign or expired link is refused without
//                 a store call; its uses and its revocation are in the store, as a code's.
//   lane          priority: a place before every public arrival in the room's own line (its cap and
//                 rate, its order); separate: a place in the room's separate lane, a line of its own in
//                 the store (laneRoomId) whose limits are the room's laneActiveUsers and laneUsersPerMinute.
//   lane arrival  what a redemption gives: the store's time of it (µs) less the lane's offset
//                 (LANE_OFFSET_US: 2^48 µs, about 8.9 years; 2^49 for the separate lane), unique and
//                 rising per lane. Every public arrival is later than every priority one, so the rule
//                 keeps one line; the queue token carries it, signed, so it survives a store loss like
//                 any place; and its band tells the edge the lane (laneOfArrival), with no new field in
//                 the token.
import type { Mac } from '../ports/crypto.js'
import { ROOM_ID, type RoomSettings } from './settings.js'

export const LANES = ['priority', 'separate'] as const
export type Lane = (typeof LANES)[number]
export const GRANT_KINDS = ['code', 'link'] as const
export type GrantKind = (typeof GRANT_KINDS)[number]

/** Crockford's base32: no I, L, O or U, so that a code read aloud or copied by hand survives. */
export const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'
export const CODE_LENGTH = 16
/** A grant's id: 12 characters of lower-case base32 (60 bits), in URLs and in invite links. */
export const GRANT_ID = /^[0-9a-hjkmnp-tv-z]{12}$/
/** Wrong codes a client network may try in a room per minute of the store's clock; then 429 until the next. */
export const CODE_TRIES_PER_MINUTE = 10
/** The longest a code or link may be valid, from its creation. */
export const MAX_GRANT_DAYS = 366
/** How far before its redemption a lane's arrival lies, µs. */
export const LANE_OFFSET_US: Readonly<Record<Lane, number>> = { priority: 2 ** 48, separate: 2 ** 49 }
/** Arrivals before now less this are a lane's (half the priority offset: 4.5 years), before now less PRIORITY_FLOOR_US the separate lane's. */
const LANE_EDGE_US = 2 ** 47
const PRIORITY_FLOOR_US = 3 * 2 ** 47
/** The separate lane's line in the store: the room's id and this; no room id has a `~`. */
export const LANE_ROOM_SUFFIX = '~lane'
export const LINK_PREFIX = 'i1.'

const LOWER_ALPHABET = CODE_ALPHABET.toLowerCase()

/** `n` characters of a 32-character alphabet: a byte's low five bits each (32 divides 256, so none is likelier). */
function randomChars(n: number, alphabet: string): string {
  const bytes = new Uint8Array(n)
  crypto.getRandomValues(bytes)
  let out = ''
  for (const b of bytes) out += alphabet[b & 31]
  return out
}

/** A new access code, in its stored form (16 characters, no dashes). */
export function newAccessCode(): string {
  return randomChars(CODE_LENGTH, CODE_ALPHABET)
}

export function newGrantId(): string {
  return randomChars(12, LOWER_ALPHABET)
}

/** A code as people read it: XXXX-XXXX-XXXX-XXXX. */
export function formatCode(code: string): string {
  return code.replace(/(.{4})(?=.)/g, '$1-')
}

/**
 * A code as a person may type it (any case, dashes and spaces anywhere, O for 0, I or L for 1), in its
 * stored form; undefined for anything that cannot be a code.
 */
export function normalizeCode(text: string): string | undefined {
  if (text.length > 64) return undefined
  const code = text.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1')
  if (code.length !== CODE_LENGTH) return undefined
  for (const c of code) if (!CODE_ALPHABET.includes(c)) return undefined
  return code
}

/** What a `?code=` value is: an access code (stored form), an invite link's token, or neither. */
export type AccessValue = { kind: 'code'; code: string } | { kind: 'link'; token: string }

export function readAccessValue(text: string): AccessValue | undefined {
  const value = text.trim()
  if (value.startsWith(LINK_PREFIX)) return { kind: 'link', token: value }
  const code = normalizeCode(value)
  return code === undefined ? undefined : { kind: 'code', code }
}

// --- lanes ------------------------------------------------------------------------------------

/** The earliest arrival a redemption at `nowUs` gives in a lane; the store hands out max(this, the lane's last + 1). */
export function laneArrivalFloor(lane: Lane, nowUs: number): number {
  return nowUs - LANE_OFFSET_US[lane]
}

/** The lane of a place by its arrival (µs) at `nowUs` (any clock within years of the store's); undefined: the public line. */
export function laneOfArrival(arrivalUs: number, nowUs: number): Lane | undefined {
  if (arrivalUs > nowUs - LANE_EDGE_US) return undefined
  return arrivalUs > nowUs - PRIORITY_FLOOR_US ? 'priority' : 'separate'
}

/** When a place was really taken, µs: a lane's arrival is its redemption less the lane's offset. */
export function arrivalTimeUs(arrivalUs: number, nowUs: number): number {
  const lane = laneOfArrival(arrivalUs, nowUs)
  return lane === undefined ? arrivalUs : arrivalUs + LANE_OFFSET_US[lane]
}

export const laneRoomId = (room: string): string => `${room}${LANE_ROOM_SUFFIX}`

/** Whether a room has a separate lane: codes for it can be made, and every edge watches its line. */
export function hasSeparateLane(room: Pick<RoomSettings, 'laneActiveUsers'>): boolean {
  return room.laneActiveUsers > 0
}

const laneViews = new WeakMap<RoomSettings, RoomSettings>()

/**
 * A room's separate lane as the store and the edge's forecasts see it: a room of its own (laneRoomId)
 * with the lane's cap and rate and the rest of the room's settings (mode, timings, schedule). Without
 * a cap (laneActiveUsers 0) it is paused: its holders keep their places and nobody is admitted.
 * Made once per settings object. Never a room for cookies or tokens: those are the room's.
 */
export function separateLane(room: RoomSettings): RoomSettings {
  let view = laneViews.get(room)
  if (view === undefined) {
    const off = !hasSeparateLane(room)
    view = Object.freeze({
      ...room,
      id: laneRoomId(room.id),
      mode: off && room.mode === 'fifo' ? 'paused' : room.mode,
      totalActiveUsers: Math.max(1, room.laneActiveUsers),
      newUsersPerMinute: room.laneUsersPerMinute,
    })
    laneViews.set(room, view)
  }
  return view
}

/** The lines a room's sessions may be held in (the store rooms an admin's end reaches): its own, and its separate lane's. */
export function lineIds(room: RoomSettings): string[] {
  return hasSeparateLane(room) ? [room.id, laneRoomId(room.id)] : [room.id]
}

/** Where a place of this lane (none: the public line) waits and its session is held: the room, or its separate lane. */
export function lineOf(room: RoomSettings, lane: Lane | undefined): RoomSettings {
  return lane === 'separate' ? separateLane(room) : room
}

// --- invite links -----------------------------------------------------------------------------

export interface LinkTerms {
  room: string
  grant: string
  lane: Lane
  maxUses: number
  /** When it stops working, ms. */
  expiresAt: number
}

export type LinkProblem = 'malformed' | 'forged' | 'wrong-room' | 'expired'
export type LinkCheck = { ok: true; terms: LinkTerms } | { ok: false; problem: LinkProblem }

const MAC = /^[A-Za-z0-9_-]{43}$/
const LANE_LETTER: Readonly<Record<Lane, string>> = { priority: 'p', separate: 's' }

function linkBody(t: LinkTerms): string {
  return `${LINK_PREFIX}${t.room}.${t.grant}.${LANE_LETTER[t.lane]}.${t.maxUses.toString(36)}.${t.expiresAt.toString(36)}`
}

/** Codes' digests and invite links, under the deployment's queue secret, each in a domain of its own. */
export class AccessTokens {
  constructor(private readonly mac: Mac) {}

  /** What the store keeps of a code: its MAC, bound to the room. */
  codeDigest(room: string, code: string): string {
    return this.mac.sign(`access-code|${room}|${code}`)
  }

  /** An invite link's token; the same terms always give the same token, so the edge can show a link again. */
  link(terms: LinkTerms): string {
    const body = linkBody(terms)
    return `${body}.${this.mac.sign(`invite|${body}`)}`
  }

  /** Checks a link for `room` at `now` (ms): well formed, ours, for this room, not expired. */
  readLink(token: string, room: string, now: number): LinkCheck {
    if (token.length > 200) return { ok: false, problem: 'malformed' }
    const parts = token.split('.')
    if (parts.length !== 7 || parts[0] !== 'i1') return { ok: false, problem: 'malformed' }
    const [, forRoom, grant, letter, max36, exp36, mac] = parts as [string, string, string, string, string, string, string]
    const lane = letter === 'p' ? 'priority' : letter === 's' ? 'separate' : undefined
    if (
      !ROOM_ID.test(forRoom) ||
      !GRANT_ID.test(grant) ||
      lane === undefined ||
      !/^[1-9a-z][0-9a-z]{0,5}$/.test(max36) ||
      !/^[1-9a-z][0-9a-z]{0,10}$/.test(exp36) ||
      !MAC.test(mac)
    )
      return { ok: false, problem: 'malformed' }
    const terms: LinkTerms = { room: forRoom, grant, lane, maxUses: Number.parseInt(max36, 36), expiresAt: Number.parseInt(exp36, 36) }
    if (!this.mac.verify(`invite|${linkBody(terms)}`, mac)) return { ok: false, problem: 'forged' }
    if (terms.room !== room) return { ok: false, problem: 'wrong-room' }
    if (terms.expiresAt <= now) return { ok: false, problem: 'expired' }
    return { ok: true, terms }
  }
}

// --- grants and their redemption ------------------------------------------------------------------

/** A code or link as the store keeps it: its terms, which never change. */
export interface GrantTerms {
  id: string
  kind: GrantKind
  lane: Lane
  label: string
  maxUses: number
  /** When it stops working, ms. */
  expiresAt: number
  createdAt: number
  createdBy: string
  /** A code's last four characters, so that an admin can tell codes apart; '' for a link. */
  hint: string
}

/** A grant as the admin API lists it: its terms, its uses so far, and when it was revoked (ms) if it was. */
export interface AccessGrant extends GrantTerms {
  used: number
  revokedAt: number | null
}

export const GRANT_STATES = ['active', 'used_up', 'expired', 'revoked'] as const
export type GrantState = (typeof GRANT_STATES)[number]

export function grantState(g: AccessGrant, now: number): GrantState {
  if (g.revokedAt !== null) return 'revoked'
  if (g.expiresAt <= now) return 'expired'
  return g.used >= g.maxUses ? 'used_up' : 'active'
}

export type RedeemProblem = 'unknown' | 'used_up' | 'expired' | 'revoked' | 'throttled'

/**
 * A redemption's answer. `again`: this visitor had redeemed this grant before (a second submit, a
 * reload): the same arrival, no use counted.
 */
export type Redemption =
  | { ok: true; grant: string; lane: Lane; arrival: number; again: boolean; used: number; now: number }
  | { ok: false; problem: RedeemProblem; retryAfterMs: number; now: number }

export interface RedeemInput {
  room: string
  /** A code's digest (AccessTokens.codeDigest), or a checked invite link's grant id. */
  by: { code: string } | { link: string }
  visitor: string
  /** The client network (core/network.ts) wrong codes are counted against; 'unknown' without an address. */
  network: string
  /** Wrong codes a network may try per minute (CODE_TRIES_PER_MINUTE). */
  triesPerMinute: number
  /** Time in ms; left out, the store's own clock. */
  now?: number
}

/** A room's grants as both stores keep them (docs/redis-keys.md, anteroom:{room}:acc:*). */
export interface AccessRoomState {
  grants: Map<string, GrantTerms>
  used: Map<string, number>
  revoked: Map<string, number>
  /** Code digest → grant id. */
  codes: Map<string, string>
  /** `<grant>:<visitor>` → the arrival that visitor's redemption gave. */
  redeemed: Map<string, number>
  /** The last arrival handed out in each lane, µs. */
  last: Map<Lane, number>
  /** Wrong codes by network in one minute of the store's clock (older minutes are forgotten). */
  failures(minute: number): Map<string, number>
}

const MINUTE_MS = 60_000

/**
 * One redemption, in order: a network over its tries for the minute is refused before its code is
 * looked up (links, which cannot be guessed, are not counted); a code nobody made counts as a wrong
 * try; then a revoked, an expired, or (for a visitor who has not redeemed it before) a used-up grant is
 * refused; otherwise one use is counted and the lane's next arrival given. The Lua copy keeps this order.
 */
export function redeem(s: AccessRoomState, input: RedeemInput, now: number, nowUs: number): Redemption {
  const minute = Math.floor(now / MINUTE_MS)
  const retryAfterMs = (minute + 1) * MINUTE_MS - now
  const refuse = (problem: RedeemProblem): Redemption => ({ ok: false, problem, retryAfterMs, now })
  const byCode = 'code' in input.by
  const tries = s.failures(minute)
  if (byCode && (tries.get(input.network) ?? 0) >= input.triesPerMinute) return refuse('throttled')
  const id = 'code' in input.by ? s.codes.get(input.by.code) : input.by.link
  const grant = id === undefined ? undefined : s.grants.get(id)
  if (grant === undefined || grant.kind !== (byCode ? 'code' : 'link')) {
    if (byCode) tries.set(input.network, (tries.get(input.network) ?? 0) + 1)
    return refuse('unknown')
  }
  if (s.revoked.has(grant.id)) return refuse('revoked')
  if (grant.expiresAt <= now) return refuse('expired')
  const used = s.used.get(grant.id) ?? 0
  const mine = `${grant.id}:${input.visitor}`
  const before = s.redeemed.get(mine)
  if (before !== undefined) return { ok: true, grant: grant.id, lane: grant.lane, arrival: before, again: true, used, now }
  if (used >= grant.maxUses) return refuse('used_up')
  const arrival = Math.max(laneArrivalFloor(grant.lane, nowUs), (s.last.get(grant.lane) ?? 0) + 1)
  s.last.set(grant.lane, arrival)
  s.used.set(grant.id, used + 1)
  s.redeemed.set(mine, arrival)
  return { ok: true, grant: grant.id, lane: grant.lane, arrival, again: false, used: used + 1, now }
}

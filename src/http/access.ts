// Access codes and invite links at the edge (core/access.ts). In a room that takes them (accessCodes:
// on), a visitor without an admission may bring one as ?code= on a protected URL or on the status
// endpoint: the queue page's form sends what was typed there, an invite link carries its token. A
// redemption is one store call (AccessStore.redeem), made only when a code comes, so a queued visitor's
// poll costs nothing more; it gives a lane and an arrival that the poll which follows takes
// (Poll.lane), and that the queue token then keeps. A link that is malformed, forged, for another room
// or expired is refused without a store call; a code's wrong tries are counted per client network in
// the store (the network is the runtime's address, never a header), and past CODE_TRIES_PER_MINUTE
// nothing more is tried from it that minute, a right code included. A refusal takes nobody's place.
import {
  type AccessTokens,
  CODE_TRIES_PER_MINUTE,
  type Lane,
  type RedeemInput,
  type RedeemProblem,
  type Redemption,
  readAccessValue,
} from '../core/access.js'
import { AnteroomError, type ErrorCode, isAnteroomError } from '../core/errors.js'
import { networkOf } from '../core/network.js'
import type { RoomSettings } from '../core/settings.js'
import type { AccessStore } from '../ports/access-store.js'
import type { EdgeContext } from './edge-context.js'
import { meteredCall, type RedemptionOutcome } from './metrics.js'
import type { Incoming } from './request.js'

/** What the edge redeems with: the store of grants and uses, and the codes' digests and links' signatures. */
export interface AccessDeps {
  store: AccessStore
  tokens: AccessTokens
}

/** A place a redemption gave: its lane, and the arrival (µs) the next poll takes. */
export interface LanePlace {
  lane: Lane
  arrival: number
}

/**
 * The `code` parameter of the request in a room that takes codes; undefined otherwise, and in other
 * rooms `?code=` is the origin's. The query is parsed only when it names one.
 */
export function accessValueIn(room: RoomSettings, req: Incoming): string | undefined {
  if (room.accessCodes !== 'on') return undefined
  const url = req.originPath
  const query = url.indexOf('?')
  if (query < 0 || url.indexOf('code=', query) < 0) return undefined
  return new URLSearchParams(url.slice(query + 1)).get('code') ?? undefined
}

/** The same URL without its `code` parameter: where a browser goes once its code is redeemed. */
export function withoutCode(url: string): string {
  const query = url.indexOf('?')
  if (query < 0) return url
  const params = new URLSearchParams(url.slice(query + 1))
  params.delete('code')
  const rest = params.toString()
  return rest === '' ? url.slice(0, query) : `${url.slice(0, query)}?${rest}`
}

const REFUSALS: Readonly<Record<Exclude<RedeemProblem, 'throttled'> | 'invalid', { code: ErrorCode; outcome: RedemptionOutcome }>> = {
  invalid: { code: 'ERR_ACCESS_INVALID', outcome: 'invalid' },
  unknown: { code: 'ERR_ACCESS_INVALID', outcome: 'invalid' },
  used_up: { code: 'ERR_ACCESS_USED_UP', outcome: 'used_up' },
  expired: { code: 'ERR_ACCESS_EXPIRED', outcome: 'expired' },
  revoked: { code: 'ERR_ACCESS_REVOKED', outcome: 'revoked' },
}

function describeSeconds(s: number): string {
  return s === 1 ? '1 second' : `${s} seconds`
}

/** Counts an outcome in the room's cells (no allocation: the cells were made with the room's). */
function count(edge: EdgeContext, room: RoomSettings, outcome: RedemptionOutcome): void {
  const cells = edge.deps.meters?.redemptions(room.id)
  if (cells !== undefined) cells[outcome].value++
}

/** The error a refusal answers, its outcome counted and logged (never the code itself). */
function refused(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  problem: RedeemProblem | 'invalid',
  retryAfterMs = 0,
): AnteroomError {
  const requestId = edge.requestId(req.context)
  if (problem === 'throttled') {
    count(edge, room, 'throttled')
    edge.log('access_throttled', { room: room.id, requestId, client: req.client })
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000))
    return new AnteroomError(
      'ERR_TOO_MANY_CODES',
      `Too many wrong access codes came from your network this minute, so no more are checked for now. Please try again in ${describeSeconds(seconds)}.`,
      { field: 'code', retryAfterSeconds: seconds, extra: { retryAfterSeconds: seconds } },
    )
  }
  const { code, outcome } = REFUSALS[problem]
  count(edge, room, outcome)
  edge.log('access_refused', { room: room.id, requestId, problem })
  // Not exposed: the page says the registry's words for visitors, the JSON its words for callers (core/errors.ts).
  return new AnteroomError(code, `access ${problem}`, { field: 'code', expose: false })
}

/**
 * Redeems what `?code=` brought for `visitor`: the lane and arrival it gives, or an error that names
 * the field `code` (ERR_ACCESS_*, ERR_TOO_MANY_CODES with Retry-After, or ERR_STORE_UNAVAILABLE).
 */
export async function redeemAccess(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  visitor: string,
  value: string,
): Promise<LanePlace> {
  const access = edge.deps.access
  const read = readAccessValue(value)
  if (access === undefined || read === undefined) throw refused(edge, room, req, 'invalid')
  let by: RedeemInput['by']
  if (read.kind === 'link') {
    const check = access.tokens.readLink(read.token, room.id, edge.now())
    if (!check.ok) throw refused(edge, room, req, check.problem === 'expired' ? 'expired' : 'invalid')
    by = { link: check.terms.grant }
  } else by = { code: access.tokens.codeDigest(room.id, read.code) }
  // Wrong codes count per client network; an address the runtime did not give counts as one network.
  const network = networkOf(req.client, { v4: room.networkPrefixIPv4, v6: room.networkPrefixIPv6 }) ?? 'unknown'
  let r: Redemption
  try {
    r = await meteredCall(edge.deps.meters, 'redeem', () =>
      access.store.redeem({ room: room.id, by, visitor, network, triesPerMinute: CODE_TRIES_PER_MINUTE, now: edge.storeNow() }),
    )
  } catch (err) {
    if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
    count(edge, room, 'unavailable')
    throw new AnteroomError(
      'ERR_STORE_UNAVAILABLE',
      'Access codes cannot be checked right now. Please try again in a moment; your place in line, if you have one, is kept.',
      { expose: true, cause: err },
    )
  }
  if (!r.ok) throw refused(edge, room, req, r.problem, r.retryAfterMs)
  count(edge, room, r.again ? 'again' : 'redeemed')
  edge.log('access_redeemed', { room: room.id, requestId: edge.requestId(req.context), grant: r.grant, lane: r.lane, again: r.again })
  return { lane: r.lane, arrival: r.arrival }
}

// Admissions at the edge: checking a visitor's admission cookie (no store call, except a renewal
// once half the session has gone, or once after the store forgot the room), and signing an admission
// into its token and cookie. An admin's "end session" reaches every edge within a second through the
// room directory's watch, so an ended admission stops without a store call.
import { lineOf } from '../core/access.js'
import type { AdmissionClaims } from '../core/admission-token.js'
import { isAnteroomError } from '../core/errors.js'
import type { RoomSettings } from '../core/settings.js'
import { admissionCookieName, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { meteredCall } from './metrics.js'
import type { Incoming } from './request.js'

/** A valid admission: the visitor, the token to forward to the origin, and cookies to set (a renewed one). */
export interface Admitted {
  visitor: string
  token: string
  cookies: string[]
  /** An access code's lane (core/access.ts): a separate lane's session is held in the lane's line. */
  lane?: AdmissionClaims['lane']
}

/** What a visitor's admission cookie says: admitted; a session an admin ended (the visitor's id); or nothing valid. */
export type AdmissionCheck = Admitted | { ended: string } | undefined

export function isAdmitted(check: AdmissionCheck): check is Admitted {
  return check !== undefined && 'token' in check
}

export async function signAdmission(
  edge: EdgeContext,
  room: RoomSettings,
  claims: Omit<AdmissionClaims, 'iat'>,
  now: number,
  secure: boolean,
): Promise<{ token: string; cookie: string }> {
  const token = await edge.deps.admissionTokens.sign(claims, now)
  const cookie = serializeCookie(admissionCookieName(room.id), token, { maxAgeSeconds: claims.exp - Math.floor(now / 1000), secure })
  return { token, cookie }
}

/**
 * The visitor's admission to this room, if their cookie holds a valid one (verified once, then
 * cached). Without an admission cookie (a waiting visitor's poll) the answer is synchronous.
 */
export function checkAdmission(edge: EdgeContext, room: RoomSettings, req: Incoming): AdmissionCheck | Promise<AdmissionCheck> {
  const token = readCookie(req.cookie, admissionCookieName(room.id))
  if (token === undefined) return undefined
  return checkToken(edge, room, req, token)
}

async function checkToken(edge: EdgeContext, room: RoomSettings, req: Incoming, token: string): Promise<AdmissionCheck> {
  const now = edge.now()
  const claims = await edge.deps.admissionTokens.verify(token, room.id, now)
  // A bypass admission goes to the origin with one request and is never handed to the visitor: one
  // presented as a cookie was taken from somewhere, and a rule's pass does not travel (core/bypass.ts).
  if (claims === undefined || claims.bypass !== undefined) return undefined
  if (edge.deps.rooms.sessionEnded(room.id, claims.sub, claims.iat * 1000)) {
    edge.log('session_ended', { room: room.id, requestId: edge.requestId(req.context) })
    return { ended: claims.sub }
  }
  const lane = claims.lane === undefined ? {} : { lane: claims.lane }
  // An open admission is never renewed: once it lapses, the visitor's queue token takes them back in line.
  if (claims.open) return { visitor: claims.sub, token, cookies: [], ...lane }
  // A separate lane's session is held in the lane's line (core/access.ts): ended there, renewed there.
  const line = lineOf(room, claims.lane)
  if (line !== room && edge.deps.rooms.sessionEnded(line.id, claims.sub, claims.iat * 1000)) {
    edge.log('session_ended', { room: room.id, requestId: edge.requestId(req.context) })
    return { ended: claims.sub }
  }
  // Issued before the store's current life of the room began: the store forgot this session; one
  // renewal re-registers it (and takes back the slot the store reserved for it).
  const born = edge.deps.rooms.lifeBorn(line.id)
  // iat has whole seconds: a token of the life's first second counts as this life's.
  const fromBefore = born !== undefined && claims.iat < Math.floor(born / 1000) && !edge.reregistered.has(claims.jti)
  if (!fromBefore && now / 1000 < claims.iat + (claims.exp - claims.iat) / 2) return { visitor: claims.sub, token, cookies: [], ...lane }
  const renewed = await renewAdmission(edge, room, req, claims, token)
  if (fromBefore && isAdmitted(renewed)) edge.reregister(claims.jti)
  return renewed
}

/** Half the session has gone: one store call extends it. Undefined when an admin ended the session. */
async function renewAdmission(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  claims: AdmissionClaims,
  token: string,
): Promise<AdmissionCheck> {
  try {
    const renewed = await meteredCall(edge.deps.meters, 'renew', () =>
      edge.deps.queue.renew({
        room: lineOf(room, claims.lane).id,
        visitor: claims.sub,
        sessionMs: room.sessionDurationSeconds * 1000,
        now: edge.storeNow(),
      }),
    )
    if (renewed === undefined) {
      edge.log('session_ended', { room: room.id, requestId: edge.requestId(req.context) })
      return { ended: claims.sub }
    }
    const next = await signAdmission(edge, room, { ...claims, exp: Math.floor(renewed.sessionExpires / 1000) }, renewed.now, req.secure)
    return { visitor: claims.sub, token: next.token, cookies: [next.cookie], ...(claims.lane === undefined ? {} : { lane: claims.lane }) }
  } catch (err) {
    if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
    // Admitted visitors keep working while the store is away: their token still holds.
    return { visitor: claims.sub, token, cookies: [], ...(claims.lane === undefined ? {} : { lane: claims.lane }) }
  }
}

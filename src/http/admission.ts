// Admissions at the edge: checking a visitor's admission cookie (no store call, except a renewal
// once half the session has gone), and signing an admission into its token and cookie.
import type { AdmissionClaims } from '../core/admission-token.js'
import { isAnteroomError } from '../core/errors.js'
import type { RoomSettings } from '../core/settings.js'
import { admissionCookieName, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import type { Incoming } from './request.js'

/** A valid admission: the token to forward to the origin, and cookies to set (a renewed one). */
export interface Admitted {
  token: string
  cookies: string[]
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

/** The visitor's admission to this room, if their cookie holds a valid one (verified once, then cached). */
export async function checkAdmission(edge: EdgeContext, room: RoomSettings, req: Incoming): Promise<Admitted | undefined> {
  const now = edge.now()
  const token = readCookie(req.cookie, admissionCookieName(room.id))
  const claims = await edge.deps.admissionTokens.verify(token, room.id, now)
  if (claims === undefined || token === undefined) return undefined
  // An open admission is never renewed: once it lapses, the visitor's queue token takes them back in line.
  if (claims.open || now / 1000 < claims.iat + (claims.exp - claims.iat) / 2) return { token, cookies: [] }
  return renewAdmission(edge, room, req, claims, token)
}

/** Half the session has gone: one store call extends it. Undefined when an admin ended the session. */
async function renewAdmission(
  edge: EdgeContext,
  room: RoomSettings,
  req: Incoming,
  claims: AdmissionClaims,
  token: string,
): Promise<Admitted | undefined> {
  try {
    const renewed = await edge.deps.queue.renew({
      room: room.id,
      visitor: claims.sub,
      sessionMs: room.sessionDurationSeconds * 1000,
      now: edge.storeNow(),
    })
    if (renewed === undefined) {
      edge.log('session_ended', { room: room.id })
      return undefined
    }
    const next = await signAdmission(edge, room, { ...claims, exp: Math.floor(renewed.sessionExpires / 1000) }, renewed.now, req.secure)
    return { token: next.token, cookies: [next.cookie] }
  } catch (err) {
    if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
    // Admitted visitors keep working while the store is away: their token still holds.
    return { token, cookies: [] }
  }
}

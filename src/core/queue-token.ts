// The queue token: a visitor's signed, timestamped place in line, kept in an HttpOnly cookie.
//
// Format: q1.<room>.<visitor>.<arrival µs, base 36>.<expiry ms, base 36>.<mac>
// The MAC covers every other field, so a visitor can move neither their arrival time nor their room.
// It lapses abandonAfter after the last poll: each poll re-signs it with a later expiry.
import type { Mac } from '../ports/crypto.js'
import { safeEqual } from './compare.js'
import { ROOM_ID } from './settings.js'

export interface QueueTicket {
  room: string
  visitor: string
  /** Arrival time in µs on the store's clock (unique within the room). */
  arrival: number
  /** When the token lapses, in ms. */
  expires: number
}

/** A visitor id as newVisitorId makes it: 16 base64url characters. */
export const VISITOR_ID = /^[A-Za-z0-9_-]{16}$/
const MAX_LENGTH = 160

function body(t: QueueTicket): string {
  return `q1.${t.room}.${t.visitor}.${t.arrival.toString(36)}.${t.expires.toString(36)}`
}

export function newVisitorId(): string {
  const bytes = new Uint8Array(12)
  crypto.getRandomValues(bytes)
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_')
}

export class QueueTokens {
  constructor(private readonly mac: Mac) {}

  async sign(ticket: QueueTicket): Promise<string> {
    const data = body(ticket)
    return `${data}.${await this.mac.sign(data)}`
  }

  /**
   * Returns the ticket if the token is well formed, signed by us, for this room and not lapsed.
   * Anything else (truncated, forged, foreign, expired) is undefined: the caller gives a fresh place.
   */
  async verify(token: string | undefined, room: string, now: number): Promise<QueueTicket | undefined> {
    if (token === undefined || token.length > MAX_LENGTH) return undefined
    const parts = token.split('.')
    if (parts.length !== 6 || parts[0] !== 'q1') return undefined
    const [, tokenRoom, visitor, arrival36, expires36, mac] = parts as [string, string, string, string, string, string]
    if (tokenRoom !== room || !ROOM_ID.test(tokenRoom) || !VISITOR_ID.test(visitor)) return undefined
    if (!/^[0-9a-z]{1,12}$/.test(arrival36) || !/^[0-9a-z]{1,11}$/.test(expires36)) return undefined
    const ticket = { room, visitor, arrival: Number.parseInt(arrival36, 36), expires: Number.parseInt(expires36, 36) }
    if (!safeEqual(mac, await this.mac.sign(body(ticket)))) return undefined
    if (ticket.expires <= now) return undefined
    return ticket
  }
}

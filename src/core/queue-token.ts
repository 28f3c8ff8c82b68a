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

/** A whole-string pattern without its anchors. */
function inner(whole: RegExp): string {
  return whole.source.slice(1, -1)
}

/**
 * A token's six dot-separated fields: q1, a room id (ROOM_ID), a visitor id (VISITOR_ID), the arrival
 * and the expiry in base 36 (at most 12 and 11 digits), and the MAC (anything without a dot).
 */
const TOKEN = new RegExp(`^q1\\.(${inner(ROOM_ID)})\\.(${inner(VISITOR_ID)})\\.([0-9a-z]{1,12})\\.([0-9a-z]{1,11})\\.([^.]*)$`)

/** Whether base-36 digits are what toString(36) writes for the number they parse to (no leading zero, exact). */
function canonical(digits: string, n: number): boolean {
  return (digits.length === 1 || digits.charCodeAt(0) !== 0x30) && n <= Number.MAX_SAFE_INTEGER
}

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

  sign(ticket: QueueTicket): string {
    const data = body(ticket)
    return `${data}.${this.mac.sign(data)}`
  }

  /**
   * Returns the ticket if the token is well formed, signed by us, for this room and not lapsed.
   * Anything else (truncated, forged, foreign, expired) is undefined: the caller gives a fresh place.
   */
  verify(token: string | undefined, room: string, now: number): QueueTicket | undefined {
    if (token === undefined || token.length > MAX_LENGTH) return undefined
    const m = TOKEN.exec(token)
    if (m === null) return undefined
    const [, tokenRoom, visitor, arrival36, expires36, mac] = m as unknown as [string, string, string, string, string, string]
    if (tokenRoom !== room) return undefined
    const ticket = { room, visitor, arrival: Number.parseInt(arrival36, 36), expires: Number.parseInt(expires36, 36) }
    if (ticket.expires <= now) return undefined
    // The MAC is over the fields as sign() writes them; a token that spells them so is its own text.
    const data =
      canonical(arrival36, ticket.arrival) && canonical(expires36, ticket.expires)
        ? token.slice(0, token.length - mac.length - 1)
        : body(ticket)
    return safeEqual(mac, this.mac.sign(data)) ? ticket : undefined
  }
}

// The queue token: a visitor's signed, timestamped place in line, kept in an HttpOnly cookie.
//
// Format: q1.<room>.<visitor>.<arrival µs, base 36>.<expiry ms, base 36>.<mac>
// The MAC covers every other field, so a visitor can move neither their arrival time nor their room.
// It lapses abandonAfter after the last poll: each poll re-signs it with a later expiry.
import type { Mac } from '../ports/crypto.js'

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

/** Whether the code is a visitor id's character: [A-Za-z0-9_-]. */
function isIdCode(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x5f
}

/** Whether the code is a lower-case base-36 digit: [0-9a-z]. */
function isBase36Code(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a)
}

/** Where a run of base-36 digits from `from` ends (the index after it), if it has 1 to `most` digits and a dot follows. */
function digitsThenDot(token: string, from: number, most: number): number {
  let i = from
  while (i < token.length && i - from <= most && isBase36Code(token.charCodeAt(i))) i++
  return i > from && i - from <= most && token.charCodeAt(i) === 0x2e ? i : -1
}

/**
 * Where the expiry and the MAC begin in what follows `q1.<room>.` at `start`: a visitor id
 * (VISITOR_ID), a dot, the arrival and the expiry in base 36 (1 to 12 and 1 to 11 digits, each
 * followed by a dot), and a MAC without a dot; undefined for anything else. Read by hand: the same
 * as the regular expression it replaced, at a fraction of its cost a poll (test/tokens.test.ts
 * compares the whole reading with a split-and-rebuild reference).
 */
function tailAt(token: string, start: number): { expiresAt: number; macAt: number } | undefined {
  for (let i = start; i < start + 16; i++) if (!isIdCode(token.charCodeAt(i))) return undefined
  if (token.charCodeAt(start + 16) !== 0x2e) return undefined
  const arrivalEnd = digitsThenDot(token, start + 17, 12)
  if (arrivalEnd < 0) return undefined
  const expiresEnd = digitsThenDot(token, arrivalEnd + 1, 11)
  if (expiresEnd < 0 || token.indexOf('.', expiresEnd + 1) >= 0) return undefined
  return { expiresAt: arrivalEnd + 1, macAt: expiresEnd + 1 }
}

/** Whether base-36 digits are what toString(36) writes for the number they parse to (no leading zero, exact). */
function canonical(digits: string, n: number): boolean {
  return (digits.length === 1 || digits.charCodeAt(0) !== 0x30) && n <= Number.MAX_SAFE_INTEGER
}

function body(t: QueueTicket): string {
  return `q1.${t.room}.${t.visitor}.${base36(t.arrival)}.${base36(t.expires)}`
}

/** 36 to the 5th: below it a number is a small integer, which V8 writes in base 36 quickly. */
const FIVE_DIGITS = 36 ** 5

/**
 * n.toString(36), the same text, written five digits at a time for a large safe integer: V8 writes a
 * large number in another base through its general double-to-text path, which costs about four
 * times as much (a poll writes two, an arrival in µs and an expiry in ms).
 */
export function base36(n: number): string {
  if (n < FIVE_DIGITS || !Number.isSafeInteger(n)) return n.toString(36)
  const high = Math.floor(n / FIVE_DIGITS)
  const low = (n - high * FIVE_DIGITS).toString(36)
  return `${base36(high)}${'00000'.slice(low.length)}${low}`
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
    // q1.<room>. then the rest as tailAt reads it.
    const start = room.length + 4
    if (!token.startsWith('q1.') || !token.startsWith(room, 3) || token.charCodeAt(start - 1) !== 0x2e) return undefined
    const tail = tailAt(token, start)
    if (tail === undefined) return undefined
    const { expiresAt, macAt } = tail
    const visitor = token.slice(start, start + 16)
    const arrival36 = token.slice(start + 17, expiresAt - 1)
    const expires36 = token.slice(expiresAt, macAt - 1)
    const mac = token.slice(macAt)
    const ticket = { room, visitor, arrival: Number.parseInt(arrival36, 36), expires: Number.parseInt(expires36, 36) }
    if (ticket.expires <= now) return undefined
    // The MAC is over the fields as sign() writes them; a token that spells them so is its own text.
    const data =
      canonical(arrival36, ticket.arrival) && canonical(expires36, ticket.expires)
        ? token.slice(0, token.length - mac.length - 1)
        : body(ticket)
    return this.mac.verify(data, mac) ? ticket : undefined
  }
}

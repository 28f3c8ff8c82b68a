// The shadow lane: where a newcomer who failed the human check (core/human-check.ts) waits. They get a
// queue cookie and a queue page, and polls that answer like anyone's in line, but they never take a
// place in the real line and are never admitted: the store is never asked for them, so a bot in the
// shadow lane costs the store nothing, and its polls teach it nothing it could tell apart.
//
// Their token is a queue token in the same format (q1.<room>.<visitor>.<arrival>.<expiry>.<mac>) whose
// MAC is taken in a domain of its own ("shadow|"): without the queue secret nobody can tell the two
// apart, and a real queue token's check refuses it, so the edge looks for a shadow token only when a
// newcomer of a room with a human check brings no valid one (no cost on anyone's poll). The visitor
// id carries, masked under the same secret, how many were ahead and how many the room had admitted
// when they came: their place moves up as the line does, and stops at the front.
import type { Mac } from '../ports/crypto.js'
import { type QueueTicket, QueueTokens } from './queue-token.js'

const SHADOW_DOMAIN = 'shadow|'
const ID_DOMAIN = 'shadow-id|'

function base64url(bytes: Uint8Array): string {
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function fromBase64url(text: string): Uint8Array | undefined {
  try {
    const s = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4))
    return Uint8Array.from(s, (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

/** Where a shadow visitor stood when they came: how many were ahead, and the room's admitted total then. */
export interface ShadowOrigin {
  ahead: number
  admitted: number
}

export class ShadowTokens {
  private readonly tokens: QueueTokens

  constructor(private readonly mac: Mac) {
    this.tokens = new QueueTokens({
      sign: (data) => mac.sign(`${SHADOW_DOMAIN}${data}`),
      verify: (data, m) => mac.verify(`${SHADOW_DOMAIN}${data}`, m),
    })
  }

  sign(ticket: QueueTicket): string {
    return this.tokens.sign(ticket)
  }

  /** The ticket of a shadow token for this room that has not lapsed; undefined for anything else (a real queue token included). */
  verify(token: string | undefined, room: string, now: number): QueueTicket | undefined {
    return this.tokens.verify(token, room, now)
  }

  /** A visitor id (16 characters, as newVisitorId's) that carries where they stood. */
  newId(origin: ShadowOrigin): string {
    const bytes = new Uint8Array(12)
    crypto.getRandomValues(bytes.subarray(0, 4))
    const view = new DataView(bytes.buffer)
    view.setUint32(4, Math.min(0xffffffff, Math.max(0, Math.floor(origin.ahead))))
    view.setUint32(8, Math.min(0xffffffff, Math.max(0, Math.floor(origin.admitted))))
    const mask = this.maskFor(bytes.subarray(0, 4))
    for (let i = 0; i < 8; i++) bytes[4 + i] = (bytes[4 + i] as number) ^ (mask[i] as number)
    return base64url(bytes)
  }

  /** Where the visitor of this id stood (ids come from verified shadow tokens). */
  origin(visitor: string): ShadowOrigin {
    const bytes = fromBase64url(visitor)
    if (bytes === undefined || bytes.length !== 12) return { ahead: 0, admitted: 0 }
    const mask = this.maskFor(bytes.subarray(0, 4))
    for (let i = 0; i < 8; i++) bytes[4 + i] = (bytes[4 + i] as number) ^ (mask[i] as number)
    const view = new DataView(bytes.buffer)
    return { ahead: view.getUint32(4), admitted: view.getUint32(8) }
  }

  private maskFor(salt: Uint8Array): Uint8Array {
    return fromBase64url(this.mac.sign(`${ID_DOMAIN}${base64url(salt)}`)) ?? new Uint8Array(32)
  }
}

/**
 * A shadow visitor's place now: those ahead when they came, less the room's admissions since (a total
 * that went down means the store started the room again: all of it counts), never past the front.
 */
export function shadowPosition(origin: ShadowOrigin, admittedNow: number): number {
  const since = admittedNow >= origin.admitted ? admittedNow - origin.admitted : admittedNow
  return Math.max(1, origin.ahead + 1 - since)
}

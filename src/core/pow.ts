// Proof of work at join (the room setting powDifficulty): before a visitor gets a place in line, their
// client finds a nonce such that SHA-256(challenge + "." + nonce) starts with `difficulty` zero bits.
// The edge signs the challenge (HMAC-SHA256 under the queue secret, in the domain "pow|", so that it
// can never pass for a queue token or an admin session) and it names the room, the visitor id the
// place will have, and an expiry: a valid answer is worth one place in one room for two minutes, and
// replayed, it only ever yields that same place. The edge checks an answer with one HMAC and one SHA-256.
//
// Challenge: p1.<room>.<visitor>.<difficulty>.<expiry ms, base 36>.<salt>.<mac>
// Answer:    <challenge>.<nonce>, the nonce 1-32 of [A-Za-z0-9_-]; the answer is what is hashed.
import type { Digest, Mac } from '../ports/crypto.js'
import { newVisitorId, VISITOR_ID } from './queue-token.js'
import { ROOM_ID, type RoomSettings } from './settings.js'
import { noPlace, type VisitorStatus } from './visit.js'

/** The request header a client answers with. Like every anteroom-* header, it never reaches the origin. */
export const POW_HEADER = 'anteroom-pow'
/** How long a challenge may be answered. */
export const POW_CHALLENGE_MS = 120_000
/** What the README recommends: about a second in headless Chromium on this project's 2-core machines. */
export const POW_RECOMMENDED_DIFFICULTY = 18

export interface PowChallenge {
  /** The challenge as the client gets it. */
  value: string
  room: string
  /** The visitor id the place will have. */
  visitor: string
  /** Leading zero bits asked for. */
  difficulty: number
  /** When it can no longer be answered, ms. */
  expires: number
}

/** Why an answer was refused; each has its error code (src/http/pow.ts). */
export type PowProblem = 'malformed' | 'forged' | 'wrong-room' | 'expired' | 'insufficient'

export type PowCheck = { ok: true; challenge: PowChallenge } | { ok: false; problem: PowProblem }

/** The challenge as JSON clients get it, in the status body (state "challenge"). */
export interface ChallengeInfo {
  value: string
  difficulty: number
  expiresInSeconds: number
  /** Where the answer goes: `Anteroom-Pow: <value>.<nonce>`. */
  header: 'Anteroom-Pow'
}

/** The answer to a visitor who must solve a challenge first: no place yet, so no numbers. */
export interface ChallengeStatus extends Omit<VisitorStatus, 'state'> {
  state: 'challenge'
  challenge: ChallengeInfo
}

const SALT = /^[A-Za-z0-9_-]{11}$/
const NONCE = /^[A-Za-z0-9_-]{1,32}$/
const MAC = /^[A-Za-z0-9_-]{43}$/
const MAX_ANSWER = 200

function base64url(bytes: Uint8Array): string {
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function bodyOf(c: Omit<PowChallenge, 'value'>, salt: string): string {
  return `p1.${c.room}.${c.visitor}.${c.difficulty}.${c.expires.toString(36)}.${salt}`
}

/** How many zero bits a hash starts with. */
export function leadingZeroBits(hash: Uint8Array): number {
  let bits = 0
  for (const byte of hash) {
    if (byte !== 0) return bits + Math.clz32(byte) - 24
    bits += 8
  }
  return bits
}

export class PowChallenges {
  constructor(
    private readonly mac: Mac,
    private readonly digest: Digest,
  ) {}

  /** A fresh challenge for a new visitor of `room`. */
  async issue(room: string, difficulty: number, now: number): Promise<PowChallenge> {
    const salt = new Uint8Array(8)
    crypto.getRandomValues(salt)
    const fields = { room, visitor: newVisitorId(), difficulty, expires: now + POW_CHALLENGE_MS }
    const body = bodyOf(fields, base64url(salt))
    return { ...fields, value: `${body}.${this.mac.sign(`pow|${body}`)}` }
  }

  /**
   * Checks an answer for `room`, whose difficulty is now `difficulty`: well formed, signed by us, for
   * this room, not expired, and a hash with as many zero bits as the challenge and the room ask.
   */
  async check(answer: string, room: string, difficulty: number, now: number): Promise<PowCheck> {
    if (answer.length > MAX_ANSWER) return { ok: false, problem: 'malformed' }
    const parts = answer.split('.')
    if (parts.length !== 8 || parts[0] !== 'p1') return { ok: false, problem: 'malformed' }
    type Eight = [string, string, string, string, string, string, string, string]
    const [, forRoom, visitor, bits, expires36, salt, mac, nonce] = parts as Eight
    if (
      !ROOM_ID.test(forRoom) ||
      !VISITOR_ID.test(visitor) ||
      !/^[0-9]{1,2}$/.test(bits) ||
      !/^[0-9a-z]{1,11}$/.test(expires36) ||
      !SALT.test(salt) ||
      !MAC.test(mac) ||
      !NONCE.test(nonce)
    ) {
      return { ok: false, problem: 'malformed' }
    }
    const fields = { room: forRoom, visitor, difficulty: Number(bits), expires: Number.parseInt(expires36, 36) }
    const body = bodyOf(fields, salt)
    if (!this.mac.verify(`pow|${body}`, mac)) return { ok: false, problem: 'forged' }
    if (fields.room !== room) return { ok: false, problem: 'wrong-room' }
    if (fields.expires <= now) return { ok: false, problem: 'expired' }
    // A room whose difficulty went up since the challenge asks for the new one.
    const needed = Math.max(fields.difficulty, difficulty)
    if (leadingZeroBits(await this.digest.sha256(answer)) < needed) return { ok: false, problem: 'insufficient' }
    return { ok: true, challenge: { ...fields, value: `${body}.${mac}` } }
  }
}

export function challengeStatus(room: RoomSettings, challenge: PowChallenge, now: number): ChallengeStatus {
  return {
    room: room.id,
    state: 'challenge',
    ...noPlace(room),
    challenge: {
      value: challenge.value,
      difficulty: challenge.difficulty,
      expiresInSeconds: Math.max(0, Math.floor((challenge.expires - now) / 1000)),
      header: 'Anteroom-Pow',
    },
  }
}

/** Finds an answer, as a client would (tests, benches, a JSON client in TypeScript): 2^difficulty hashes on average. */
export async function solveChallenge(challenge: string, difficulty: number, digest: Digest): Promise<string> {
  for (let n = 0; ; n++) {
    const answer = `${challenge}.${n.toString(36)}`
    if (leadingZeroBits(await digest.sha256(answer)) >= difficulty) return answer
  }
}

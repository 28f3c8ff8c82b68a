// The draw of a scheduled room (issue #13): everyone who joins during the pre-queue is put in a random
// order when the sale opens, and anyone can check that order afterwards.
//
//   seed        32 bytes, fixed per room and schedule: HMAC-SHA256 under the deployment's queue secret
//               of "anteroom-draw-seed:<room>:<prequeueAt ms>:<opensAt ms>". Every edge derives the same
//               one with no coordination, and no store loss can change it. Secret until opensAt.
//   commitment  SHA-256(seed), hex: published at GET /_anteroom/draw from the pre-queue's start.
//   value       HMAC-SHA256(key = seed, message = "<room>:<visitor id>"), hex: a visitor's draw value.
//   order       ascending value; precisely, by the value's first 40 bits, then by visitor id (a tie
//               in 40 bits has odds of about n² / 2^41: 0.5% with 100,000 in the pre-queue).
//
// The order is carried out by giving each pre-queue visitor a drawn arrival: opensAt (µs) − 2^40 + the
// value's first 40 bits. The line is ordered by (arrival, visitor id), so the drawn arrivals are in
// draw order, all before the opening, and everyone who arrives later (arrival ≥ opensAt) queues
// behind them; the queue token keeps the drawn arrival, so a store loss restores it like any other.
import type { Digests, Mac } from '../ports/crypto.js'
import type { Schedule } from './settings.js'

/** Drawn arrivals lie in [opensAt − DRAW_SPAN_US, opensAt) µs: 40 bits, about 12.7 days. */
export const DRAW_SPAN_US = 2 ** 40
/** Hex digits of a value that make its drawn arrival (40 bits). */
const ORDER_HEX = 10

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

function base64urlToHex(s: string): string {
  let bits = 0
  let acc = 0
  let out = ''
  for (const ch of s) {
    const v = B64URL.indexOf(ch)
    if (v < 0) continue
    acc = (acc << 6) | v
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out += ((acc >> bits) & 0xff).toString(16).padStart(2, '0')
    }
  }
  return out
}

export function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

/** The room's secret seed, hex (64 digits). */
export async function drawSeed(mac: Mac, room: string, schedule: Schedule): Promise<string> {
  const message = `anteroom-draw-seed:${room}:${Date.parse(schedule.prequeueAt)}:${Date.parse(schedule.opensAt)}`
  return base64urlToHex(mac.sign(message))
}

/** SHA-256 of the seed's bytes, hex: what the room publishes before the draw. */
export function drawCommitment(digests: Digests, seedHex: string): Promise<string> {
  return digests.sha256Hex(hexToBytes(seedHex))
}

/** A visitor's draw value, hex (64 digits). */
export function drawValue(digests: Digests, seedHex: string, room: string, visitor: string): Promise<string> {
  return digests.hmacSha256Hex(hexToBytes(seedHex), `${room}:${visitor}`)
}

/** The arrival (µs) that puts a visitor with this value in their place of the draw. */
export function drawnArrivalUs(valueHex: string, opensAtMs: number): number {
  return opensAtMs * 1000 - DRAW_SPAN_US + Number.parseInt(valueHex.slice(0, ORDER_HEX), 16)
}

/** Whether an arrival is a drawn one of a room opening at `opensAtMs`. */
export function isDrawnArrival(arrivalUs: number, opensAtMs: number): boolean {
  return arrivalUs < opensAtMs * 1000 && arrivalUs >= opensAtMs * 1000 - DRAW_SPAN_US
}

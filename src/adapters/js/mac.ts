// The edge's MAC (queue tokens, challenges, admin sessions, a scheduled room's seed), on every
// runtime: HMAC-SHA256 (RFC 2104, FIPS 180-4) in plain JavaScript, base64url out, the same bytes as
// node:crypto's and WebCrypto's HMAC (test/mac.test.ts checks it against both).
//
// Why a MAC of our own: a queued visitor's poll pays two (one check, one re-sign), and they were the
// largest part of a poll after HTTP itself. The key's two padded blocks are hashed once here, so a
// token's MAC is two or three SHA-256 blocks and makes no garbage but its text. node:crypto builds an
// Hmac object and hashes both pads again on every call; WebCrypto is asynchronous, a turn of the
// event loop each. The measured costs are in docs/measurements-2026-12.md ("What a poll costs").
//
// Nothing branches on the key; on the data, only its length and whether it is ASCII (a token's text
// is not secret).
import type { Mac } from '../../ports/crypto.js'

function firstPrimes(n: number): number[] {
  const primes: number[] = []
  for (let c = 2; primes.length < n; c++) if (primes.every((p) => c % p !== 0)) primes.push(c)
  return primes
}
/** The first 32 bits of a number's fractional part, as FIPS 180-4 derives SHA-256's constants. */
const fraction32 = (x: number) => ((x - Math.floor(x)) * 2 ** 32) | 0
/** The round constants: cube roots of the first 64 primes. */
const K = Int32Array.from(firstPrimes(64), (p) => fraction32(Math.cbrt(p)))
/** The initial state: square roots of the first 8 primes. */
const INITIAL = Int32Array.from(firstPrimes(8), (p) => fraction32(Math.sqrt(p)))

/** The message schedule, shared: nothing here awaits, so one call uses it at a time. */
const w = new Int32Array(64)

/** One SHA-256 compression of the block in w[0..15] into state. */
function compress(state: Int32Array): void {
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15] as number
    const y = w[i - 2] as number
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)
    w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0
  }
  let a = state[0] as number
  let b = state[1] as number
  let c = state[2] as number
  let d = state[3] as number
  let e = state[4] as number
  let f = state[5] as number
  let g = state[6] as number
  let h = state[7] as number
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + (K[i] as number) + (w[i] as number)) | 0
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0
    h = g
    g = f
    f = e
    e = (d + t1) | 0
    d = c
    c = b
    b = a
    a = (t1 + t2) | 0
  }
  state[0] = ((state[0] as number) + a) | 0
  state[1] = ((state[1] as number) + b) | 0
  state[2] = ((state[2] as number) + c) | 0
  state[3] = ((state[3] as number) + d) | 0
  state[4] = ((state[4] as number) + e) | 0
  state[5] = ((state[5] as number) + f) | 0
  state[6] = ((state[6] as number) + g) | 0
  state[7] = ((state[7] as number) + h) | 0
}

/**
 * Hashes the first n bytes into state, which has absorbed `before` bytes (whole blocks) already, and
 * pads: state is then the digest.
 */
function absorb(state: Int32Array, bytes: Uint8Array, n: number, before: number): void {
  w.fill(0, 0, 16)
  let j = 0
  for (let i = 0; i < n; i++, j++) {
    if (j === 64) {
      compress(state)
      w.fill(0, 0, 16)
      j = 0
    }
    w[j >> 2] = (w[j >> 2] as number) | ((bytes[i] as number) << (24 - 8 * (j & 3)))
  }
  if (j === 64) {
    compress(state)
    w.fill(0, 0, 16)
    j = 0
  }
  w[j >> 2] = (w[j >> 2] as number) | (0x80 << (24 - 8 * (j & 3)))
  if (j >= 56) {
    compress(state)
    w.fill(0, 0, 16)
  }
  const bits = (before + n) * 8
  w[14] = Math.floor(bits / 2 ** 32)
  w[15] = bits | 0
  compress(state)
}

/** Writes state's eight words big-endian into out. */
function toBytes(state: Int32Array, out: Uint8Array): void {
  for (let i = 0; i < 8; i++) {
    const v = state[i] as number
    out[4 * i] = v >>> 24
    out[4 * i + 1] = v >>> 16
    out[4 * i + 2] = v >>> 8
    out[4 * i + 3] = v
  }
}

/** The base64url alphabet as character codes. */
const BASE64URL = Uint8Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', (c) => c.charCodeAt(0))
/** The 43 characters' codes: a plain array, which String.fromCharCode.apply reads about twice as fast as a typed one. */
const text: number[] = new Array(43).fill(0)

/** 32 bytes as the codes of 43 base64url characters, unpadded, into text. */
function base64urlCodes(d: Uint8Array): void {
  let j = 0
  for (let i = 0; i < 30; i += 3) {
    const v = ((d[i] as number) << 16) | ((d[i + 1] as number) << 8) | (d[i + 2] as number)
    text[j++] = BASE64URL[v >> 18] as number
    text[j++] = BASE64URL[(v >> 12) & 63] as number
    text[j++] = BASE64URL[(v >> 6) & 63] as number
    text[j++] = BASE64URL[v & 63] as number
  }
  const v = ((d[30] as number) << 8) | (d[31] as number)
  text[40] = BASE64URL[v >> 10] as number
  text[41] = BASE64URL[(v >> 4) & 63] as number
  text[42] = BASE64URL[(v << 2) & 63] as number
}

const encoder = new TextEncoder()
const digest = new Uint8Array(32)
const state = new Int32Array(8)

/**
 * Hashes an ASCII string into state, which has absorbed one block (a pad) already, writing its
 * characters straight into the message schedule; pads. False, with state spoilt, at the first
 * character beyond ASCII: the caller hashes the string's UTF-8 bytes instead.
 */
function absorbAscii(data: string): boolean {
  const n = data.length
  let word = 0
  let j = 0
  for (let i = 0; i < n; i++) {
    const code = data.charCodeAt(i)
    if (code > 0x7f) return false
    word = (word << 8) | code
    if ((j & 3) === 3) {
      w[j >> 2] = word
      word = 0
    }
    if (++j === 64) {
      compress(state)
      j = 0
    }
  }
  // The 0x80 after the message, zeros, and the length in bits (the pad block included) at the end.
  const shift = 8 * (3 - (j & 3))
  w[j >> 2] = ((word << 8) | 0x80) << shift
  let k = (j >> 2) + 1
  if (k > 14) {
    for (; k < 16; k++) w[k] = 0
    compress(state)
    k = 0
  }
  for (; k < 14; k++) w[k] = 0
  const bits = (64 + n) * 8
  w[14] = Math.floor(bits / 2 ** 32)
  w[15] = bits | 0
  compress(state)
  return true
}

/** The SHA-256 state after one 64-byte block: the key, zero-padded, XOR pad. */
function padState(key: Uint8Array, pad: number): Int32Array {
  const block = new Uint8Array(64)
  for (let i = 0; i < 64; i++) block[i] = (key[i] ?? 0) ^ pad
  w.fill(0, 0, 16)
  for (let i = 0; i < 64; i++) w[i >> 2] = (w[i >> 2] as number) | ((block[i] as number) << (24 - 8 * (i & 3)))
  const s = Int32Array.from(INITIAL)
  compress(s)
  return s
}

export function jsMac(secret: string): Mac {
  let key = encoder.encode(secret)
  if (key.length > 64) {
    // RFC 2104: a key longer than a block is hashed first.
    const s = Int32Array.from(INITIAL)
    absorb(s, key, key.length, 0)
    key = new Uint8Array(32)
    toBytes(s, key)
  }
  const inner = padState(key, 0x36)
  const outer = padState(key, 0x5c)
  /** The MAC of data, as the codes of its 43 base64url characters in text. */
  function macCodes(data: string): void {
    state.set(inner)
    if (!absorbAscii(data)) {
      const bytes = encoder.encode(data)
      state.set(inner)
      absorb(state, bytes, bytes.length, 64)
    }
    // The outer hash: the inner digest (eight words), 0x80, zeros, and 96 bytes in bits.
    for (let i = 0; i < 8; i++) w[i] = state[i] as number
    w[8] = 0x80000000
    w.fill(0, 9, 15)
    w[15] = (64 + 32) * 8
    state.set(outer)
    compress(state)
    toBytes(state, digest)
    base64urlCodes(digest)
  }
  return {
    sign(data) {
      macCodes(data)
      // Made in one call, so the string is flat.
      return String.fromCharCode.apply(null, text)
    },
    verify(data, mac) {
      if (mac.length !== 43) return false
      macCodes(data)
      // In time that does not depend on where they differ (as core/compare.ts's safeEqual), without
      // making the expected text.
      let diff = 0
      for (let i = 0; i < 43; i++) diff |= (text[i] as number) ^ mac.charCodeAt(i)
      return diff === 0
    },
  }
}

// The queue-token MAC: the plain-JavaScript HMAC-SHA256 every edge uses (adapters/js/mac.ts) gives the
// same text as node:crypto and WebCrypto for any key and data (so tokens signed by releases that used
// those stay valid), and it is HMAC-SHA256 as RFC 4231 defines it.
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { jsMac } from '../src/adapters/js/mac.js'
import { safeEqual } from '../src/core/compare.js'
import { QueueTokens } from '../src/core/queue-token.js'
import type { Mac } from '../src/ports/crypto.js'

/** The references: node:crypto's HMAC, and WebCrypto's (asynchronous, so not a Mac). */
const nodeMac = (secret: string): Mac => {
  const sign = (data: string) => createHmac('sha256', secret).update(data).digest('base64url')
  return { sign, verify: (data, mac) => safeEqual(mac, sign(data)) }
}
async function webCryptoHmac(secret: string, data: string): Promise<string> {
  const encoder = new TextEncoder()
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return Buffer.from(await crypto.subtle.sign('HMAC', key, encoder.encode(data))).toString('base64url')
}

const hexToBase64url = (hex: string) => Buffer.from(hex, 'hex').toString('base64url')

describe('queue-token MAC in plain JavaScript', () => {
  it('gives RFC 4231 test case 2', () => {
    expect(jsMac('Jefe').sign('what do ya want for nothing?')).toBe(
      hexToBase64url('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'),
    )
  })

  it('agrees with node:crypto and WebCrypto on random keys and data of every length around the block edges', async () => {
    let seed = 11
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const ascii = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-'
    const wide = [...'aé\u00ff\u0100€😀\ud800.']
    for (let t = 0; t < 400; t++) {
      const keyLength = [1, 2, 32, 63, 64, 65, 100, 140][t % 8] as number
      const key = Array.from({ length: keyLength }, () => ascii[rand(ascii.length)]).join('')
      // Lengths 0..200 cover data ending in each place of the first, second and third block.
      const length = t < 200 ? t : rand(400)
      const pool = t % 4 === 3 ? wide : [...ascii]
      const data = Array.from({ length }, () => pool[rand(pool.length)]).join('')
      const mine = jsMac(key).sign(data)
      expect(mine).toBe(nodeMac(key).sign(data))
      expect(mine).toBe(await webCryptoHmac(key, data))
      expect(jsMac(key).verify(data, mine)).toBe(true)
    }
  })

  it('verifies its own MAC and nothing else: any one character changed, a MAC cut or grown, another key', () => {
    const mac = jsMac('a-test-secret-that-is-long-enough-1234')
    const data = 'q1.sale.AAAAAAAAAAAAAAAA.abc.def'
    const good = mac.sign(data)
    expect(mac.verify(data, good)).toBe(true)
    for (let i = 0; i < good.length; i++) {
      const changed = `${good.slice(0, i)}${good[i] === 'A' ? 'B' : 'A'}${good.slice(i + 1)}`
      expect(mac.verify(data, changed), changed).toBe(false)
    }
    for (const other of ['', good.slice(0, -1), `${good}A`, `${good.slice(0, -1)}\u0100`]) expect(mac.verify(data, other)).toBe(false)
    expect(mac.verify(`${data}x`, good)).toBe(false)
    expect(jsMac('another-secret-that-is-long-enough-999').verify(data, good)).toBe(false)
  })

  it('signs queue tokens that the node:crypto MAC verifies, and the other way round', async () => {
    const secret = 'a-test-secret-that-is-long-enough-1234'
    const now = 1_800_000_000_000
    const ticket = { room: 'sale', visitor: 'AAAAAAAAAAAAAAAA', arrival: now * 1000 - 5, expires: now + 60_000 }
    const js = new QueueTokens(jsMac(secret))
    const node = new QueueTokens(nodeMac(secret))
    expect(node.verify(js.sign(ticket), 'sale', now)).toEqual(ticket)
    expect(js.verify(node.sign(ticket), 'sale', now)).toEqual(ticket)
    expect(new QueueTokens(jsMac(`${secret}x`)).verify(js.sign(ticket), 'sale', now)).toBeUndefined()
  })
})

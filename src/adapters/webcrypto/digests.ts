// SHA-256 and HMAC-SHA256 with WebCrypto (Node 20 and workerd alike), for the draw (core/draw.ts).

import { BoundedMap } from '../../core/bounded-map.js'
import type { Digests } from '../../ports/crypto.js'

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('')

export function webCryptoDigests(): Digests {
  const encoder = new TextEncoder()
  // One imported key per seed: a room's draw signs every joiner's value with the same one.
  const keys = new BoundedMap<string, Promise<CryptoKey>>(64)
  const keyFor = (key: Uint8Array) => {
    const id = hex(key.buffer.slice(key.byteOffset, key.byteOffset + key.byteLength) as ArrayBuffer)
    let k = keys.get(id)
    if (k === undefined) {
      k = crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
      keys.set(id, k)
    }
    return k
  }
  return {
    sha256Hex: async (data) => hex(await crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>)),
    hmacSha256Hex: async (key, data) => hex(await crypto.subtle.sign('HMAC', await keyFor(key), encoder.encode(data))),
  }
}

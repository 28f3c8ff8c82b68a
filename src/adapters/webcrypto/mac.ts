// Queue-token MAC with WebCrypto, for runtimes without node:crypto's synchronous HMAC (Workers).
// Same algorithm and encoding as adapters/node/mac.ts, so tokens move freely between the two.
import type { Mac } from '../../ports/crypto.js'

function base64url(bytes: ArrayBuffer): string {
  let s = ''
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b)
  return btoa(s).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

export function webCryptoMac(secret: string): Mac {
  const key = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const encoder = new TextEncoder()
  return {
    sign: async (data) => base64url(await crypto.subtle.sign('HMAC', await key, encoder.encode(data))),
  }
}

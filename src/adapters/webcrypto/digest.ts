// SHA-256 with WebCrypto, for runtimes without node:crypto (Workers). Same bytes as adapters/node/digest.ts.
import type { Digest } from '../../ports/crypto.js'

const encoder = new TextEncoder()

export const webCryptoDigest: Digest = {
  sha256: async (data) => new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(data))),
}

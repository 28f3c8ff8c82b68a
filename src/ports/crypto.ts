// Keyed MAC used for queue tokens, the plain hash that checks proof of work, and the ES256 check of an
// origin's admission verifier. The MAC is adapters/js/mac.ts on every runtime; the hashes and the
// signature check are node:crypto on Node and WebCrypto elsewhere.

export interface Mac {
  /**
   * Returns a base64url HMAC-SHA256 of data under the deployment's queue secret. Synchronous: a
   * queued visitor's poll checks and re-signs its token in the turn it is read.
   */
  sign(data: string): string
  /** Whether mac is sign(data), compared in time that does not depend on where they differ. */
  verify(data: string, mac: string): boolean
}

/**
 * Plain SHA-256 and HMAC-SHA256 under a key given per call, hex out: the draw of a scheduled room
 * (core/draw.ts), which third parties must be able to recompute with any SHA-256 library.
 */
export interface Digests {
  sha256Hex(data: Uint8Array): Promise<string>
  hmacSha256Hex(key: Uint8Array, data: string): Promise<string>
}

export interface Digest {
  /** SHA-256 of the UTF-8 bytes of data. */
  sha256(data: string): Uint8Array | Promise<Uint8Array>
}

/**
 * Whether `signature` (r || s, 64 bytes) is `key`'s ES256 signature of `data`: at once where the
 * runtime can (adapters/node/es256.ts), else a promise (WebCrypto's: booking/verify.ts).
 */
export type SignatureCheck = (
  key: CryptoKey,
  data: Uint8Array<ArrayBuffer>,
  signature: Uint8Array<ArrayBuffer>,
) => boolean | Promise<boolean>

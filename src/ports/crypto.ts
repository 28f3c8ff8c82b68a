// Keyed MAC used for queue tokens, and the plain hash that checks proof of work. The MAC is
// adapters/js/mac.ts on every runtime; the hashes are node:crypto on Node and WebCrypto on a Worker.

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

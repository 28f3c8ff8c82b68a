// Keyed MAC used for queue tokens, and the plain hash that checks proof of work. Node uses
// node:crypto, a Worker uses WebCrypto.

export interface Mac {
  /** Returns a base64url HMAC-SHA256 of data under the deployment's queue secret. */
  sign(data: string): string | Promise<string>
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

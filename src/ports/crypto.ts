// Keyed MAC used for queue tokens, and the plain hash that checks proof of work. Node uses
// node:crypto, a Worker uses WebCrypto.

export interface Mac {
  /** Returns a base64url HMAC-SHA256 of data under the deployment's queue secret. */
  sign(data: string): string | Promise<string>
}

export interface Digest {
  /** SHA-256 of the UTF-8 bytes of data. */
  sha256(data: string): Uint8Array | Promise<Uint8Array>
}

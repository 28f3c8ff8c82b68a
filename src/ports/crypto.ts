// Keyed MAC used for queue tokens. Node uses node:crypto, a Worker uses WebCrypto.

export interface Mac {
  /** Returns a base64url HMAC-SHA256 of data under the deployment's queue secret. */
  sign(data: string): string | Promise<string>
}

// node:crypto's ES256 check (src/ports/crypto.ts SignatureCheck) for the booking origin's admission
// verifier (src/booking/verify.ts): the same answer as WebCrypto's, but in the same turn of the event
// loop. A claim that passed the gate is checked here; with WebCrypto its answer came a turn later,
// behind every other request of a rush.
import { KeyObject, verify } from 'node:crypto'
import type { SignatureCheck } from '../../ports/crypto.js'

/** Each key set's CryptoKey as a KeyObject, converted once. */
const converted = new WeakMap<CryptoKey, KeyObject>()

export const nodeSignatures: SignatureCheck = (key, data, signature) => {
  let object = converted.get(key)
  if (object === undefined) {
    object = KeyObject.from(key)
    converted.set(key, object)
  }
  // ES256's signature is r || s, 64 bytes (IEEE P1363), not DER.
  return verify('sha256', data, { key: object, dsaEncoding: 'ieee-p1363' }, signature)
}

// Admission checks for any origin service: verify the Anteroom-Admission header with nothing but
// the edge's JWKS URL. jose's remote key set caches keys, refetches on an unknown kid only after a
// cooldown, and times out, so key rotation needs no restart and no coordination.
//
// The token is read here, by the rules of jose's jwtVerify with these options (test/verify.test.ts
// checks both against a list of forgeries): ES256 only, the kid's key from the set, then the claims.
// Only the signature check is pluggable (SignatureCheck): WebCrypto's by default, any runtime; Node's
// origins pass node:crypto's, which answers in the same turn of the event loop. WebCrypto's answer
// comes a turn later, and in a rush a turn is every other request's read: a winner's claim waited
// 22-115 ms for its own check (traced in bench measurement 7).
//
//   app.use('*', requireAdmission({ jwksUrl: 'https://edge.example/.well-known/jwks.json',
//                                   issuer: 'anteroom', audience: 'origin' }))
//   app.get('/me', (c) => c.json({ visitor: c.get('admission').sub }))
import type { Context, MiddlewareHandler } from 'hono'
import { base64url, createRemoteJWKSet, decodeProtectedHeader, errors, type JWTVerifyGetKey } from 'jose'
import type { AdmissionClaims } from '../core/admission-token.js'
import { BoundedMap } from '../core/bounded-map.js'
import { AnteroomError, type ErrorCode, errorSpec } from '../core/errors.js'
import { renderError } from '../http/errors.js'
import type { SignatureCheck } from '../ports/crypto.js'

export const ADMISSION_HEADER = 'anteroom-admission'

/**
 * The claims of a verified admission token. `open` is true for an "open" admission: one the edge
 * issued without its store (Redis was unavailable and the room says onStoreError: "open"). It is
 * the visitor's own (own `sub`) but short (60 s) and nobody was counted in line for it.
 */
export type Admission = Omit<AdmissionClaims, 'open' | 'bypass'> & {
  open: boolean
  /**
   * The id of the bypass rule that let this request skip the line (a partner's network, a secret header,
   * a path, a verified crawler: README, Bypass rules), or null for an admission from the line. Such a
   * token lasts 60 s and covers requests of that one client; nobody was counted in line for it.
   */
  bypass: string | null
}

export interface AdmissionCheckOptions {
  jwksUrl: string | URL
  issuer: string
  audience: string
  /** Accept only tokens for this room. */
  room?: string
  /**
   * Open admissions (claim `"open": true`, issued by a room whose onStoreError is "open" while the
   * edge's store was down): 'accept' (the default) lets them through with `admission.open` set;
   * 'refuse' answers 401 ERR_ADMISSION_OPEN.
   */
  openAdmissions?: 'accept' | 'refuse'
  /**
   * Bypass admissions (claim `bypass`: the id of the rule that let the request skip the line): 'accept'
   * (the default) lets them through with `admission.bypass` set; 'refuse' answers 401 ERR_ADMISSION_BYPASS.
   */
  bypassAdmissions?: 'accept' | 'refuse'
  /** For tests: a key set to use instead of fetching jwksUrl. */
  keys?: JWTVerifyGetKey
  /** Checks an ES256 signature (default: WebCrypto's, a promise; Node's origins: adapters/node/es256.ts, at once). */
  signatures?: SignatureCheck
}

/** WebCrypto's check: any runtime; its answer comes in a later turn of the event loop. */
export const webCryptoSignatures: SignatureCheck = (key, data, signature) =>
  crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, signature, data)

/** A refusal's code is an ERR_ADMISSION_* of the registry (core/errors.ts), and its status the registry's. */
export type AdmissionCheck = { ok: true; admission: Admission } | { ok: false; status: 401 | 503; code: AdmissionErrorCode; reason: string }

export type AdmissionErrorCode = Extract<ErrorCode, `ERR_ADMISSION_${string}`>

function reject(code: AdmissionErrorCode, reason: string): AdmissionCheck {
  return { ok: false, status: errorSpec(code).status as 401 | 503, code, reason }
}

/** Returns a function that checks one token. Algorithms are pinned to ES256. */
export function admissionVerifier(options: AdmissionCheckOptions): (token: string | undefined | null) => Promise<AdmissionCheck> {
  if (options.openAdmissions !== undefined && options.openAdmissions !== 'accept' && options.openAdmissions !== 'refuse')
    throw new TypeError(`openAdmissions: must be "accept" or "refuse", got ${JSON.stringify(options.openAdmissions)}`)
  if (options.bypassAdmissions !== undefined && options.bypassAdmissions !== 'accept' && options.bypassAdmissions !== 'refuse')
    throw new TypeError(`bypassAdmissions: must be "accept" or "refuse", got ${JSON.stringify(options.bypassAdmissions)}`)
  const keys =
    options.keys ??
    createRemoteJWKSet(new URL(options.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 })
  const signatures = options.signatures ?? webCryptoSignatures
  return async (token) => {
    if (!token)
      return reject('ERR_ADMISSION_MISSING', 'No Anteroom-Admission header: this service is only reachable through the waiting room')
    if (token.length > 4096) return reject('ERR_ADMISSION_INVALID', 'The admission token is too long')
    try {
      const payload = await verifiedClaims(token, keys, signatures, options)
      if (typeof payload === 'string') return claimRefusal(payload)
      const { sub, jti, room, arr, iat, exp, open, bypass } = payload
      if (
        typeof sub !== 'string' ||
        typeof jti !== 'string' ||
        typeof room !== 'string' ||
        typeof exp !== 'number' ||
        typeof iat !== 'number'
      ) {
        return reject('ERR_ADMISSION_INVALID', 'The admission token lacks required claims')
      }
      if (options.room !== undefined && room !== options.room)
        return reject('ERR_ADMISSION_WRONG_ROOM', 'The admission is for another room')
      if (open === true && options.openAdmissions === 'refuse') {
        return reject(
          'ERR_ADMISSION_OPEN',
          "This admission was issued while the waiting room's store was unavailable (an open admission), and this service accepts only admissions from the line; please try again in a minute",
        )
      }
      const bypassRule = typeof bypass === 'string' ? bypass : null
      if (bypassRule !== null && options.bypassAdmissions === 'refuse') {
        return reject(
          'ERR_ADMISSION_BYPASS',
          `This request skipped the waiting room's line by its bypass rule "${bypassRule.slice(0, 32)}", and this service accepts only admissions from the line`,
        )
      }
      return {
        ok: true,
        admission: { sub, jti, room, arr: typeof arr === 'number' ? arr : 0, iat, exp, open: open === true, bypass: bypassRule },
      }
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) return reject('ERR_ADMISSION_KEY', 'The admission token was signed with an unknown key')
      if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
        return reject('ERR_ADMISSION_KEYS_UNAVAILABLE', 'The waiting room keys could not be fetched')
      }
      if (err instanceof errors.JOSEError) return reject('ERR_ADMISSION_INVALID', 'The admission token is malformed')
      return reject('ERR_ADMISSION_KEYS_UNAVAILABLE', 'The waiting room keys could not be fetched')
    }
  }
}

/**
 * A segment's alphabet, as jose reads it: base64url, with base64's '=' padding allowed at the end (jose
 * decodes it; a wrong length is refused when decoded, as jose refuses it).
 */
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/
const isAscii = (text: string) => {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false
  return true
}
const ascii = new TextEncoder()
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** What failed: the token's form, its algorithm, its signature, its time, or the claim found wrong (or missing). */
type ClaimFailure = 'malformed' | 'alg' | 'signature' | 'expired' | 'iss' | 'aud' | 'iat' | 'nbf' | 'exp' | 'sub' | 'jti'

function claimRefusal(failure: ClaimFailure): AdmissionCheck {
  switch (failure) {
    case 'malformed':
      return reject('ERR_ADMISSION_INVALID', 'The admission token is malformed')
    case 'alg':
      return reject('ERR_ADMISSION_ALG', 'The admission token uses an algorithm that is not accepted')
    case 'signature':
      return reject('ERR_ADMISSION_SIGNATURE', 'The admission token signature is not valid')
    case 'expired':
      return reject('ERR_ADMISSION_EXPIRED', 'The admission has expired')
    default:
      return reject('ERR_ADMISSION_CLAIM', `The admission token's ${failure} claim is wrong`)
  }
}

/**
 * The token's claims once its header, signature and registered claims pass, checked in jose's order
 * (the claims' presence as iss, aud, iat, exp, jti, sub; then iss, aud, iat, nbf, exp, with no clock
 * tolerance); otherwise what failed. The key set's own errors (an unknown kid, keys that cannot be
 * fetched) are thrown.
 */
async function verifiedClaims(
  token: string,
  keys: JWTVerifyGetKey,
  signatures: SignatureCheck,
  o: AdmissionCheckOptions,
): Promise<Record<string, unknown> | ClaimFailure> {
  const parts = token.split('.')
  if (parts.length !== 3) return 'malformed'
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string]
  // The payload is read only once the signature over it holds (as jose does): until then, ASCII.
  if (!BASE64URL.test(encodedHeader) || !BASE64URL.test(encodedSignature) || !isAscii(encodedPayload)) return 'malformed'
  let header: ReturnType<typeof decodeProtectedHeader>
  try {
    header = decodeProtectedHeader(token)
  } catch {
    return 'malformed'
  }
  // No extension is understood here, so none may be critical; an unencoded payload is not a JWT's.
  if ('crit' in header || 'b64' in header) return 'malformed'
  if (typeof header.alg !== 'string' || header.alg === '') return 'malformed'
  if (header.alg !== 'ES256') return 'alg'
  const key = await keys({ ...header, alg: header.alg }, { payload: encodedPayload, signature: encodedSignature, protected: encodedHeader })
  // jose's key sets give CryptoKeys; anything else is a key set set up wrong (a 503, not the token's fault).
  if (!isEs256Key(key)) throw new TypeError('the admission key set gave a key that is not an ES256 public CryptoKey for verifying')
  let signature: Uint8Array<ArrayBuffer>
  try {
    signature = base64urlBytes(encodedSignature)
  } catch {
    return 'malformed'
  }
  const data = ascii.encode(`${encodedHeader}.${encodedPayload}`)
  let valid: unknown
  try {
    valid = await signatures(key, data, signature)
  } catch {
    valid = false
  }
  if (valid !== true) return 'signature'
  let claims: unknown
  if (!BASE64URL.test(encodedPayload)) return 'malformed'
  try {
    claims = JSON.parse(utf8.decode(base64urlBytes(encodedPayload)))
  } catch {
    return 'malformed'
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return 'malformed'
  const c = claims as Record<string, unknown>
  for (const name of ['iss', 'aud', 'iat', 'exp', 'jti', 'sub'] as const) if (!Object.hasOwn(c, name)) return name
  if (c.iss !== o.issuer) return 'iss'
  if (!(c.aud === o.audience || (Array.isArray(c.aud) && c.aud.includes(o.audience)))) return 'aud'
  if (typeof c.iat !== 'number') return 'iat'
  const now = Math.floor(Date.now() / 1000)
  if (c.nbf !== undefined && (typeof c.nbf !== 'number' || c.nbf > now)) return 'nbf'
  if (typeof c.exp !== 'number') return 'exp'
  if (c.exp <= now) return 'expired'
  return c
}

/** A public ECDSA P-256 key, the only kind an ES256 signature is checked with. */
function isEs256Key(key: unknown): key is CryptoKey {
  if (typeof CryptoKey === 'undefined' || !(key instanceof CryptoKey) || key.type !== 'public' || !key.usages.includes('verify'))
    return false
  const algorithm = key.algorithm as EcKeyAlgorithm
  return algorithm.name === 'ECDSA' && algorithm.namedCurve === 'P-256'
}

/** The bytes of a base64url text already checked against BASE64URL. */
const base64urlBytes = (text: string): Uint8Array<ArrayBuffer> => base64url.decode(text) as Uint8Array<ArrayBuffer>

/** The answer to a request whose admission was refused: 401 (or 503) with the reason. */
export function refuseAdmission(c: Context, result: Extract<AdmissionCheck, { ok: false }>): Response {
  c.header('www-authenticate', `Anteroom error="${result.code}"`)
  // The reason is for the caller even on a 503: it says which check could not be made.
  return renderError(c, new AnteroomError(result.code, result.reason, { expose: true }), { json: true })
}

/** Hono middleware: 401 with a clear reason unless the request carries a valid admission. */
export function requireAdmission(options: AdmissionCheckOptions): MiddlewareHandler<{ Variables: { admission: Admission } }> {
  const verify = admissionVerifier(options)
  return async function requireAdmission(c, next) {
    const result = await verify(c.req.header(ADMISSION_HEADER))
    if (!result.ok) return refuseAdmission(c, result)
    c.set('admission', result.admission)
    await next()
  }
}

/** Whether a token's (encoded) header says ES256: a sale's tokens share one or two headers. */
const peekedHeaders = new BoundedMap<string, boolean>(64)

/**
 * What a token says, unverified: its room, if it is an ES256 token for a room that has not expired.
 * Costs a few microseconds (its header looked up, its payload decoded), against ~140 µs for the
 * signature check. The booking origin uses it only to ask the claim gate before paying for the check:
 * a claim the gate refuses learns only that the seats are not free (see README, "The claim gate").
 */
export function peekAdmission(token: string | undefined, nowSeconds = Date.now() / 1000): { room: string } | undefined {
  if (!token || token.length > 4096) return undefined
  const dot = token.indexOf('.')
  const end = token.indexOf('.', dot + 1)
  if (dot < 1 || end < 0 || token.indexOf('.', end + 1) !== -1) return undefined
  const encodedHeader = token.slice(0, dot)
  let es256 = peekedHeaders.get(encodedHeader)
  if (es256 === undefined) {
    try {
      es256 = decodeProtectedHeader(token).alg === 'ES256'
    } catch {
      es256 = false
    }
    peekedHeaders.set(encodedHeader, es256)
  }
  if (!es256) return undefined
  try {
    const claims = JSON.parse(utf8.decode(base64url.decode(token.slice(dot + 1, end)))) as Record<string, unknown> | null
    const room = claims?.room
    const exp = claims?.exp
    if (typeof room !== 'string' || typeof exp !== 'number' || exp <= nowSeconds) return undefined
    return { room }
  } catch {
    return undefined
  }
}

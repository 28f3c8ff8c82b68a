// The admission token: an ES256 JWT that says "this visitor may use the origin until exp".
// Origins verify it with nothing but the public JWKS; the edge verifies its own cookie with a cache,
// so an admitted visitor's request costs one Map lookup, not an ECDSA verification. A token this edge
// signed is known without verifying it: its first request (a moment after the admission, in a burst
// of them) costs a lookup too. A token from another edge is verified once.
import { type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, jwtVerify, SignJWT } from 'jose'
import { LANES, type Lane } from './access.js'
import { BoundedMap } from './bounded-map.js'
import { AnteroomError } from './errors.js'

export const ADMISSION_ALG = 'ES256'

export interface AdmissionClaims {
  /** Visitor id. */
  sub: string
  /** Session id: stays the same across renewals. */
  jti: string
  room: string
  /** Arrival time in line, ms. */
  arr: number
  /** Issued at and expiry, seconds (JWT convention). */
  iat: number
  exp: number
  /**
   * The lane of an access code or invite link the visitor came by (core/access.ts): priority (before the
   * public line) or separate (a lane with its own cap and rate, whose line holds the session).
   */
  lane?: Lane
  /**
   * Issued without the store, by a room whose onStoreError is "open": nobody checked this visitor's
   * place in line. Short-lived and never renewed; origins may apply their own policy to it.
   */
  open?: true
  /**
   * Given by a bypass rule (core/bypass.ts), whose id this is: the request skipped the line. Short-lived,
   * never a visitor's cookie (the edge refuses one as an admission), so that an origin can tell it
   * apart and refuse it (src/booking/verify.ts bypassAdmissions).
   */
  bypass?: string
}

export interface SigningKey {
  kid: string
  privateKey: CryptoKey
  publicKey: CryptoKey
  publicJwk: JWK
}

/** Imports private ES256 JWKs; each needs a kid. The first one signs; all are published. */
export async function importSigningKeys(jwks: JWK[]): Promise<SigningKey[]> {
  if (jwks.length === 0) throw new AnteroomError('ERR_CONFIG', 'signingKeys: at least one key is needed', { field: 'signingKeys' })
  const seen = new Set<string>()
  return Promise.all(
    jwks.map(async (jwk, i) => {
      const field = `signingKeys[${i}]`
      if (typeof jwk.kid !== 'string' || jwk.kid.length === 0) throw new AnteroomError('ERR_CONFIG', `${field}.kid: is required`, { field })
      if (seen.has(jwk.kid)) throw new AnteroomError('ERR_CONFIG', `${field}.kid: is used twice`, { field })
      seen.add(jwk.kid)
      if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') {
        throw new AnteroomError('ERR_CONFIG', `${field}: must be a private EC P-256 key (ES256)`, { field })
      }
      let privateKey: CryptoKey
      try {
        privateKey = (await importJWK(jwk, ADMISSION_ALG)) as CryptoKey
      } catch (cause) {
        throw new AnteroomError('ERR_CONFIG', `${field}: is not a valid ES256 key`, { field, cause })
      }
      const { d: _d, ...rest } = jwk
      const publicJwk: JWK = { ...rest, alg: ADMISSION_ALG, use: 'sig', kid: jwk.kid }
      const publicKey = (await importJWK(publicJwk, ADMISSION_ALG)) as CryptoKey
      return { kid: jwk.kid, privateKey, publicKey, publicJwk }
    }),
  )
}

/** Makes a fresh private ES256 JWK, for development and for tests. */
export async function generateSigningJwk(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(ADMISSION_ALG, { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg: ADMISSION_ALG }
}

export interface AdmissionTokenOptions {
  keys: SigningKey[]
  issuer: string
  audience: string
  /** How many verified tokens the edge remembers. */
  cacheSize?: number
  /** How many of the tokens it signed the edge remembers until their first use (the newest ones). */
  signedCacheSize?: number
}

export class AdmissionTokens {
  private readonly keys: SigningKey[]
  private readonly byKid: Map<string, SigningKey>
  private readonly cache: BoundedMap<string, AdmissionClaims>
  /** Tokens this edge signed and nobody has brought back yet, by the token itself, oldest first. */
  private readonly signed = new Map<string, AdmissionClaims>()
  private readonly signedCacheSize: number

  constructor(private readonly options: AdmissionTokenOptions) {
    this.keys = options.keys
    this.byKid = new Map(options.keys.map((k) => [k.kid, k]))
    this.cache = new BoundedMap(options.cacheSize ?? 100_000)
    this.signedCacheSize = options.signedCacheSize ?? 10_000
  }

  jwks(): { keys: JWK[] } {
    return { keys: this.keys.map((k) => k.publicJwk) }
  }

  async sign(claims: Omit<AdmissionClaims, 'iat'>, nowMs: number): Promise<string> {
    const key = this.keys[0] as SigningKey
    const iat = Math.floor(nowMs / 1000)
    const payload: Record<string, unknown> = { room: claims.room, arr: claims.arr }
    if (claims.open) payload.open = true
    if (claims.bypass !== undefined) payload.bypass = claims.bypass
    if (claims.lane !== undefined) payload.lane = claims.lane
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: ADMISSION_ALG, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.options.issuer)
      .setAudience(this.options.audience)
      .setSubject(claims.sub)
      .setJti(claims.jti)
      .setIssuedAt(iat)
      .setExpirationTime(claims.exp)
      .sign(key.privateKey)
    // What verify() would read from it: this edge made it, from these claims, with its own key.
    const known: AdmissionClaims = { sub: claims.sub, jti: claims.jti, room: claims.room, arr: claims.arr, iat, exp: claims.exp }
    if (claims.open) known.open = true
    if (claims.lane !== undefined) known.lane = claims.lane
    if (claims.bypass !== undefined) known.bypass = claims.bypass
    if (this.signed.size >= this.signedCacheSize) this.signed.delete(this.signed.keys().next().value as string)
    this.signed.set(token, known)
    return token
  }

  /**
   * Verifies a token for a room: ES256 only, a known kid, our issuer and audience, the room, not expired.
   * Returns undefined for anything else. Verified tokens are cached until they expire.
   */
  async verify(token: string | undefined, room: string, nowMs: number): Promise<AdmissionClaims | undefined> {
    if (token === undefined || token.length > 2048) return undefined
    const nowSec = Math.floor(nowMs / 1000)
    let cached = this.cache.get(token)
    if (cached === undefined) {
      // Signed here: no signature to check. From now on it is an ordinary known token.
      cached = this.signed.get(token)
      if (cached !== undefined) {
        this.signed.delete(token)
        this.remember(token, cached)
      }
    }
    if (cached !== undefined) {
      if (cached.room === room && cached.exp > nowSec) return cached
      if (cached.exp <= nowSec) this.cache.delete(token)
      return undefined
    }
    let payload: JWTPayload
    try {
      const result = await jwtVerify(
        token,
        (header) => {
          const key = header.kid === undefined ? undefined : this.byKid.get(header.kid)
          if (key === undefined) throw new AnteroomError('ERR_TOKEN_INVALID', 'unknown kid')
          return key.publicKey
        },
        {
          algorithms: [ADMISSION_ALG],
          issuer: this.options.issuer,
          audience: this.options.audience,
          currentDate: new Date(nowMs),
          requiredClaims: ['sub', 'jti', 'exp', 'iat'],
        },
      )
      payload = result.payload
    } catch {
      return undefined
    }
    const claims = toClaims(payload)
    if (claims === undefined || claims.room !== room) return undefined
    this.remember(token, claims)
    return claims
  }

  private remember(token: string, claims: AdmissionClaims): void {
    this.cache.set(token, claims)
  }
}

function toClaims(p: JWTPayload): AdmissionClaims | undefined {
  if (typeof p.sub !== 'string' || typeof p.jti !== 'string' || typeof p.room !== 'string') return undefined
  if (typeof p.arr !== 'number' || typeof p.exp !== 'number' || typeof p.iat !== 'number') return undefined
  const claims: AdmissionClaims = { sub: p.sub, jti: p.jti, room: p.room, arr: p.arr, iat: p.iat, exp: p.exp }
  if (p.open === true) claims.open = true
  if (typeof p.lane === 'string' && (LANES as readonly string[]).includes(p.lane)) claims.lane = p.lane as Lane
  if (typeof p.bypass === 'string') claims.bypass = p.bypass
  return claims
}

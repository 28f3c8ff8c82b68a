// The origin's admission verifier (src/booking/verify.ts) reads tokens by jose's rules: a differential
// check against jose's jwtVerify (with the options the verifier had when it called it) over valid
// tokens and forgeries, with both signature checks: WebCrypto's and node:crypto's. node:crypto's
// answers in the same turn of the event loop; WebCrypto's in a later one.
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors, exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import { nodeSignatures } from '../src/adapters/node/es256.js'
import { type AdmissionCheck, admissionVerifier, peekAdmission, webCryptoSignatures } from '../src/booking/verify.js'

const ISSUER = 'anteroom'
const AUDIENCE = 'origin'
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

let privateKey: CryptoKey
let foreignKey: CryptoKey
let jwks: { keys: JWK[] }

/** A compact token of exactly this header and payload, signed with `key` (ES256, r || s). */
async function signed(header: unknown, payload: unknown, key = privateKey): Promise<string> {
  const input = `${b64(header)}.${b64(payload)}`
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key, new TextEncoder().encode(input))
  return `${input}.${Buffer.from(signature).toString('base64url')}`
}

/** What the verifier answered when it called jose's jwtVerify: the same codes, from jose's errors. */
async function oracle(token: string, keySet: { keys: JWK[] } = jwks): Promise<string> {
  try {
    const { payload } = await jwtVerify(token, createLocalJWKSet(keySet), {
      algorithms: ['ES256'],
      issuer: ISSUER,
      audience: AUDIENCE,
      requiredClaims: ['sub', 'jti', 'exp', 'iat'],
    })
    return `ok ${String(payload.sub)}`
  } catch (err) {
    if (err instanceof errors.JWTExpired) return 'ERR_ADMISSION_EXPIRED'
    if (err instanceof errors.JWTClaimValidationFailed) return `ERR_ADMISSION_CLAIM ${err.claim}`
    if (err instanceof errors.JOSEAlgNotAllowed) return 'ERR_ADMISSION_ALG'
    if (err instanceof errors.JWKSNoMatchingKey) return 'ERR_ADMISSION_KEY'
    if (err instanceof errors.JWSSignatureVerificationFailed) return 'ERR_ADMISSION_SIGNATURE'
    if (err instanceof errors.JOSEError) return 'ERR_ADMISSION_INVALID'
    return `other ${String(err)}`
  }
}

function said(check: AdmissionCheck): string {
  if (check.ok) return `ok ${check.admission.sub}`
  if (check.code !== 'ERR_ADMISSION_CLAIM') return check.code
  return `${check.code} ${/token's (\w+) claim/.exec(check.reason)?.[1]}`
}

/** The verifier's options over a local key set (default: the one key, k1). */
const optionsWith = (keySet: { keys: JWK[] } = jwks) => ({
  jwksUrl: 'http://127.0.0.1:1/',
  issuer: ISSUER,
  audience: AUDIENCE,
  keys: createLocalJWKSet(keySet),
})

/** A valid token for v1, signed with k1, good for a minute. */
function freshToken(): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return signed({ alg: 'ES256', kid: 'k1' }, { iss: ISSUER, aud: AUDIENCE, sub: 'v1', jti: 'j1', room: 'sale', iat: now, exp: now + 60 })
}

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true })
  privateKey = pair.privateKey
  foreignKey = (await generateKeyPair('ES256')).privateKey
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }
})

/** Valid tokens and forgeries, by name. */
async function corpus(): Promise<Record<string, string>> {
  const now = Math.floor(Date.now() / 1000)
  const header = { alg: 'ES256', kid: 'k1' }
  const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'v1', jti: 'j1', room: 'sale', arr: 1, iat: now, exp: now + 600 }
  const without = (name: string) => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== name))
  const valid = await signed(header, claims)
  const [h, p, s] = valid.split('.') as [string, string, string]
  const flipped = `${s.slice(0, -2)}${s.at(-2) === 'A' ? 'B' : 'A'}${s.at(-1)}`
  const hs256 = await new SignJWT({ room: 'sale' })
    .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('v1')
    .setJti('j1')
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(new TextEncoder().encode(JSON.stringify(jwks.keys[0])))
  const tokens: Record<string, string> = {
    valid,
    'aud in a list': await signed(header, { ...claims, aud: ['other', AUDIENCE] }),
    'aud list without it': await signed(header, { ...claims, aud: ['other'] }),
    'aud a number': await signed(header, { ...claims, aud: 7 }),
    'wrong iss': await signed(header, { ...claims, iss: 'someone' }),
    'iat a string': await signed(header, { ...claims, iat: String(now) }),
    'exp a string': await signed(header, { ...claims, exp: String(now + 600) }),
    expired: await signed(header, { ...claims, exp: now - 10 }),
    'nbf ahead': await signed(header, { ...claims, nbf: now + 600 }),
    'nbf behind': await signed(header, { ...claims, nbf: now - 600 }),
    'nbf a string': await signed(header, { ...claims, nbf: 'soon' }),
    'iat ahead': await signed(header, { ...claims, iat: now + 600 }),
    'alg ES384': await signed({ alg: 'ES384', kid: 'k1' }, claims),
    'alg none, empty signature': `${b64({ alg: 'none', kid: 'k1' })}.${p}.`,
    'alg none, two parts': `${b64({ alg: 'none', kid: 'k1' })}.${p}`,
    'alg HS256 keyed with the public key': hs256,
    'no alg': await signed({ kid: 'k1' }, claims),
    'alg empty': await signed({ alg: '', kid: 'k1' }, claims),
    'header not JSON': `${b64('x')}.${p}.${s}`,
    'header a list': await signed(['ES256'], claims),
    'payload not JSON': await signed(header, 'not json'),
    'payload a list': await signed(header, [claims]),
    'payload null': await signed(header, 'null'),
    'payload not UTF-8': `${h}.${Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url')}.${s}`,
    'unknown kid': await signed({ alg: 'ES256', kid: 'k2' }, claims),
    'no kid': await signed({ alg: 'ES256' }, claims),
    'known kid, foreign key': await signed(header, claims, foreignKey),
    'changed payload': `${h}.${b64({ ...claims, sub: 'v2' })}.${s}`,
    'changed signature': `${h}.${p}.${flipped}`,
    'signature short': `${h}.${p}.${Buffer.from(s, 'base64url').subarray(0, 63).toString('base64url')}`,
    'signature padded': `${h}.${p}.${s}=`,
    // jose reads base64's padding; a signature in base64 without '+' or '/' (1 in 15 or so) is this.
    'signature padded to four': `${h}.${p}.${s}==`,
    'signature in base64': `${h}.${p}.${Buffer.from(s, 'base64url').toString('base64')}`,
    'signature empty': `${h}.${p}.`,
    'signature one character': `${h}.${p}.A`,
    'signature five characters': `${h}.${p}.AAAAA`,
    'four parts': `${valid}.${s}`,
    'a space inside': `${h}.${p} .${s}`,
    'payload not ASCII': `${h}.${p}é.${s}`,
  }
  for (const name of ['iss', 'aud', 'iat', 'exp', 'jti', 'sub']) tokens[`no ${name}`] = await signed(header, without(name))
  tokens['no sub and no iss'] = await signed(header, Object.fromEntries(Object.entries(claims).filter(([k]) => k !== 'sub' && k !== 'iss')))
  return tokens
}

describe('the admission verifier', () => {
  it('answers as jose jwtVerify did, for valid tokens and every forgery, with either signature check', async () => {
    const tokens = await corpus()
    const verifiers = {
      webcrypto: admissionVerifier({ jwksUrl: 'http://127.0.0.1:1/', issuer: ISSUER, audience: AUDIENCE, keys: createLocalJWKSet(jwks) }),
      node: admissionVerifier({
        jwksUrl: 'http://127.0.0.1:1/',
        issuer: ISSUER,
        audience: AUDIENCE,
        keys: createLocalJWKSet(jwks),
        signatures: nodeSignatures,
      }),
    }
    const answers: Record<string, string> = {}
    for (const [name, token] of Object.entries(tokens)) {
      const expected = await oracle(token)
      answers[name] = expected
      for (const [kind, verify] of Object.entries(verifiers)) expect(said(await verify(token)), `${name} (${kind})`).toBe(expected)
    }
    // The list covers every way to fail, and the valid ones pass.
    expect(new Set(Object.values(answers))).toEqual(
      new Set([
        'ok v1',
        'ERR_ADMISSION_EXPIRED',
        'ERR_ADMISSION_ALG',
        'ERR_ADMISSION_KEY',
        'ERR_ADMISSION_SIGNATURE',
        'ERR_ADMISSION_INVALID',
        ...['iss', 'aud', 'iat', 'exp', 'jti', 'sub', 'nbf'].map((c) => `ERR_ADMISSION_CLAIM ${c}`),
      ]),
    )
    expect(answers.valid).toBe('ok v1')
    expect(answers['changed payload']).toBe('ERR_ADMISSION_SIGNATURE')
  })

  it('refuses a critical header extension, which jose would accept for b64: it understands none', async () => {
    const now = Math.floor(Date.now() / 1000)
    const claims = { iss: ISSUER, aud: AUDIENCE, sub: 'v1', jti: 'j1', room: 'sale', iat: now, exp: now + 600 }
    const verify = admissionVerifier(optionsWith())
    const critical = await signed({ alg: 'ES256', kid: 'k1', crit: ['b64'], b64: true }, claims)
    expect(await oracle(critical)).toBe('ok v1')
    expect(said(await verify(critical))).toBe('ERR_ADMISSION_INVALID')
  })

  it("answers in the token's own turn with node:crypto's check, and a turn later with WebCrypto's", async () => {
    const token = await freshToken()
    const options = optionsWith()
    const turned = async (verify: ReturnType<typeof admissionVerifier>) => {
      await verify(token) // the key set's first import may take a turn; the rush's checks come after it
      let next = false
      setImmediate(() => {
        next = true
      })
      const check = await verify(token)
      expect(check.ok).toBe(true)
      return next
    }
    expect(await turned(admissionVerifier({ ...options, signatures: nodeSignatures }))).toBe(false)
    expect(await turned(admissionVerifier({ ...options, signatures: webCryptoSignatures }))).toBe(true)
  })

  it('with two keys published, a token that names none is malformed (as jose says), not a key set that failed', async () => {
    const second = await generateKeyPair('ES256', { extractable: true })
    const two = { keys: [...jwks.keys, { ...(await exportJWK(second.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' }] }
    const now = Math.floor(Date.now() / 1000)
    const token = await signed({ alg: 'ES256' }, { iss: ISSUER, aud: AUDIENCE, sub: 'v1', jti: 'j1', iat: now, exp: now + 60 })
    const verify = admissionVerifier(optionsWith(two))
    expect(await oracle(token, two)).toBe('ERR_ADMISSION_INVALID')
    expect(said(await verify(token))).toBe('ERR_ADMISSION_INVALID')
  })

  it('counts only a check that answers true, and calls a key set that gives no ES256 CryptoKey a failure of the key set (503)', async () => {
    const token = await freshToken()
    const options = optionsWith()
    for (const answer of ['true', 1, {}, undefined])
      expect(said(await admissionVerifier({ ...options, signatures: () => answer as boolean })(token)), String(answer)).toBe(
        'ERR_ADMISSION_SIGNATURE',
      )
    expect(said(await admissionVerifier({ ...options, signatures: () => true })(token))).toBe('ok v1')
    const asJwk = admissionVerifier({ ...options, keys: async () => jwks.keys[0] as JWK })
    expect(said(await asJwk(token))).toBe('ERR_ADMISSION_KEYS_UNAVAILABLE')
  })
})

describe('the unverified peek at a token', () => {
  /** The peek as jose's decoders read it (how it was written before its header was remembered). */
  function josePeek(token: string, now: number): { room: string } | undefined {
    try {
      if (decodeProtectedHeader(token).alg !== 'ES256') return undefined
      const { room, exp } = decodeJwt(token)
      if (typeof room !== 'string' || typeof exp !== 'number' || exp <= now) return undefined
      return { room }
    } catch {
      return undefined
    }
  }

  it('reads the room of an ES256 token that has not expired, as jose decodes it, for every token of the list', async () => {
    const tokens = await corpus()
    const now = Math.floor(Date.now() / 1000)
    const extra = {
      'room a number': await signed({ alg: 'ES256', kid: 'k1' }, { room: 7, exp: now + 60 }),
      'exp now': await signed({ alg: 'ES256', kid: 'k1' }, { room: 'sale', exp: now }),
      'no header': `.${b64({ room: 'sale', exp: now + 60 })}.x`,
      'five parts': `${tokens.valid}.a.b`,
      'too long': `${tokens.valid}${'A'.repeat(4096)}`,
    }
    let read = 0
    // Twice: the second time every header is remembered.
    for (let round = 0; round < 2; round++)
      for (const [name, token] of Object.entries({ ...tokens, ...extra })) {
        const expected = token.length > 4096 ? undefined : josePeek(token, now)
        expect(peekAdmission(token, now), `${name}, round ${round + 1}`).toEqual(expected)
        if (expected !== undefined) read++
      }
    expect(peekAdmission(tokens.valid, now)).toEqual({ room: 'sale' })
    expect(peekAdmission(extra['exp now'], now - 1)).toEqual({ room: 'sale' })
    expect(peekAdmission(tokens['alg HS256 keyed with the public key'], now)).toBeUndefined()
    expect(peekAdmission(undefined)).toBeUndefined()
    expect(read).toBeGreaterThan(10)
  })
})

// Token checks: every forgery listed in the issue is rejected, and origins verify with only the JWKS.
import { createLocalJWKSet, generateKeyPair, jwtVerify, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { jsMac } from '../src/adapters/js/mac.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import { base36, QueueTokens } from '../src/core/queue-token.js'

const NOW = 1_800_000_000_000
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
const claims = { sub: 'visitor-0000000001', jti: 'session-1', room: 'sale', arr: NOW - 5000, exp: Math.floor(NOW / 1000) + 600 }

async function tokens(options: { audience?: string; kids?: string[] } = {}) {
  const jwks = await Promise.all((options.kids ?? ['k1']).map((kid) => generateSigningJwk(kid)))
  const keys = await importSigningKeys(jwks)
  return { jwks, keys, t: new AdmissionTokens({ keys, issuer: 'anteroom', audience: options.audience ?? 'origin' }) }
}

describe('admission token', () => {
  it('signs ES256 with a kid and the required claims, and verifies', async () => {
    const { t } = await tokens()
    const token = await t.sign(claims, NOW)
    const [header, payload] = token
      .split('.')
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()))
    expect(header).toMatchObject({ alg: 'ES256', kid: 'k1' })
    expect(payload).toMatchObject({
      iss: 'anteroom',
      aud: 'origin',
      sub: claims.sub,
      jti: claims.jti,
      room: 'sale',
      arr: claims.arr,
      exp: claims.exp,
    })
    expect(payload.iat).toBe(Math.floor(NOW / 1000))
    expect(await t.verify(token, 'sale', NOW)).toMatchObject({ sub: claims.sub, room: 'sale' })
  })

  it('an origin verifies it with nothing but the public JWKS', async () => {
    const { t } = await tokens()
    const token = await t.sign(claims, NOW)
    const jwks = JSON.parse(JSON.stringify(t.jwks()))
    for (const key of jwks.keys) expect(key.d).toBeUndefined()
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
      algorithms: ['ES256'],
      issuer: 'anteroom',
      audience: 'origin',
      currentDate: new Date(NOW),
    })
    expect(payload.sub).toBe(claims.sub)
  })

  it('rejects a changed payload', async () => {
    const { t } = await tokens()
    const [h, p, s] = (await t.sign(claims, NOW)).split('.')
    const payload = JSON.parse(Buffer.from(p as string, 'base64url').toString())
    const forged = `${h}.${b64({ ...payload, arr: 0 })}.${s}`
    expect(await t.verify(forged, 'sale', NOW)).toBeUndefined()
  })

  it('rejects a changed signature', async () => {
    const { t } = await tokens()
    const token = await t.sign(claims, NOW)
    const last = token.at(-2) === 'A' ? 'B' : 'A'
    expect(await t.verify(`${token.slice(0, -2)}${last}${token.at(-1)}`, 'sale', NOW)).toBeUndefined()
  })

  it('rejects alg: none', async () => {
    const { t } = await tokens()
    const payload = { ...claims, iss: 'anteroom', aud: 'origin', iat: Math.floor(NOW / 1000) }
    expect(await t.verify(`${b64({ alg: 'none', kid: 'k1' })}.${b64(payload)}.`, 'sale', NOW)).toBeUndefined()
    expect(await t.verify(`${b64({ alg: 'none', kid: 'k1' })}.${b64(payload)}`, 'sale', NOW)).toBeUndefined()
  })

  it('rejects an HMAC-signed token where ES256 is expected, even keyed with the public key', async () => {
    const { t } = await tokens()
    const publicJwk = t.jwks().keys[0]
    for (const secret of [JSON.stringify(publicJwk), String(publicJwk?.x)]) {
      const forged = await new SignJWT({ room: 'sale', arr: claims.arr })
        .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
        .setIssuer('anteroom')
        .setAudience('origin')
        .setSubject(claims.sub)
        .setJti(claims.jti)
        .setIssuedAt(Math.floor(NOW / 1000))
        .setExpirationTime(claims.exp)
        .sign(new TextEncoder().encode(secret))
      expect(await t.verify(forged, 'sale', NOW)).toBeUndefined()
    }
  })

  it('rejects an unknown kid, and a known kid with a foreign key', async () => {
    const { t } = await tokens()
    const { privateKey } = await generateKeyPair('ES256')
    for (const kid of ['k2', 'k1']) {
      const forged = await new SignJWT({ room: 'sale', arr: claims.arr })
        .setProtectedHeader({ alg: 'ES256', kid })
        .setIssuer('anteroom')
        .setAudience('origin')
        .setSubject(claims.sub)
        .setJti(claims.jti)
        .setIssuedAt(Math.floor(NOW / 1000))
        .setExpirationTime(claims.exp)
        .sign(privateKey)
      expect(await t.verify(forged, 'sale', NOW)).toBeUndefined()
    }
  })

  it('rejects the wrong room and the wrong audience', async () => {
    const { t, keys } = await tokens()
    const token = await t.sign(claims, NOW)
    expect(await t.verify(token, 'other-room', NOW)).toBeUndefined()
    // Verified once (and cached) for its room, it still fails for another room.
    expect(await t.verify(token, 'sale', NOW)).toBeDefined()
    expect(await t.verify(token, 'other-room', NOW)).toBeUndefined()
    const otherAudience = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'another-origin' })
    expect(await otherAudience.verify(token, 'sale', NOW)).toBeUndefined()
  })

  it('knows the tokens it signed as verification would read them; another edge with the same keys verifies them', async () => {
    const { keys, t } = await tokens()
    const other = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
    // A bound of 2: the oldest of three signed tokens is verified like any other.
    const small = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin', signedCacheSize: 2 })
    for (const c of [claims, { ...claims, open: true as const }]) {
      const token = await t.sign(c, NOW)
      const here = await t.verify(token, 'sale', NOW)
      expect(here).toEqual(await other.verify(token, 'sale', NOW))
      expect(here).toEqual({ ...c, iat: Math.floor(NOW / 1000) })
      expect(await t.verify(token, 'other-room', NOW)).toBeUndefined()
      expect(await t.verify(token, 'sale', c.exp * 1000)).toBeUndefined()
      const signed = [
        await small.sign(c, NOW),
        await small.sign({ ...c, jti: 'session-2' }, NOW),
        await small.sign({ ...c, jti: 's3' }, NOW),
      ]
      for (const s of signed) expect(await small.verify(s, 'sale', NOW)).toEqual(await other.verify(s, 'sale', NOW))
    }
  })

  it('rejects an expired token, even after it was cached', async () => {
    const { t } = await tokens()
    const token = await t.sign(claims, NOW)
    expect(await t.verify(token, 'sale', NOW)).toBeDefined()
    expect(await t.verify(token, 'sale', claims.exp * 1000)).toBeUndefined()
    const fresh = await tokens()
    const token2 = await fresh.t.sign(claims, NOW)
    expect(await fresh.t.verify(token2, 'sale', claims.exp * 1000 + 1)).toBeUndefined()
  })

  it('rotates keys without ending sessions: the JWKS publishes old and new, tokens of both verify', async () => {
    const old = await tokens({ kids: ['old'] })
    const oldToken = await old.t.sign(claims, NOW)
    const newJwk = await generateSigningJwk('new')
    const rotated = new AdmissionTokens({ keys: await importSigningKeys([newJwk, ...old.jwks]), issuer: 'anteroom', audience: 'origin' })
    expect(rotated.jwks().keys.map((k) => k.kid)).toEqual(['new', 'old'])
    const newToken = await rotated.sign(claims, NOW)
    expect(JSON.parse(Buffer.from(newToken.split('.')[0] as string, 'base64url').toString()).kid).toBe('new')
    expect(await rotated.verify(oldToken, 'sale', NOW)).toBeDefined()
    expect(await rotated.verify(newToken, 'sale', NOW)).toBeDefined()
    const jwks = createLocalJWKSet(JSON.parse(JSON.stringify(rotated.jwks())))
    await expect(jwtVerify(oldToken, jwks, { algorithms: ['ES256'], currentDate: new Date(NOW) })).resolves.toBeDefined()
  })

  it('refuses bad signing keys at start-up, naming the key', async () => {
    await expect(importSigningKeys([])).rejects.toThrow(/signingKeys/)
    const jwk = await generateSigningJwk('a')
    await expect(importSigningKeys([{ ...jwk, kid: undefined }])).rejects.toThrow(/signingKeys\[0\]\.kid/)
    await expect(importSigningKeys([jwk, jwk])).rejects.toThrow(/signingKeys\[1\]\.kid: is used twice/)
    const { d: _d, ...publicOnly } = jwk
    await expect(importSigningKeys([publicOnly])).rejects.toThrow(/signingKeys\[0\]: must be a private/)
  })
})

describe('queue token', () => {
  const q = new QueueTokens(jsMac('a-test-secret-that-is-long-enough-1234'))
  const ticket = { room: 'sale', visitor: 'AAAAAAAAAAAAAAAA', arrival: NOW - 60_000, expires: NOW + 60_000 }

  it('round-trips a valid ticket', async () => {
    expect(await q.verify(await q.sign(ticket), 'sale', NOW)).toEqual(ticket)
  })

  it('cannot be moved ahead: a changed arrival, visitor or expiry breaks the MAC', async () => {
    const token = await q.sign(ticket)
    const parts = token.split('.')
    for (const [i, value] of [
      [3, (ticket.arrival - 1_000_000).toString(36)],
      [2, 'BBBBBBBBBBBBBBBB'],
      [4, (ticket.expires + 1_000_000).toString(36)],
    ] as const) {
      const forged = [...parts]
      forged[i] = value
      expect(await q.verify(forged.join('.'), 'sale', NOW)).toBeUndefined()
    }
  })

  it('rejects another room, a lapsed token, another secret, truncation and junk', async () => {
    const token = await q.sign(ticket)
    expect(await q.verify(token, 'other', NOW)).toBeUndefined()
    expect(await q.verify(token, 'sale', ticket.expires)).toBeUndefined()
    const other = new QueueTokens(jsMac('another-secret-that-is-long-enough-999'))
    expect(await other.verify(token, 'sale', NOW)).toBeUndefined()
    for (const junk of [token.slice(0, -5), token.slice(0, 20), '', 'q1', `${token}.x`, 'x'.repeat(5000), 'q1.sale.\u00e9\u00e9.1.2.3']) {
      expect(await q.verify(junk, 'sale', NOW)).toBeUndefined()
    }
  })

  it('writes its numbers as toString(36) does, five digits at a time', () => {
    const numbers = [
      0,
      1,
      35,
      36,
      36 ** 5 - 1,
      36 ** 5,
      36 ** 5 + 1,
      36 ** 10 - 1,
      36 ** 10,
      NOW,
      NOW * 1000,
      Number.MAX_SAFE_INTEGER,
      2 ** 53 + 2,
      1.5,
    ]
    let seed = 11
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      numbers.push(Math.floor((seed / 2 ** 31) * 36 ** (1 + (i % 10))), seed * 2 ** 22 + i)
    }
    for (const n of numbers) expect(base36(n), String(n)).toBe(n.toString(36))
  })

  it('reads a token as it always did: a differential check against the split-and-rebuild reading', async () => {
    // The reading before the edge checked the MAC over the token's own text: split on dots, check each
    // field, rebuild the signed text from the parsed numbers.
    const mac = jsMac('a-test-secret-that-is-long-enough-1234')
    const reference = async (token: string, room: string, now: number) => {
      if (token.length > 160) return undefined
      const parts = token.split('.')
      if (parts.length !== 6 || parts[0] !== 'q1') return undefined
      const [, r, visitor, a36, e36, m] = parts as [string, string, string, string, string, string]
      if (r !== room || !/^[a-z0-9][a-z0-9-]{0,31}$/.test(r) || !/^[A-Za-z0-9_-]{16}$/.test(visitor)) return undefined
      if (!/^[0-9a-z]{1,12}$/.test(a36) || !/^[0-9a-z]{1,11}$/.test(e36)) return undefined
      const t = { room, visitor, arrival: Number.parseInt(a36, 36), expires: Number.parseInt(e36, 36) }
      const data = `q1.${room}.${visitor}.${t.arrival.toString(36)}.${t.expires.toString(36)}`
      if (m !== (await mac.sign(data))) return undefined
      return t.expires <= now ? undefined : t
    }
    let seed = 7
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const alphabet = 'q1.0aZz_-sale9é'
    const tickets = [
      ticket,
      { ...ticket, arrival: 0 },
      { ...ticket, room: 'a-b-1', arrival: 36 ** 11 },
      { ...ticket, arrival: 2 ** 53 + 2 },
    ]
    for (let i = 0; i < 4000; i++) {
      const t = tickets[i % tickets.length] as typeof ticket
      const token = await q.sign(t)
      const parts = token.split('.')
      let variant: string
      const kind = rand(5)
      if (kind === 0) variant = token
      else if (kind === 1) {
        // A field spelled with leading zeros: the same numbers, another text.
        const f = 3 + rand(2)
        parts[f] = `${'0'.repeat(1 + rand(2))}${parts[f]}`
        variant = parts.join('.')
      } else {
        const chars = [...token]
        for (let k = 0; k <= rand(3); k++) chars[rand(chars.length)] = alphabet[rand(alphabet.length)] as string
        variant = chars.join('')
      }
      for (const room of [t.room, 'other', t.room.slice(0, -1), `${t.room}-x`])
        expect(await q.verify(variant, room, NOW), variant).toEqual(await reference(variant, room, NOW))
    }
  })
})

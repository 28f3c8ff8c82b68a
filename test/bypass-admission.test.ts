// What an origin sees of a bypass admission (src/booking/verify.ts): the rule's id in `bypass`, null for
// an admission from the line; `bypassAdmissions: 'refuse'` answers 401 ERR_ADMISSION_BYPASS naming the
// rule, while admissions from the line pass.
import { Hono } from 'hono'
import { createLocalJWKSet } from 'jose'
import { beforeAll, describe, expect, it } from 'vitest'
import { admissionVerifier, requireAdmission } from '../src/booking/verify.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'

let tokens: AdmissionTokens
const now = Date.now()
const claims = { sub: 'AAAAAAAAAAAAAAAA', jti: 'j1', room: 'sale', arr: now, exp: Math.floor(now / 1000) + 60 }

beforeAll(async () => {
  tokens = new AdmissionTokens({ keys: await importSigningKeys([await generateSigningJwk('k1')]), issuer: 'anteroom', audience: 'origin' })
})

const options = (more: Record<string, unknown> = {}) => ({
  jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
  issuer: 'anteroom',
  audience: 'origin',
  keys: createLocalJWKSet(tokens.jwks()),
  ...more,
})

describe('bypass admissions at an origin', () => {
  it('are accepted by default, with the rule in admission.bypass; admissions from the line have null', async () => {
    const verify = admissionVerifier(options())
    expect(await verify(await tokens.sign({ ...claims, bypass: 'office' }, now))).toMatchObject({
      ok: true,
      admission: { sub: claims.sub, room: 'sale', bypass: 'office', open: false },
    })
    expect(await verify(await tokens.sign(claims, now))).toMatchObject({ ok: true, admission: { bypass: null } })
  })

  it('are refused with 401 ERR_ADMISSION_BYPASS naming the rule where the origin says so; the line’s still pass', async () => {
    const app = new Hono()
    app.use('*', requireAdmission(options({ bypassAdmissions: 'refuse' })))
    app.get('/buy', (c) => c.text('ok'))
    const bypassed = await app.request('/buy', {
      headers: { 'anteroom-admission': await tokens.sign({ ...claims, bypass: 'office' }, now) },
    })
    expect(bypassed.status).toBe(401)
    expect(bypassed.headers.get('www-authenticate')).toBe('Anteroom error="ERR_ADMISSION_BYPASS"')
    expect(((await bypassed.json()) as { error: { message: string } }).error.message).toContain('bypass rule "office"')
    const lined = await app.request('/buy', { headers: { 'anteroom-admission': await tokens.sign(claims, now) } })
    expect(lined.status).toBe(200)
    expect(() => admissionVerifier(options({ bypassAdmissions: 'maybe' }))).toThrow(/bypassAdmissions: must be "accept" or "refuse"/)
  })

  it('the edge reads its own bypass claim back, and never takes such a token as an admission cookie', async () => {
    const token = await tokens.sign({ ...claims, bypass: 'office' }, now)
    expect(await tokens.verify(token, 'sale', now)).toMatchObject({ bypass: 'office' })
  })
})

// The error registry (src/core/errors.ts): every code any app can answer is in it, docs/errors.md
// lists each with its status, and the edge, the admin API and the booking origin render a code the
// same way (one renderer, src/http/errors.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { createLocalJWKSet } from 'jose'
import { describe, expect, it } from 'vitest'
import { jsMac } from '../src/adapters/js/mac.js'
import { memoryStores } from '../src/adapters/memory/stores.js'
import { unavailable } from '../src/adapters/postgres/unavailable.js'
import { createBookingApp } from '../src/booking/app.js'
import { loadConfig } from '../src/config/index.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../src/core/admission-token.js'
import { AnteroomError, ERRORS, type ErrorCode, isErrorCode, problemOf } from '../src/core/errors.js'
import { assembleEdge } from '../src/entry/assemble.js'
import { errorBody } from '../src/http/errors.js'
import type { Origin } from '../src/ports/origin.js'
import type { SeatStore } from '../src/ports/seat-store.js'
import type { SettingsStore } from '../src/ports/settings-store.js'

const ROOT = join(import.meta.dirname, '..')
const CODE = /\bERR_[A-Z0-9]+(?:_[A-Z0-9]+)*\b/g

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.(ts|js|lua|sql|html)$/.test(name) ? [path] : []
  })
}

/** Every ERR_ code written anywhere in the apps' sources, with a file that uses it. */
function codesInSources(): Map<string, string> {
  const found = new Map<string, string>()
  for (const dir of ['src', 'admin', 'worker']) {
    for (const file of sources(join(ROOT, dir))) {
      for (const [code] of readFileSync(file, 'utf8').matchAll(CODE)) if (!found.has(code)) found.set(code, relative(ROOT, file))
    }
  }
  return found
}

describe('the error registry', () => {
  it('has every code that src/, admin/ and worker/ use', () => {
    const used = codesInSources()
    expect(used.size).toBeGreaterThan(30)
    const missing = [...used].filter(([code]) => !isErrorCode(code)).map(([code, file]) => `${code} (${file})`)
    expect(missing).toEqual([])
  })

  it('is what docs/errors.md lists, with the same statuses', () => {
    const doc = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8')
    const rows = new Map<string, number>()
    for (const [, code, status] of doc.matchAll(/^\| `(ERR_[A-Z0-9_]+)` \| (\d{3}) \|/gm)) rows.set(code as string, Number(status))
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(ERRORS).map(([code, spec]) => [code, spec.status])))
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('docs/errors.md')
  })

  it('gives each code a status, a title and messages for visitors and API callers', () => {
    for (const [code, spec] of Object.entries(ERRORS)) {
      expect(spec.status, code).toBeGreaterThanOrEqual(400)
      expect(spec.status, code).toBeLessThan(600)
      for (const text of [spec.title, spec.visitor, spec.api]) expect(text.length, code).toBeGreaterThan(3)
    }
  })

  it('tells clients the message below 500 and the registry text from 500 on, unless the error says otherwise', () => {
    expect(problemOf(new AnteroomError('ERR_BAD_PATH', 'This address cannot be served: an encoded slash.'))).toMatchObject({
      status: 400,
      message: 'This address cannot be served: an encoded slash.',
    })
    expect(problemOf(new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer')).message).toBe(ERRORS.ERR_STORE_UNAVAILABLE.api)
    expect(problemOf(new AnteroomError('ERR_STORE_UNAVAILABLE', 'Signed out here only', { expose: true })).message).toBe(
      'Signed out here only',
    )
    const internal = problemOf(new TypeError('secret at /srv/app.ts:12'))
    expect(internal).toMatchObject({ status: 500, code: 'ERR_INTERNAL', unexpected: true })
    expect(JSON.stringify(internal)).not.toContain('secret')
    expect(errorBody(new AnteroomError('ERR_SEATS_TAKEN', 'Taken: A1', { extra: { taken: ['A1'] } }))).toEqual({
      error: { code: 'ERR_SEATS_TAKEN', message: 'Taken: A1', taken: ['A1'] },
    })
  })
})

/**
 * The three apps, each with a dependency that throws whatever `failure` holds: the edge's origin,
 * the admin API's settings store, the booking origin's seat store.
 */
async function threeApps() {
  let failure: unknown = new Error('unset')
  const logs: { event: string; fields: Record<string, unknown> }[] = []
  const log = (event: string, fields: Record<string, unknown>) => logs.push({ event, fields })
  const token = 'admin-token-0123456789abcdefghij'
  const config = loadConfig({
    ANTEROOM_ROOMS: JSON.stringify([{ id: 'sale', paths: ['/tickets'], totalActiveUsers: 10, newUsersPerMinute: 10 }]),
    ANTEROOM_QUEUE_SECRET: 'test-queue-secret-0123456789abcdef',
    ANTEROOM_ADMIN_TOKEN: token,
  })
  const stores = memoryStores()
  const origin: Origin = {
    forward: async () => {
      throw failure
    },
    close: async () => {},
  }
  const { settings } = stores
  const failing: SettingsStore = {
    list: () => settings.list(),
    get: async () => {
      throw failure
    },
    seed: (rooms) => settings.seed(rooms),
    replace: (room, rev) => settings.replace(room, rev),
  }
  const edge = await assembleEdge({
    config,
    ...stores,
    settings: failing,
    origin,
    mac: jsMac(config.queueSecret),
    adminAssets: { html: '', css: '', modules: {} },
    log,
    clientIp: () => '192.0.2.1',
    scheme: () => 'http',
  })
  const keys = await importSigningKeys([await generateSigningJwk('k1')])
  const tokens = new AdmissionTokens({ keys, issuer: 'anteroom', audience: 'origin' })
  const seats = {
    event: async () => {
      throw failure
    },
  } as unknown as SeatStore
  const booking = createBookingApp({
    seats,
    payments: {} as never,
    admission: { jwksUrl: 'http://127.0.0.1:1/jwks', issuer: 'anteroom', audience: 'origin', keys: createLocalJWKSet(tokens.jwks()) },
    log,
  })
  const admission = await tokens.sign(
    { sub: 'v1', jti: 's1', room: 'sale', arr: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 },
    Date.now(),
  )
  const json = { accept: 'application/json' }
  return {
    logs,
    /** The three answers to a request that meets `err`. */
    async answers(err: unknown): Promise<Record<'edge' | 'admin' | 'origin', Response>> {
      failure = err
      return {
        edge: await edge.app.request('http://shop.test/elsewhere', { headers: json }),
        admin: await edge.app.request('http://shop.test/_anteroom/api/rooms/sale', {
          headers: { ...json, authorization: `Bearer ${token}` },
        }),
        origin: await booking.request('http://booking.test/events/e1/seats', { headers: { ...json, 'anteroom-admission': admission } }),
      }
    },
    page: (err: unknown) => {
      failure = err
      return edge.app.request('http://shop.test/elsewhere', { headers: { accept: 'text/html' } })
    },
  }
}

const RENDERED_HEADERS = ['cache-control', 'content-type', 'retry-after', 'allow', 'connection']

async function rendering(res: Response) {
  const headers = Object.fromEntries(RENDERED_HEADERS.map((h) => [h, res.headers.get(h)]))
  return { status: res.status, headers, body: await res.json() }
}

describe('one renderer for the edge, the admin API and the booking origin', () => {
  it('answers every code with the same status, headers and JSON in all three apps', async () => {
    const apps = await threeApps()
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const err = new AnteroomError(code, `what went wrong (${code})`, { field: 'where' })
      const { edge, admin, origin } = await apps.answers(err)
      const seen = await rendering(edge)
      expect(seen.status, code).toBe(ERRORS[code].status)
      expect(seen.body, code).toEqual({ error: { code, message: problemOf(err).message, field: 'where' } })
      expect(seen.headers['cache-control'], code).toBe('no-store')
      expect(seen.headers['content-type'], code).toBe('application/json; charset=utf-8')
      expect(await rendering(admin), code).toEqual(seen)
      expect(await rendering(origin), code).toEqual(seen)
    }
  })

  it('answers anything unexpected as ERR_INTERNAL 500 everywhere, logs it, and shows no stack or message', async () => {
    const apps = await threeApps()
    const { edge, admin, origin } = await apps.answers(new TypeError('cannot read db_password of undefined'))
    const seen = await rendering(edge)
    expect(seen.status).toBe(500)
    expect(seen.body).toEqual({ error: { code: 'ERR_INTERNAL', message: ERRORS.ERR_INTERNAL.api } })
    expect(await rendering(admin)).toEqual(seen)
    expect(await rendering(origin)).toEqual(seen)
    expect(apps.logs.map((l) => l.event).filter((e) => e.endsWith('error'))).toEqual(['error', 'admin_error', 'origin_error'])
    for (const l of apps.logs) expect(l.fields).toMatchObject({ status: 500, code: 'ERR_INTERNAL', error: 'TypeError' })
    const page = await apps.page(new TypeError('cannot read db_password of undefined'))
    const html = await page.text()
    expect(page.status).toBe(500)
    expect(html).toContain(ERRORS.ERR_INTERNAL.title)
    expect(html).not.toContain('db_password')
    expect(html).not.toContain('TypeError')
  })

  it('gives a visitor the page with the title and the visitor text', async () => {
    const apps = await threeApps()
    const page = await apps.page(new AnteroomError('ERR_ORIGIN_TIMEOUT', 'undici: headers timeout after 30000 ms'))
    expect(page.status).toBe(504)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    const html = await page.text()
    expect(html).toContain(ERRORS.ERR_ORIGIN_TIMEOUT.title)
    expect(html).toContain(ERRORS.ERR_ORIGIN_TIMEOUT.visitor)
    expect(html).not.toContain('undici')
  })
})

describe('the booking database out of reach', () => {
  it('is ERR_DB_UNAVAILABLE, a 503 with Retry-After: 1, for each way the driver says a connection failed; other errors are not', async () => {
    const apps = await threeApps()
    const driver = (code: string) => Object.assign(new Error(`driver said ${code}`), { code })
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'CONNECTION_CLOSED',
      'CONNECTION_ENDED',
      'CONNECTION_DESTROYED',
      'CONNECT_TIMEOUT',
      'NO_ANSWER',
      '57P01',
      '57P03',
      '08006',
    ]) {
      const err = unavailable(driver(code))
      expect(err, code).toBeInstanceOf(AnteroomError)
      expect((err as AnteroomError).cause, code).toMatchObject({ code })
      const { origin } = await apps.answers(err)
      expect(await rendering(origin), code).toMatchObject({
        status: 503,
        headers: { 'retry-after': '1' },
        body: { error: { code: 'ERR_DB_UNAVAILABLE', message: ERRORS.ERR_DB_UNAVAILABLE.api } },
      })
    }
    // A lock timeout, a deadlock or a broken statement is not the database being away.
    for (const code of ['55P03', '40P01', '42601', 'UNSAFE_TRANSACTION'])
      expect(unavailable(driver(code)), code).not.toBeInstanceOf(AnteroomError)
    expect(unavailable(new TypeError('no code'))).toBeInstanceOf(TypeError)
  })
})

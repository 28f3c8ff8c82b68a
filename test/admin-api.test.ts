// The admin API on a real Redis shared by two edges: credentials, ETag/If-Match with 412 on a stale
// write, validation naming the field, live effect on every edge, audit, actions, stats and history.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import type { Edge } from '../src/entry/build.js'
import { buildEdge } from '../src/entry/build.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
const ALICE = 'alice-token-0123456789abcdefgh'
const BOB = 'bob-token-0123456789abcdefghijk'
let origin: OriginServer
const built: Edge[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of built) await e.close()
  await origin.close()
})

async function edges(count = 2, room: Record<string, unknown> = {}) {
  const id = `adm-${Date.now().toString(36)}-${built.length}`
  const clock = new ManualClock(T0)
  const signingKeys = [await generateSigningJwk('k')]
  const list: Edge[] = []
  for (let i = 0; i < count; i++) {
    list.push(
      await testEdge({
        rooms: [{ id, paths: ['/'], totalActiveUsers: 3, newUsersPerMinute: 6, sessionDurationSeconds: 60, ...room }],
        originUrl: origin.url,
        redisUrl: inject('redisUrl'),
        clock,
        signingKeys,
        adminTokens: `alice:${ALICE},bob:${BOB}`,
      }),
    )
  }
  built.push(...list)
  return { id, clock, edges: list, app: (list[0] as Edge).app }
}

type App = Edge['app']

/**
 * A client address for a request driven in-process: app.request's env stands in for the Node
 * socket that @hono/node-server would hand over, which is where the edge reads the address.
 */
const from = (address: string) => ({ incoming: { socket: { remoteAddress: address } } })
let addresses = 0
/** A client address no other request of this file has used, so that failures in one test never lock another. */
function newAddress(): string {
  const n = ++addresses
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
}

async function api(
  app: App,
  method: string,
  path: string,
  o: { token?: string | null; body?: unknown; headers?: Record<string, string>; address?: string } = {},
) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token !== null) headers.authorization = `Bearer ${o.token ?? ALICE}`
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const init = {
    method,
    headers,
    body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
  }
  const res = await app.request(`http://shop.test/_anteroom${path}`, init, from(o.address ?? newAddress()))
  const text = await res.text()
  // biome-ignore lint/suspicious/noExplicitAny: responses are read field by field
  return { status: res.status, headers: res.headers, text, body: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> }
}

/** POST /admin/login from a client address, with an account name when given. */
async function login(app: App, token: string, o: { address?: string; name?: unknown } = {}) {
  const res = await app.request(
    'http://shop.test/_anteroom/admin/login',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(o.name === undefined ? { token } : { name: o.name, token }),
    },
    from(o.address ?? newAddress()),
  )
  return {
    res,
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as { who?: string; csrf?: string; error?: { code: string; message: string; field?: string } },
  }
}

describe('admin API', () => {
  it('every route needs credentials, and a 401 says nothing about the rooms', async () => {
    const { app, id } = await edges(1)
    for (const [method, path] of [
      ['GET', '/api/rooms'],
      ['GET', `/api/rooms/${id}`],
      ['PATCH', `/api/rooms/${id}`],
      ['GET', `/api/rooms/${id}/stats`],
      ['GET', `/api/rooms/${id}/history`],
      ['POST', `/api/rooms/${id}/pause`],
      ['POST', `/api/rooms/${id}/sessions/end-all`],
      ['GET', '/api/audit'],
    ]) {
      for (const token of [null, 'wrong-token-0123456789abcdefgh', '']) {
        const r = await api(app, method as string, path as string, { token, body: method === 'PATCH' ? { mode: 'closed' } : undefined })
        expect(r.status, `${method} ${path}`).toBe(401)
        expect(r.text).not.toContain(id)
      }
    }
    expect((await api(app, 'GET', `/api/rooms/${id}`)).body.settings.mode).toBe('fifo')
  })

  it('reads settings with an ETag; a change needs If-Match; a stale one gets 412 with the current settings', async () => {
    const { app, id } = await edges(1)
    const read = await api(app, 'GET', `/api/rooms/${id}`)
    expect(read.status).toBe(200)
    const etag = read.headers.get('etag') as string
    expect(etag).toMatch(/^"rev-\d+"$/)
    expect(read.body.settings).toMatchObject({
      id,
      totalActiveUsers: 3,
      newUsersPerMinute: 6,
      mode: 'fifo',
      onStoreError: 'closed',
      paths: ['/'],
    })
    expect((await api(app, 'PATCH', `/api/rooms/${id}`, { body: { newUsersPerMinute: 12 } })).status).toBe(428)
    // Two managers read the same revision and save at once: one wins, the other is told.
    const [a, b] = await Promise.all([
      api(app, 'PATCH', `/api/rooms/${id}`, { body: { newUsersPerMinute: 12 }, headers: { 'if-match': etag } }),
      api(app, 'PATCH', `/api/rooms/${id}`, { token: BOB, body: { totalActiveUsers: 99 }, headers: { 'if-match': etag } }),
    ])
    expect([a.status, b.status].sort()).toEqual([200, 412])
    const loser = a.status === 412 ? a : b
    const winner = a.status === 200 ? a : b
    expect(loser.body.error.code, JSON.stringify(loser.body)).toBe('ERR_STALE')
    expect(loser.body.error.current).toEqual(winner.body.settings)
    expect(loser.body.error.etag).toBe(winner.headers.get('etag'))
    expect(winner.headers.get('etag')).not.toBe(etag)
    // Retrying with the new ETag works and keeps the winner's change.
    const retry = await api(app, 'PATCH', `/api/rooms/${id}`, {
      body: { refreshSeconds: 10 },
      headers: { 'if-match': loser.body.error.etag },
    })
    expect(retry.status).toBe(200)
    expect(retry.body.settings).toMatchObject(
      winner.body.settings.newUsersPerMinute === 12 ? { newUsersPerMinute: 12 } : { totalActiveUsers: 99 },
    )
  })

  it('validates every change and names the field; nothing changes', async () => {
    const { app, id } = await edges(1)
    const before = await api(app, 'GET', `/api/rooms/${id}`)
    const ifMatch = before.headers.get('etag') as string
    const cases: [unknown, string][] = [
      [{ totalActiveUsers: 'many' }, 'totalActiveUsers'],
      [{ totalActiveUsers: -5 }, 'totalActiveUsers'],
      [{ totalActiveUsers: 0 }, 'totalActiveUsers'],
      [{ newUsersPerMinute: 1e12 }, 'newUsersPerMinute'],
      [{ sessionDurationSeconds: 1.5 }, 'sessionDurationSeconds'],
      [{ refreshSeconds: 30, abandonAfterSeconds: 40 }, 'abandonAfterSeconds'],
      [{ mode: 'lottery' }, 'mode'],
      [{ paths: ['no-slash'] }, 'paths[0]'],
      [{ colour: 'red' }, 'colour'],
      [{ id: 'renamed' }, 'id'],
    ]
    for (const [body, field] of cases) {
      const r = await api(app, 'PATCH', `/api/rooms/${id}`, { body, headers: { 'if-match': ifMatch } })
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.error.field).toBe(field)
      expect(r.body.error.message).toContain(field)
    }
    for (const body of ['not json', '[1,2]', 'null', 'x'.repeat(20_000)]) {
      const r = await api(app, 'PATCH', `/api/rooms/${id}`, { body, headers: { 'if-match': ifMatch } })
      expect([400, 413]).toContain(r.status)
    }
    const after = await api(app, 'GET', `/api/rooms/${id}`)
    expect(after.body).toEqual(before.body)
    expect((await api(app, 'GET', '/api/rooms/no-such-room')).status).toBe(404)
  })

  it('a change takes effect on every edge within a second, and survives a restart', async () => {
    const {
      app,
      id,
      clock,
      edges: [a, b],
    } = await edges(2)
    const etag = (await api(app, 'GET', `/api/rooms/${id}`)).headers.get('etag') as string
    await api(app, 'PATCH', `/api/rooms/${id}`, { body: { mode: 'paused', newUsersPerMinute: 60 }, headers: { 'if-match': etag } })
    expect(a?.deps.rooms.get(id)).toMatchObject({ mode: 'paused', newUsersPerMinute: 60 })
    expect(b?.deps.rooms.get(id)?.mode).toBe('fifo')
    clock.advance(1000)
    b?.deps.rooms.rooms()
    await b?.deps.rooms.settled()
    expect(b?.deps.rooms.get(id)).toMatchObject({ mode: 'paused', newUsersPerMinute: 60 })
    expect(await new Visitor().status((b as Edge).app, id)).toMatchObject({ state: 'paused' })
    // A restarted edge with the same config seed keeps the live settings.
    const restarted = await testEdge({
      rooms: [{ id, paths: ['/'], totalActiveUsers: 3, newUsersPerMinute: 6 }],
      originUrl: origin.url,
      redisUrl: inject('redisUrl'),
      adminTokens: `alice:${ALICE}`,
    })
    built.push(restarted)
    expect(restarted.deps.rooms.get(id)).toMatchObject({ mode: 'paused', newUsersPerMinute: 60 })
  })

  it('pause, resume and close act on the live room; every change is audited with who, when, before and after', async () => {
    const { app, id } = await edges(1)
    expect((await api(app, 'POST', `/api/rooms/${id}/pause`)).body.settings.mode).toBe('paused')
    expect(await new Visitor().status(app, id)).toMatchObject({ state: 'paused' })
    expect((await api(app, 'POST', `/api/rooms/${id}/resume`, { token: BOB })).body.settings.mode).toBe('fifo')
    expect((await api(app, 'POST', `/api/rooms/${id}/close`)).body.settings.mode).toBe('closed')
    expect(await new Visitor().status(app, id)).toMatchObject({ state: 'closed' })
    const audit = (await api(app, 'GET', '/api/audit?limit=50')).body.entries.filter((e: { room: string }) => e.room === id)
    expect(audit.map((e: { action: string; who: string }) => [e.action, e.who])).toEqual([
      ['room.close', 'alice'],
      ['room.resume', 'bob'],
      ['room.pause', 'alice'],
    ])
    expect(audit[0].before.mode).toBe('fifo')
    expect(audit[0].after.mode).toBe('closed')
    expect(Date.parse(audit[0].at)).not.toBeNaN()
  })

  it('ends one session or all of them; their tokens are refused at the next renewal', async () => {
    // Paced at 600 a minute, three can be let in at the same instant (at most 11 in a second).
    const { app, id, clock } = await edges(1, { newUsersPerMinute: 600 })
    const visitors = [new Visitor(), new Visitor(), new Visitor()]
    for (const v of visitors) expect(await v.status(app, id)).toMatchObject({ state: 'admitted' })
    const sub = JSON.parse(
      Buffer.from(((visitors[0] as Visitor).cookies.get(`anteroom_a_${id}`) as string).split('.')[1] as string, 'base64url').toString(),
    ).sub
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/${sub}/end`)).body).toEqual({ ended: true })
    expect((await api(app, 'GET', `/api/rooms/${id}/stats`)).body.active).toBe(2)
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/end-all`)).body).toEqual({ ended: 2 })
    expect((await api(app, 'GET', `/api/rooms/${id}/stats`)).body.active).toBe(0)
    // Three newcomers take the freed slots; the ended visitors are refused and get no place in line.
    for (let i = 0; i < 3; i++) expect(await new Visitor().status(app, id)).toMatchObject({ state: 'admitted' })
    clock.advance(31_000)
    for (const v of visitors) expect(await v.status(app, id)).toMatchObject({ state: 'ended' })
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/bad%20id/end`)).status).toBe(400)
    // An admin lets one back: they join the line at the back (the room is full), audited.
    const waiting = new Visitor()
    expect(await waiting.status(app, id)).toMatchObject({ state: 'queued', position: 1 })
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/${sub}/allow`)).body).toEqual({ allowed: true })
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/${sub}/allow`)).body).toEqual({ allowed: false })
    expect(await (visitors[0] as Visitor).status(app, id)).toMatchObject({ state: 'queued', position: 2 })
    expect(await (visitors[1] as Visitor).status(app, id)).toMatchObject({ state: 'ended' })
    const audit = (await api(app, 'GET', '/api/audit?limit=100&kind=actions')).body.entries as { action: string; room: string }[]
    expect(audit.filter((e) => e.action === 'session.allow' && e.room === id)).toMatchObject([
      { action: 'session.allow', before: { visitor: sub }, after: { allowed: false } },
      { action: 'session.allow', before: { visitor: sub }, after: { allowed: true } },
    ])
    expect((await api(app, 'POST', `/api/rooms/${id}/sessions/bad%20id/allow`)).status).toBe(400)
  })

  it('reports live stats and a 30-minute history, one sample per 10 s whichever edge records it', async () => {
    const {
      app,
      id,
      clock,
      edges: [a, b],
    } = await edges(2)
    const visitors = Array.from({ length: 8 }, () => new Visitor())
    for (const v of visitors) await v.status(app, id)
    const stats = (await api(app, 'GET', `/api/rooms/${id}/stats`)).body
    // 6 per minute: at most 1 per 10 s, so one admitted, seven waiting.
    expect(stats).toMatchObject({
      waiting: 7,
      active: 1,
      admittedLastMinute: 1,
      ratePerMinute: 1,
      abandonedLastMinute: 0,
      store: 'up',
      mode: 'fifo',
    })
    // The last of the 7 waiting: the pace lets two more in (at 9 and 19 s), then the room is full (3 at
    // once) and the line moves as 60-s sessions end (collected half a 20-s refresh after their grant):
    // 70, 79, 89, 140, 149 s. By the last minute's rate it said 420 s.
    expect(stats.etaBackOfLineSeconds).toBe(149)
    // Nobody polls for abandonAfter (60 s): they leave, and the admin sees them leave.
    clock.advance(61_000)
    await new Visitor().status(app, id)
    expect((await api(app, 'GET', `/api/rooms/${id}/stats`)).body.abandonedLastMinute).toBe(7)
    for (let i = 0; i < 4; i++) {
      await a?.deps.queue.recordSample(id, clock.now())
      await b?.deps.queue.recordSample(id, clock.now() + 1)
      clock.advance(10_000)
    }
    const history = (await api(app, 'GET', `/api/rooms/${id}/history`)).body.samples
    expect(history).toHaveLength(4)
    // The seven left; the newcomer got the slot whose session had ended.
    expect(history[0]).toMatchObject({ waiting: 0, active: 1, abandonedLastMinute: 7 })
    clock.advance(31 * 60_000)
    await a?.deps.queue.recordSample(id, clock.now())
    expect((await api(app, 'GET', `/api/rooms/${id}/history`)).body.samples).toHaveLength(1)
  })
})

describe('last simulation report', () => {
  it('serves the last report of npm run simulate to admins only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'anteroom-report-'))
    const path = join(dir, 'last-report.html')
    const config = loadConfig({
      ANTEROOM_ROOMS: JSON.stringify([{ id: 'rep', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1 }]),
      ANTEROOM_QUEUE_SECRET: 'test-queue-secret-0123456789abcdef',
      ANTEROOM_ADMIN_TOKENS: `alice:${ALICE}`,
      ANTEROOM_SIM_REPORT: path,
    })
    const edge = await buildEdge(config, { originUrl: origin.url })
    built.push(edge)
    expect((await api(edge.app, 'GET', '/api/report', { token: null })).status).toBe(401)
    expect((await api(edge.app, 'GET', '/api/report')).status).toBe(404)
    writeFileSync(path, '<!doctype html><h1>All verdicts pass</h1>')
    const report = await api(edge.app, 'GET', '/api/report')
    expect(report.status).toBe(200)
    expect(report.text).toContain('All verdicts pass')
    expect(report.headers.get('content-security-policy')).toMatch(/default-src 'none'/)
    rmSync(dir, { recursive: true, force: true })
  })
})

describe('admin UI sign-in', () => {
  it('signs in with a token into an HttpOnly, SameSite=Strict session, and every change needs the CSRF token', async () => {
    const { app, id, clock } = await edges(1)
    expect((await login(app, 'wrong-token-0123456789abcdefgh')).res.status).toBe(401)
    const { res, body } = await login(app, BOB)
    expect(body.who).toBe('bob')
    const setCookie = res.headers.get('set-cookie') as string
    expect(setCookie).toMatch(/^anteroom_admin=s1\.bob\./)
    expect(setCookie).toMatch(/HttpOnly/)
    expect(setCookie).toMatch(/SameSite=Strict/)
    expect(setCookie).toMatch(/Path=\/_anteroom/)
    const cookie = setCookie.split(';')[0] as string
    const session = await api(app, 'GET', '/api/session', { token: null, headers: { cookie } })
    expect(session.body).toEqual({ who: 'bob', csrf: body.csrf })
    const etag = (await api(app, 'GET', `/api/rooms/${id}`, { token: null, headers: { cookie } })).headers.get('etag') as string
    const noCsrf = await api(app, 'PATCH', `/api/rooms/${id}`, {
      token: null,
      body: { mode: 'paused' },
      headers: { cookie, 'if-match': etag },
    })
    expect(noCsrf.status).toBe(403)
    const badCsrf = await api(app, 'POST', `/api/rooms/${id}/close`, { token: null, headers: { cookie, 'x-csrf-token': 'x'.repeat(43) } })
    expect(badCsrf.status).toBe(403)
    expect((await api(app, 'GET', `/api/rooms/${id}`)).body.settings.mode).toBe('fifo')
    const ok = await api(app, 'PATCH', `/api/rooms/${id}`, {
      token: null,
      body: { mode: 'paused' },
      headers: { cookie, 'if-match': etag, 'x-csrf-token': body.csrf as string },
    })
    expect(ok.status).toBe(200)
    const tampered = cookie.replace('s1.bob.', 's1.alice.')
    expect((await api(app, 'GET', '/api/rooms', { token: null, headers: { cookie: tampered } })).status).toBe(401)
    clock.advance(8 * 3600_000 + 1)
    expect((await api(app, 'GET', '/api/rooms', { token: null, headers: { cookie } })).status).toBe(401)
  })

  it('signing out ends the session on every edge, though its cookie is still signed and unexpired', async () => {
    const { edges: list } = await edges(2)
    const [a, b] = list.map((e) => e.app) as [App, App]
    const { res, body } = await login(a, BOB)
    const cookie = (res.headers.get('set-cookie') as string).split(';')[0] as string
    const other = (await login(a, ALICE)).res.headers.get('set-cookie')?.split(';')[0] as string
    expect((await api(b, 'GET', '/api/rooms', { token: null, headers: { cookie } })).status).toBe(200)
    // Signing out is a change like any other: it needs the CSRF token.
    expect((await api(a, 'POST', '/api/logout', { token: null, headers: { cookie } })).status).toBe(403)
    const out = await api(a, 'POST', '/api/logout', { token: null, headers: { cookie, 'x-csrf-token': body.csrf as string } })
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toMatch(/^anteroom_admin=; Path=\/_anteroom; Max-Age=0/)
    for (const app of [a, b]) expect((await api(app, 'GET', '/api/rooms', { token: null, headers: { cookie } })).status).toBe(401)
    // Only that session: another one, and the bearer tokens, still work.
    expect((await api(b, 'GET', '/api/rooms', { token: null, headers: { cookie: other } })).status).toBe(200)
    expect((await api(b, 'GET', '/api/rooms')).status).toBe(200)
  })
})

// --- sign-in throttling, bulk ends and audit retention, each on a Redis database of its own ----------

type LogLine = { event: string; fields: Record<string, unknown> }

/** An edge on a fresh database of the test Redis, with its log captured. */
async function loggedEdge(room: Record<string, unknown> = {}) {
  const counter = new Redis(inject('redisUrl'))
  const db = await counter.incr('anteroom-test:next-db')
  counter.disconnect()
  const lines: LogLine[] = []
  const clock = new ManualClock(T0)
  const id = `thr-${db}`
  const edge = await testEdge({
    rooms: [{ id, paths: ['/'], totalActiveUsers: 3, newUsersPerMinute: 60, sessionDurationSeconds: 60, ...room }],
    originUrl: origin.url,
    redisUrl: `${inject('redisUrl')}/${db}`,
    clock,
    adminTokens: `alice:${ALICE},bob:${BOB}`,
    log: (event, fields) => lines.push({ event, fields }),
  })
  built.push(edge)
  const failures = () => lines.filter((l) => l.event === 'admin_signin_failed').map((l) => l.fields)
  return { app: edge.app, clock, id, lines, failures }
}

const wrong = (i: number) => `wrong-token-${i}-0123456789abcdefgh`

/** The log holds none of the tokens tried, right or wrong, whole or in part. */
function expectNoTokens(lines: LogLine[], tokens: string[]) {
  const text = JSON.stringify(lines)
  for (const t of tokens) {
    expect(text).not.toContain(t)
    expect(text).not.toContain(t.slice(0, 12))
  }
}

describe('admin sign-in throttling', () => {
  it('60 wrong sign-ins from one address: four 401s, then 429 with Retry-After; the lockout doubles up to 15 minutes', async () => {
    const { app, clock, lines, failures } = await loggedEdge()
    const address = '10.0.0.5'
    const results = []
    for (let i = 0; i < 60; i++) results.push(await login(app, wrong(i), { address }))
    expect(results.map((r) => r.status)).toEqual([401, 401, 401, 401, ...Array(56).fill(429)])
    expect(results[3]?.body.error?.code).toBe('ERR_UNAUTHORIZED')
    for (const r of results.slice(4)) {
      expect(r.retryAfter).toBe('1')
      expect(r.body.error?.code).toBe('ERR_TOO_MANY_ATTEMPTS')
    }
    expect(results[4]?.body.error?.message).toBe('That admin token is not valid. Too many failed sign-ins: try again in 1 second.')
    expect(results[5]?.body.error?.message).toBe('Too many failed sign-ins: try again in 1 second.')
    // Attempts while locked are not checked, so not counted: five failures, each logged once.
    expect(failures().map((f) => f.failures)).toEqual([1, 2, 3, 4, 5])
    expect(failures()[4]).toMatchObject({ via: 'login', client: address, failures: 5, lockedSeconds: 1 })
    expect(failures()[4]?.account).toBeUndefined()
    // Not even the right token gets in while the address is locked; another address is not locked.
    expect((await login(app, ALICE, { address })).status).toBe(429)
    expect((await login(app, wrong(100), { address: '10.0.0.6' })).status).toBe(401)

    // Each failure after a lockout doubles it, up to 15 minutes.
    const waits: number[] = []
    let wait = 1
    for (let n = 6; n <= 17; n++) {
      clock.advance(wait * 1000)
      const r = await login(app, wrong(n + 100), { address })
      expect(r.status).toBe(429)
      wait = Number(r.retryAfter)
      waits.push(wait)
    }
    expect(waits).toEqual([2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900])
    clock.advance(300_000)
    const midway = await login(app, ALICE, { address })
    expect([midway.status, midway.retryAfter, midway.body.error?.message]).toEqual([
      429,
      '600',
      'Too many failed sign-ins: try again in 10 minutes.',
    ])
    // Once the lockout is over the right token signs in, and that clears the address.
    clock.advance(600_000)
    expect((await login(app, ALICE, { address })).body.who).toBe('alice')
    expect((await login(app, wrong(200), { address })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ client: address, failures: 1 })
    expectNoTokens(lines, [ALICE, ...Array.from({ length: 201 }, (_, i) => wrong(i))])
  })

  it('failures naming an account count against it from any address; without the name its owner still signs in', async () => {
    const { app, lines, failures } = await loggedEdge()
    for (let i = 1; i <= 4; i++) {
      const r = await login(app, wrong(i), { name: 'alice', address: `10.1.0.${i}` })
      expect([r.status, r.body.error?.message]).toEqual([401, 'That name and admin token do not match'])
    }
    const fifth = await login(app, wrong(5), { name: 'alice', address: '10.1.0.5' })
    expect([fifth.status, fifth.retryAfter, fifth.body.error?.code]).toEqual([429, '1', 'ERR_TOO_MANY_ATTEMPTS'])
    expect(failures().at(-1)).toEqual({
      via: 'login',
      client: '10.1.0.5',
      account: 'alice',
      failures: 1,
      accountFailures: 5,
      lockedSeconds: 1,
      // A made id: the test sends no trusted request-id header.
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    })
    // The account is locked: its right token, naming it, is refused unchecked from a new address...
    expect((await login(app, ALICE, { name: 'alice', address: '10.1.0.6' })).status).toBe(429)
    // ... while other accounts, and the same token without the name, sign in.
    expect((await login(app, BOB, { name: 'bob', address: '10.1.0.7' })).body.who).toBe('bob')
    const owner = await login(app, ALICE, { address: '10.1.0.8' })
    expect([owner.status, owner.body.who]).toEqual([200, 'alice'])
    // That success cleared the account: naming it works again.
    expect((await login(app, ALICE, { name: 'alice', address: '10.1.0.9' })).body.who).toBe('alice')
    // A real token of another account does not sign in under this name, and counts as a failure.
    expect((await login(app, BOB, { name: 'alice', address: '10.1.0.10' })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ account: 'alice', failures: 1, accountFailures: 1 })
    // A malformed name is refused before any check.
    for (const name of ['no spaces', 5, 'x'.repeat(65)]) {
      const r = await login(app, ALICE, { name, address: '10.1.0.11' })
      expect([r.status, r.body.error?.field]).toEqual([400, 'name'])
    }
    expectNoTokens(lines, [ALICE, BOB, ...Array.from({ length: 6 }, (_, i) => wrong(i))])
  })

  it('ANTEROOM_ADMIN_TOKEN alone signs in under the name "admin"', async () => {
    const token = 'single-admin-token-0123456789abcdef'
    const config = loadConfig({
      ANTEROOM_ROOMS: JSON.stringify([{ id: 'one', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1 }]),
      ANTEROOM_QUEUE_SECRET: 'test-queue-secret-0123456789abcdef',
      ANTEROOM_ADMIN_TOKEN: token,
    })
    const edge = await buildEdge(config, { originUrl: origin.url })
    built.push(edge)
    expect((await login(edge.app, token, { name: 'admin' })).body.who).toBe('admin')
    expect((await login(edge.app, token, { name: 'alice' })).status).toBe(401)
  })

  it('wrong bearer tokens count against the address, and a locked address gets 429 on the API too', async () => {
    const { app, clock, lines, failures } = await loggedEdge()
    const address = '10.2.0.1'
    for (let i = 0; i < 4; i++) expect((await api(app, 'GET', '/api/rooms', { token: wrong(i), address })).status).toBe(401)
    const fifth = await api(app, 'GET', '/api/rooms', { token: wrong(4), address })
    expect([fifth.status, fifth.headers.get('retry-after'), fifth.body.error.code]).toEqual([429, '1', 'ERR_TOO_MANY_ATTEMPTS'])
    expect(failures().map((f) => [f.via, f.client, f.failures])).toEqual([1, 2, 3, 4, 5].map((n) => ['bearer', address, n]))
    // Right token, same address: refused unchecked. Another address: fine.
    expect((await api(app, 'GET', '/api/rooms', { address })).status).toBe(429)
    expect((await api(app, 'GET', '/api/rooms', { address: '10.2.0.2' })).status).toBe(200)
    // Sign-in and bearer share the address's count.
    expect((await login(app, ALICE, { address })).status).toBe(429)
    // A signed-in browser session is not a token guess: it keeps working from that address.
    const session = await login(app, BOB, { address: '10.2.0.3' })
    const cookie = (session.res.headers.get('set-cookie') as string).split(';')[0] as string
    expect((await api(app, 'GET', '/api/rooms', { token: null, headers: { cookie }, address })).status).toBe(200)
    // After the lockout the right token works and clears the count.
    clock.advance(1000)
    expect((await api(app, 'GET', '/api/rooms', { address })).status).toBe(200)
    expect((await api(app, 'GET', '/api/rooms', { token: wrong(9), address })).status).toBe(401)
    expect(failures().at(-1)).toMatchObject({ via: 'bearer', failures: 1 })
    expectNoTokens(lines, [ALICE, BOB, ...Array.from({ length: 10 }, (_, i) => wrong(i))])
  })

  it('counts IPv6 clients by their /64', async () => {
    const { app } = await loggedEdge()
    const statuses = []
    for (let i = 0; i < 5; i++) statuses.push((await login(app, wrong(i), { address: `2001:db8:1:2::${i + 1}` })).status)
    expect(statuses).toEqual([401, 401, 401, 401, 429])
    expect((await login(app, ALICE, { address: '2001:0db8:0001:0002:ffff::9' })).status).toBe(429)
    expect((await login(app, ALICE, { address: '2001:db8:1:3::1' })).status).toBe(200)
    // An IPv4 client seen through an IPv6 socket is that IPv4 address.
    for (let i = 0; i < 5; i++) await login(app, wrong(i), { address: '10.3.0.1' })
    expect((await login(app, ALICE, { address: '::ffff:10.3.0.1' })).status).toBe(429)
  })
})

describe('ending sessions in bulk, and what the audit log keeps', () => {
  it('ends a list of sessions with one audit entry, and names the field of a bad list', async () => {
    const { app, id } = await loggedEdge({ newUsersPerMinute: 600 })
    const visitors = [new Visitor(), new Visitor(), new Visitor()]
    for (const v of visitors) expect(await v.status(app, id)).toMatchObject({ state: 'admitted' })
    const subs = visitors.map(
      (v) => JSON.parse(Buffer.from((v.cookies.get(`anteroom_a_${id}`) as string).split('.')[1] as string, 'base64url').toString()).sub,
    )
    const r = await api(app, 'POST', `/api/rooms/${id}/sessions/end`, { body: { visitors: [subs[0], subs[1], subs[0], 'never-admitted'] } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ requested: 3, ended: 2 })
    expect(r.body.endedVisitors.sort()).toEqual([subs[0], subs[1]].sort())
    expect((await api(app, 'GET', `/api/rooms/${id}/stats`)).body.active).toBe(1)
    const audit = (await api(app, 'GET', '/api/audit')).body.entries
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({
      who: 'alice',
      action: 'sessions.end',
      room: id,
      before: { visitors: [subs[0], subs[1], 'never-admitted'] },
    })
    expect(audit[0].after.ended).toBe(2)
    for (const [body, field] of [
      [{ visitors: [] }, 'visitors'],
      [{ visitors: 'abc' }, 'visitors'],
      [{}, 'visitors'],
      [{ visitors: Array.from({ length: 1001 }, (_, i) => `v${i}`) }, 'visitors'],
      [{ visitors: ['ok', 'not ok'] }, 'visitors[1]'],
      [{ visitors: ['ok', 7] }, 'visitors[1]'],
      [{ visitors: ['x'.repeat(65)] }, 'visitors[0]'],
    ] as const) {
      const bad = await api(app, 'POST', `/api/rooms/${id}/sessions/end`, { body })
      expect([bad.status, bad.body.error.field], JSON.stringify(body).slice(0, 80)).toEqual([400, field])
      expect(bad.body.error.message).toContain(field)
    }
    // A thousand at once is one request and one entry.
    const many = await api(app, 'POST', `/api/rooms/${id}/sessions/end`, {
      body: { visitors: Array.from({ length: 1000 }, (_, i) => `visitor-${String(i).padStart(50, '0')}`) },
    })
    expect(many.body).toMatchObject({ requested: 1000, ended: 0 })
    expect((await api(app, 'GET', '/api/audit')).body.entries).toHaveLength(2)
    expect((await api(app, 'POST', '/api/rooms/nope/sessions/end', { body: { visitors: ['a'] } })).status).toBe(404)
  })

  it('1,001 ended sessions do not push a settings change out of the log; a change is dropped after 90 days', async () => {
    const { app, id, clock } = await loggedEdge()
    const etag = (await api(app, 'GET', `/api/rooms/${id}`)).headers.get('etag') as string
    expect((await api(app, 'PATCH', `/api/rooms/${id}`, { body: { newUsersPerMinute: 7 }, headers: { 'if-match': etag } })).status).toBe(
      200,
    )
    clock.advance(1)
    expect((await api(app, 'POST', `/api/rooms/${id}/pause`)).status).toBe(200)
    for (let i = 0; i < 1001; i++) {
      clock.advance(1)
      expect((await api(app, 'POST', `/api/rooms/${id}/sessions/v${i}/end`)).status).toBe(200)
    }
    const newest = (await api(app, 'GET', '/api/audit?limit=1000')).body.entries
    expect(newest).toHaveLength(1000)
    expect(newest.every((e: { action: string }) => e.action === 'session.end')).toBe(true)
    const changes = (await api(app, 'GET', '/api/audit?kind=changes')).body.entries
    expect(changes.map((e: { action: string }) => e.action)).toEqual(['room.pause', 'settings.update'])
    expect(changes[1]).toMatchObject({ who: 'alice', before: { newUsersPerMinute: 60 }, after: { newUsersPerMinute: 7 } })
    expect((await api(app, 'GET', '/api/audit?kind=actions&limit=1000')).body.entries).toHaveLength(1000)
    expect((await api(app, 'GET', '/api/audit?kind=everything')).body.error.field).toBe('kind')
    // 90 days later the changes are still listed; a day after that they are not.
    clock.advance(90 * 86_400_000 - 1002)
    expect((await api(app, 'GET', '/api/audit?kind=changes')).body.entries).toHaveLength(2)
    clock.advance(86_400_000)
    expect((await api(app, 'GET', '/api/audit?kind=changes')).body.entries).toHaveLength(0)
  })
})

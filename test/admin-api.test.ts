// The admin API on a real Redis shared by two edges: credentials, ETag/If-Match with 412 on a stale write, validation naming the field, live effect on every edge, audit, actions, stats and history; the last simulation report; the admin UI's sign-in.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import type { Edge } from '../src/entry/build.js'
import { buildEdge } from '../src/entry/build.js'
import { ALICE, type App, api, BOB, built, edges, login, origin, useAdminEdges } from './support/admin-api.js'
import { testEdge } from './support/edge.js'
import { Visitor } from './support/visitor.js'

useAdminEdges()

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

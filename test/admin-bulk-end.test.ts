// Ending admin sessions in bulk, and what the audit log keeps, each edge on a Redis database of its own.
import { describe, expect, it } from 'vitest'
import { api, loggedEdge, useAdminEdges } from './support/admin-api.js'
import { Visitor } from './support/visitor.js'

useAdminEdges()

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

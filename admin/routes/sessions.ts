// Visitors' sessions in a room (routes.ts mounts these behind the credential check): end them all, end
// many or one (in every line of the room), and let an ended visitor join again. Each is audited.
import { lineIds } from '../../src/core/access.js'
import { readBody } from '../../src/core/body-schema.js'
import { AnteroomError } from '../../src/core/errors.js'
import type { RoomSettings } from '../../src/core/settings.js'
import { BULK_END_BODY, VISITOR_ID } from '../inputs.js'
import { type AdminApp, type AdminContext, MAX_BULK_BODY, readJson } from './common.js'

export function sessionRoutes(app: AdminApp, ctx: AdminContext): void {
  const { deps, now, room } = ctx
  /** Ends a visitor's session in every line of the room (its own, its separate lane's): whether one was active. */
  async function endInEveryLine(room: RoomSettings, visitor: string): Promise<boolean> {
    const ended = await Promise.all(lineIds(room).map((line) => deps.queue.endSession(line, visitor, deps.clock?.now())))
    return ended.some(Boolean)
  }

  app.post('/api/rooms/:id/sessions/end-all', async (c) => {
    const r = await room(c)
    // Every line of the room: its own, and its separate lane's (core/access.ts).
    const counts = await Promise.all(lineIds(r.settings).map((line) => deps.queue.endAllSessions(line, deps.clock?.now())))
    const ended = counts.reduce((a, b) => a + b, 0)
    await deps.audit.append({
      at: new Date(now()).toISOString(),
      who: c.get('who'),
      action: 'sessions.end-all',
      room: r.settings.id,
      before: null,
      after: { ended },
    })
    return c.json({ ended })
  })

  // Ends many sessions in one request, with one audit entry (so a clean-up is one line, not 1,000).
  app.post('/api/rooms/:id/sessions/end', async (c) => {
    const r = await room(c)
    const { visitors } = readBody<{ visitors: string[] }>(BULK_END_BODY, await readJson(c, MAX_BULK_BODY), 'ERR_BAD_REQUEST')
    const ids = [...new Set(visitors)]
    const endedIds: string[] = []
    // A few at a time: each end is one store call.
    for (let i = 0; i < ids.length; i += 50) {
      const batch = ids.slice(i, i + 50)
      const results = await Promise.all(batch.map((v) => endInEveryLine(r.settings, v)))
      batch.forEach((v, j) => {
        if (results[j]) endedIds.push(v)
      })
    }
    await deps.audit.append({
      at: new Date(now()).toISOString(),
      who: c.get('who'),
      action: 'sessions.end',
      room: r.settings.id,
      before: { visitors: ids },
      after: { ended: endedIds.length, endedVisitors: endedIds },
    })
    return c.json({ requested: ids.length, ended: endedIds.length, endedVisitors: endedIds })
  })

  app.post('/api/rooms/:id/sessions/:visitor/end', async (c) => {
    const r = await room(c)
    const visitor = c.req.param('visitor')
    if (!VISITOR_ID.test(visitor)) throw new AnteroomError('ERR_BAD_REQUEST', 'visitor: not a visitor id', { field: 'visitor' })
    const ended = await endInEveryLine(r.settings, visitor)
    await deps.audit.append({
      at: new Date(now()).toISOString(),
      who: c.get('who'),
      action: 'session.end',
      room: r.settings.id,
      before: { visitor },
      after: { ended },
    })
    return c.json({ ended })
  })

  // An ended visitor gets no place in line until an admin lets them back: then they join at the back.
  app.post('/api/rooms/:id/sessions/:visitor/allow', async (c) => {
    const r = await room(c)
    const visitor = c.req.param('visitor')
    if (!VISITOR_ID.test(visitor)) throw new AnteroomError('ERR_BAD_REQUEST', 'visitor: not a visitor id', { field: 'visitor' })
    const allowed = (await Promise.all(lineIds(r.settings).map((line) => deps.queue.allowAgain(line, visitor)))).some(Boolean)
    await deps.audit.append({
      at: new Date(now()).toISOString(),
      who: c.get('who'),
      action: 'session.allow',
      room: r.settings.id,
      before: { visitor },
      after: { allowed },
    })
    return c.json({ allowed })
  })
}

// A room's settings (routes.ts mounts these behind the credential check): the settings' schema, the rooms,
// one room, a change (PATCH merges, PUT replaces; If-Match on the revision read, compare-and-set,
// audited), and pause, resume and close.
import type { Context } from 'hono'
import { AnteroomError } from '../../src/core/errors.js'
import { checkScheduleChange, parseRoomSettings, SETTINGS_SCHEMA } from '../../src/core/settings.js'
import { ETAG } from '../inputs.js'
import { checkTemplateRef } from '../templates.js'
import { type AdminApp, type AdminContext, type Env, etag, readJson, stale } from './common.js'

export function roomRoutes(app: AdminApp, ctx: AdminContext): void {
  const { deps, now, answer, room, commit } = ctx
  // The room settings' schema (core/settings.ts): the admin UI builds its settings form from it.
  app.get('/api/settings-schema', (c) => c.json(SETTINGS_SCHEMA))

  app.get('/api/rooms', async (c) => {
    const rooms = await deps.settings.list()
    return c.json({ rooms: rooms.map((r) => ({ settings: r.settings, etag: etag(r.rev) })) })
  })

  app.get('/api/rooms/:id', async (c) => {
    const r = await room(c)
    c.header('etag', etag(r.rev))
    return c.json({ settings: r.settings, etag: etag(r.rev) })
  })

  const update = (merge: boolean) => async (c: Context<Env>) => {
    const current = await room(c)
    const ifMatch = c.req.header('if-match')
    if (ifMatch === undefined)
      throw new AnteroomError('ERR_IF_MATCH_REQUIRED', 'Send If-Match with the ETag you read, so that changes never overwrite each other')
    const body = await readJson(c)
    if ('id' in body && body.id !== current.settings.id)
      throw new AnteroomError('ERR_SETTINGS_INVALID', 'id: cannot be changed', { field: 'id' })
    // An invalid value throws ERR_SETTINGS_INVALID naming the field: a 400.
    const next = parseRoomSettings(merge ? { ...current.settings, ...body, id: current.settings.id } : { ...body, id: current.settings.id })
    checkScheduleChange(current.settings, next, now())
    deps.checkSettings?.(next, current.settings)
    if (deps.templates !== undefined) await checkTemplateRef(deps.templates.store, next, current.settings)
    const expected = ETAG.exec(ifMatch)?.[1]
    if (expected === undefined || Number(expected) !== current.rev) {
      c.header('etag', etag(current.rev))
      return answer(c, stale(current))
    }
    return commit(c, 'settings.update', current, next)
  }
  app.patch('/api/rooms/:id', update(true))
  app.put('/api/rooms/:id', update(false))

  for (const [action, mode] of [
    ['pause', 'paused'],
    ['resume', 'fifo'],
    ['close', 'closed'],
  ] as const) {
    app.post(`/api/rooms/:id/${action}`, async (c) => {
      // Actions apply to whatever the settings are now, retrying if another change lands between.
      for (let attempt = 0; ; attempt++) {
        const current = await room(c)
        const res = await commit(c, `room.${action}`, current, { ...current.settings, mode })
        if (res.status !== 412 || attempt >= 3) return res
      }
    })
  }
}

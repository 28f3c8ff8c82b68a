// What the admin API's route groups (admin/routes/*.ts) share: the app's variables (who is signed in,
// and how), a JSON body read within a size, the ETag of a revision, and one context a group is given
// (the clock, the log, the error answer, the room a request names, and a change written and audited).
import type { Context, Hono } from 'hono'
import { AnteroomError } from '../../src/core/errors.js'
import type { RoomSettings } from '../../src/core/settings.js'
import { renderError } from '../../src/http/errors.js'
import type { VersionedRoom } from '../../src/ports/settings-store.js'
import type { AdminDeps } from '../routes.js'

/** The admin API's variables: who is signed in, and whether by the UI's cookie. */
export type Env = { Variables: { who: string; viaCookie: boolean } }
export type AdminApp = Hono<Env>

export const MAX_BODY = 16_384
/** A bulk end's body: MAX_BULK visitor ids of up to 64 characters (inputs.ts). */
export const MAX_BULK_BODY = 80_000
export const NO_STORE = 'no-store'
export const etag = (rev: number) => `"rev-${rev}"`

/** A JSON object body of at most `max` characters; anything else is refused (ERR_BODY, ERR_BODY_TOO_LARGE). */
export async function readJson(c: Context, max = MAX_BODY): Promise<Record<string, unknown>> {
  const text = await c.req.text()
  if (text.length > max) throw new AnteroomError('ERR_BODY_TOO_LARGE', `The body is larger than ${max} bytes`)
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new AnteroomError('ERR_BODY', 'The body must be a JSON object')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AnteroomError('ERR_BODY', 'The body must be a JSON object')
  return body as Record<string, unknown>
}

/** A write from a revision that is no longer current: the answer carries the current settings and their ETag. */
export function stale(current: VersionedRoom | undefined): AnteroomError {
  return new AnteroomError('ERR_STALE', 'Someone else changed this room first; here are the current settings', {
    extra: { current: current?.settings, etag: current ? etag(current.rev) : undefined },
  })
}

/** What every route group is given (createAdminRoutes makes one). */
export interface AdminContext {
  deps: AdminDeps
  now: () => number
  log: (event: string, fields: Record<string, unknown>) => void
  requestId: (c: Context) => string | undefined
  /** Every error of the admin API, thrown or returned, is rendered here (src/http/errors.ts). */
  answer: (c: Context, err: unknown) => Response
  /** The room the request's :id names; ERR_NOT_FOUND when there is none. */
  room: (c: Context<Env>) => Promise<VersionedRoom>
  /** Writes a change made from the current revision, audits it, and refreshes this edge at once. */
  commit: (c: Context<Env>, action: string, before: VersionedRoom, after: RoomSettings) => Promise<Response>
}

export function adminContext(deps: AdminDeps): AdminContext {
  const now = () => deps.clock?.now() ?? Date.now()
  const log = deps.log ?? (() => {})
  const requestId = (c: Context) => deps.requestId?.(c)
  const answer = (c: Context, err: unknown) =>
    renderError(c, err, { json: true, log: (fields) => log('admin_error', { ...fields, requestId: requestId(c) }) })

  async function room(c: Context<Env>): Promise<VersionedRoom> {
    const found = await deps.settings.get(c.req.param('id') ?? '')
    if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'id' })
    return found
  }

  async function commit(c: Context<Env>, action: string, before: VersionedRoom, after: RoomSettings): Promise<Response> {
    const result = await deps.settings.replace(after, before.rev)
    if (!result.ok) {
      const current = result.current
      if (current) c.header('etag', etag(current.rev))
      return answer(c, stale(current))
    }
    await deps.audit.append({
      at: new Date(now()).toISOString(),
      who: c.get('who'),
      action,
      room: after.id,
      before: before.settings,
      after,
    })
    await deps.rooms.reload()
    c.header('etag', etag(result.rev))
    return c.json({ settings: after, etag: etag(result.rev) })
  }

  return { deps, now, log, requestId, answer, room, commit }
}

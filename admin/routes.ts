// The admin API (/_anteroom/api/...) and UI (/_anteroom/admin): event managers read and change
// room settings live, watch the numbers, and pause, close or clear a room. Every route needs
// credentials; every change is validated, compare-and-set on the room's revision, and audited.
// Failed sign-ins and wrong bearer tokens are throttled per client address and account (throttle.ts).
//
// One module a group under admin/routes/: sign-in (the UI, signing in and out, the credential check),
// rooms (settings and actions), sessions (ending and allowing visitors), watch (numbers, history,
// reports, audit); common.ts holds what they share. This module composes them, in this order.
import type { Context } from 'hono'
import { Hono } from 'hono'
import { AnteroomError } from '../src/core/errors.js'
import type { RoomSettings } from '../src/core/settings.js'
import type { AccessDeps } from '../src/http/access.js'
import type { Guards } from '../src/http/guards.js'
import type { Refusals } from '../src/http/refusals.js'
import type { AnalyticsStore } from '../src/ports/analytics-store.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { Clock } from '../src/ports/clock.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import type { SettingsStore } from '../src/ports/settings-store.js'
import type { RoomDirectory } from '../src/rooms/directory.js'
import { accessRoutes } from './access.js'
import type { AdminAuth } from './auth.js'
import { bypassRoutes } from './bypass.js'
import { adminContext, type Env, readJson } from './routes/common.js'
import { roomRoutes } from './routes/rooms.js'
import { sessionRoutes } from './routes/sessions.js'
import { signInRoutes } from './routes/sign-in.js'
import { watchRoutes } from './routes/watch.js'
import { type TemplateDeps, templateRoutes } from './templates.js'

export interface AdminAssets {
  html: string
  css: string
  /**
   * The UI's ES modules by file name: app.js (which index.html loads), and the modules it imports
   * (settings.js, report.js, ...). Each is served at /_anteroom/admin/<name>; a new module is a file in
   * admin/ui/ (and one import line in worker/bundled.ts, which the Worker needs to carry it).
   */
  modules: Readonly<Record<string, string>>
}

export interface AdminDeps {
  auth: AdminAuth
  settings: SettingsStore
  queue: QueueStore
  audit: AuditLog
  rooms: RoomDirectory
  /** The refused-joins count, shown with the bot defences in the stats. */
  refusals: Refusals
  /** Each room's minutes: the post-event report (report.ts). */
  analytics: Pick<AnalyticsStore, 'minutes'>
  /** Bypass rules and the human check (bypass.ts): unset, the API has no bypass routes. */
  guards?: Guards
  /** Settings against this deployment (a rule's secret, a human check's provider), given the settings before; throws naming the field. */
  checkSettings?: (room: RoomSettings, before: RoomSettings) => void
  /** Access codes and invite links (access.ts); unset, the API has no access routes. */
  access?: AccessDeps
  /** Page templates and previews (templates.ts); unset, the API has no template routes and rooms name none. */
  templates?: TemplateDeps
  assets: AdminAssets
  clock?: Clock
  /** Whether the visitor came over TLS (cookies get Secure). */
  secure?: (c: Context) => boolean
  /** The last report of `npm run simulate`, if there is one. */
  lastReport?: () => Promise<string | undefined>
  /** The client address (Node socket, cf-connecting-ip): failed sign-ins are counted per address. */
  clientIp?: (c: Context) => string | undefined
  /** Structured log lines (failed sign-ins); never given a token. */
  log?: (event: string, fields: Record<string, unknown>) => void
  /** The request's id in log lines (src/http/request-id.ts). */
  requestId?: (c: Context) => string
}

export function createAdminRoutes(deps: AdminDeps): Hono<Env> {
  const app = new Hono<Env>()
  const ctx = adminContext(deps)
  const { now, answer } = ctx
  signInRoutes(app, ctx)
  roomRoutes(app, ctx)
  sessionRoutes(app, ctx)
  watchRoutes(app, ctx)

  // Access codes and invite links of a room (access.ts).
  if (deps.access !== undefined)
    accessRoutes(app, {
      access: deps.access,
      settings: deps.settings,
      queue: deps.queue,
      audit: deps.audit,
      now,
      storeNow: () => deps.clock?.now(),
      readJson: (c) => readJson(c),
    })

  // A room's bypass rules and human check (bypass.ts).
  if (deps.guards !== undefined) {
    const guards = deps.guards
    bypassRoutes(app, { settings: deps.settings, audit: deps.audit, rooms: deps.rooms, guards, now, readJson: (c) => readJson(c) })
  }

  // Page templates and previews (templates.ts).
  if (deps.templates !== undefined)
    templateRoutes(app, {
      templates: deps.templates,
      settings: deps.settings,
      audit: deps.audit,
      rooms: deps.rooms,
      now,
      readJson: (c) => readJson(c),
    })

  app.all('/api/*', () => {
    throw new AnteroomError('ERR_NOT_FOUND', 'No such admin endpoint')
  })

  app.onError((err, c) => answer(c, err))

  return app
}

// The admin API (/_anteroom/api/...) and UI (/_anteroom/admin): event managers read and change
// room settings live, watch the numbers, and pause, close or clear a room. Every route needs
// credentials; every change is validated, compare-and-set on the room's revision, and audited.
// Failed sign-ins and wrong bearer tokens are throttled per client address and account (throttle.ts).
import { type Context, Hono } from 'hono'
import { lineIds } from '../src/core/access.js'
import { readBody } from '../src/core/body-schema.js'
import { safeEqual } from '../src/core/compare.js'
import { AnteroomError, isAnteroomError } from '../src/core/errors.js'
import { checkScheduleChange, parseRoomSettings, type RoomSettings, SETTINGS_SCHEMA } from '../src/core/settings.js'
import { type StockView, stockState, stockStop } from '../src/core/stock.js'
import type { AccessDeps } from '../src/http/access.js'
import { edgeApiDocument } from '../src/http/api-description.js'
import { readCookie, serializeCookie } from '../src/http/cookies.js'
import { renderError } from '../src/http/errors.js'
import type { Guards } from '../src/http/guards.js'
import type { Refusals } from '../src/http/refusals.js'
import type { AnalyticsStore } from '../src/ports/analytics-store.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { Clock } from '../src/ports/clock.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import type { SettingsStore, VersionedRoom } from '../src/ports/settings-store.js'
import type { RoomDirectory } from '../src/rooms/directory.js'
import { accessRoutes } from './access.js'
import { ADMIN_COOKIE, type AdminAuth } from './auth.js'
import { bypassRoutes } from './bypass.js'
import { ADMIN_MODULE, AUDIT_KINDS, BULK_END_BODY, ETAG, SIGN_IN_BODY, VISITOR_ID } from './inputs.js'
import { serveReport } from './report.js'
import { checkTemplateRef, type TemplateDeps, templateRoutes } from './templates.js'
import { accountKey, addressKey, describeWait, SignInThrottle } from './throttle.js'

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

type Env = { Variables: { who: string; viaCookie: boolean } }

const MAX_BODY = 16_384
/** A bulk end's body: MAX_BULK visitor ids of up to 64 characters (inputs.ts). */
const MAX_BULK_BODY = 80_000
const NO_STORE = 'no-store'
const etag = (rev: number) => `"rev-${rev}"`

/**
 * The room's bot defences as the stats show them: the proof-of-work difficulty (0, off, where that
 * setting does not exist), the cap on new places per network, and the joins refused by reason.
 */
function botDefence(settings: RoomSettings, refused: Awaited<ReturnType<Refusals['counts']>>) {
  const pow = (settings as Partial<Record<string, unknown>>).powDifficulty
  return {
    powDifficulty: typeof pow === 'number' ? pow : 0,
    joinsPerNetworkPerMinute: settings.joinsPerNetworkPerMinute,
    networkPrefixIPv4: settings.networkPrefixIPv4,
    networkPrefixIPv6: settings.networkPrefixIPv6,
    refused: { total: refused.total, lastMinute: refused.lastMinute },
  }
}

/**
 * A linked room's event stock as this edge saw it at its last reload (once a second), and whether it
 * stops admissions now (core/stock.ts); null for a room that is not linked to an event.
 */
function stockStats(settings: RoomSettings, view: StockView | undefined, now: number) {
  if (settings.event === null) return null
  const counts = view?.event === settings.event ? view.counts : undefined
  return {
    event: settings.event,
    state: stockState(counts),
    stopsAdmissions: stockStop(settings, view, now) !== undefined,
    free: counts?.free ?? null,
    held: counts?.held ?? null,
    sold: counts?.sold ?? null,
    reconciledAt: counts?.reconciledAt ?? null,
    seenAt: view?.at ?? null,
  }
}

/** A JSON object body of at most `max` characters; anything else is refused (ERR_BODY, ERR_BODY_TOO_LARGE). */
async function readJson(c: Context, max = MAX_BODY): Promise<Record<string, unknown>> {
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
function stale(current: VersionedRoom | undefined): AnteroomError {
  return new AnteroomError('ERR_STALE', 'Someone else changed this room first; here are the current settings', {
    extra: { current: current?.settings, etag: current ? etag(current.rev) : undefined },
  })
}

export function createAdminRoutes(deps: AdminDeps): Hono<Env> {
  const app = new Hono<Env>()
  const now = () => deps.clock?.now() ?? Date.now()
  const log = deps.log ?? (() => {})
  const throttle = new SignInThrottle(deps.auth.sessions)
  const address = (c: Context) => deps.clientIp?.(c) ?? 'unknown'
  /** Every error of the admin API, thrown or returned, is rendered here (src/http/errors.ts). */
  const requestId = (c: Context) => deps.requestId?.(c)
  const answer = (c: Context, err: unknown) =>
    renderError(c, err, { json: true, log: (fields) => log('admin_error', { ...fields, requestId: requestId(c) }) })

  /** 429 while a client address or account is locked; `lead` says why, when this attempt was checked. */
  function tooMany(lockedMs: number, lead = ''): AnteroomError {
    const seconds = Math.max(1, Math.ceil(lockedMs / 1000))
    return new AnteroomError('ERR_TOO_MANY_ATTEMPTS', `${lead}Too many failed sign-ins: try again in ${describeWait(lockedMs)}.`, {
      retryAfterSeconds: seconds,
      extra: { retryAfterSeconds: seconds },
    })
  }

  /** Counts a failed credential check and logs it (the address, the account named, the counts; never the token). */
  async function failed(c: Context, via: 'login' | 'bearer', keys: string[], account: string | undefined) {
    const fields = { via, client: address(c), account, requestId: requestId(c) }
    let result: Awaited<ReturnType<SignInThrottle['fail']>>
    try {
      result = await throttle.fail(keys, now())
    } catch (err) {
      log('admin_signin_failed', { ...fields, failures: undefined, error: 'the store did not count it' })
      throw err
    }
    log('admin_signin_failed', {
      ...fields,
      failures: result.counts[0],
      accountFailures: account === undefined ? undefined : result.counts[1],
      lockedSeconds: result.lockedMs > 0 ? Math.ceil(result.lockedMs / 1000) : undefined,
    })
    return result
  }
  const uiHeaders = {
    'content-security-policy':
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': NO_STORE,
  }

  // --- UI and sign-in: no credentials needed to load the page and sign in ---------------------
  app.get('/admin', (c) => c.html(deps.assets.html, 200, uiHeaders))
  app.get('/admin/style.css', (c) => c.body(deps.assets.css, 200, { ...uiHeaders, 'content-type': 'text/css; charset=utf-8' }))
  // Each ES module of the UI (AdminAssets.modules), after the fixed files above.
  app.get('/admin/:module', (c) => {
    const name = c.req.param('module')
    const text = ADMIN_MODULE.test(name) && Object.hasOwn(deps.assets.modules, name) ? deps.assets.modules[name] : undefined
    if (text === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such admin UI file')
    return c.body(text, 200, { ...uiHeaders, 'content-type': 'text/javascript; charset=utf-8' })
  })

  app.get('/admin/', (c) => c.redirect('/_anteroom/admin'))

  app.post('/admin/login', async (c) => {
    // JSON only: a plain form on another site cannot post here (and sign a browser in as someone else).
    if (!(c.req.header('content-type') ?? '').startsWith('application/json')) {
      throw new AnteroomError('ERR_UNSUPPORTED_MEDIA_TYPE', 'Sign in with a JSON body {"token": "..."}')
    }
    const body = readBody<{ name?: string | null; token?: unknown }>(SIGN_IN_BODY, await readJson(c), 'ERR_BAD_REQUEST')
    // A name of null or '' names no account (SIGN_IN_BODY).
    const name = body.name || undefined
    // Counted against the address, and against the account when one is named. Without a name only
    // the address counts: locking an account's name out does not lock its owner out.
    const keys = [addressKey(address(c)), ...(name === undefined ? [] : [accountKey(name)])]
    const state = await throttle.check(keys, now())
    if (state.lockedMs > 0) throw tooMany(state.lockedMs)
    let who = deps.auth.byToken(typeof body.token === 'string' ? body.token : undefined)
    if (name !== undefined && who !== name) who = undefined
    if (who === undefined) {
      const result = await failed(c, 'login', keys, name)
      const invalid = name === undefined ? 'That admin token is not valid' : 'That name and admin token do not match'
      if (result.lockedMs > 0) throw tooMany(result.lockedMs, `${invalid}. `)
      throw new AnteroomError('ERR_UNAUTHORIZED', invalid)
    }
    await throttle.clear([addressKey(address(c)), accountKey(who)])
    const session = await deps.auth.newSession(who, now())
    const cookie = serializeCookie(ADMIN_COOKIE, session, { maxAgeSeconds: 8 * 3600, secure: deps.secure?.(c) ?? false })
    c.header('set-cookie', cookie.replace('SameSite=Lax', 'SameSite=Strict').replace('Path=/', 'Path=/_anteroom'))
    return c.json({ who, csrf: await deps.auth.csrfFor(session) })
  })

  // Sign-out comes before the credential check below, so that it works (on this browser at least)
  // when the store cannot say whether the session was already ended.
  app.post('/api/logout', async (c) => {
    const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
    if (session !== undefined) {
      const csrf = c.req.header('x-csrf-token')
      if (csrf === undefined || !safeEqual(csrf, await deps.auth.csrfFor(session))) {
        throw new AnteroomError('ERR_CSRF', 'Signing out from the admin UI needs its X-CSRF-Token header')
      }
    }
    // The cookie goes whatever happens next; the session is refused by every edge from now on.
    c.header('set-cookie', `${ADMIN_COOKIE}=; Path=/_anteroom; Max-Age=0; HttpOnly; SameSite=Strict`)
    try {
      await deps.auth.endSession(session, now())
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      throw new AnteroomError(
        'ERR_STORE_UNAVAILABLE',
        'Signed out in this browser only: the store did not answer, so the session could not be ended everywhere',
        { expose: true, cause: err },
      )
    }
    return c.json({ ok: true })
  })

  // The API's description (OpenAPI 3.1): public, like the source it is generated from.
  app.get('/api/openapi.json', (c) => c.json(edgeApiDocument(), 200, { 'cache-control': NO_STORE }))

  // --- Everything else needs a bearer token, or a session cookie plus CSRF on changes ----------
  app.use('/api/*', async (c, next) => {
    const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1]
    let who: string | undefined
    if (bearer !== undefined) {
      // A bearer token is a sign-in attempt: refused unchecked while the address is locked.
      const keys = [addressKey(address(c))]
      const state = await throttle.check(keys, now())
      if (state.lockedMs > 0) throw tooMany(state.lockedMs)
      who = deps.auth.byToken(bearer)
      if (who === undefined) {
        const result = await failed(c, 'bearer', keys, undefined)
        if (result.lockedMs > 0) throw tooMany(result.lockedMs, 'That admin token is not valid. ')
      } else if (state.anyFailures) {
        await throttle.clear([...keys, accountKey(who)])
      }
    }
    let viaCookie = false
    if (who === undefined) {
      const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
      who = await deps.auth.bySession(session, now())
      viaCookie = who !== undefined
      if (viaCookie && c.req.method !== 'GET' && c.req.method !== 'HEAD') {
        const csrf = c.req.header('x-csrf-token')
        if (csrf === undefined || !safeEqual(csrf, await deps.auth.csrfFor(session as string))) {
          throw new AnteroomError('ERR_CSRF', 'A change from the admin UI needs its X-CSRF-Token header')
        }
      }
    }
    if (who === undefined) {
      c.header('www-authenticate', 'Bearer realm="anteroom-admin"')
      throw new AnteroomError('ERR_UNAUTHORIZED', 'Admin credentials are required')
    }
    c.set('who', who)
    c.set('viaCookie', viaCookie)
    c.header('cache-control', NO_STORE)
    await next()
  })

  app.get('/api/session', async (c) => {
    const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
    return c.json({ who: c.get('who'), csrf: c.get('viaCookie') && session ? await deps.auth.csrfFor(session) : null })
  })

  async function room(c: Context<Env>): Promise<VersionedRoom> {
    const found = await deps.settings.get(c.req.param('id') ?? '')
    if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'id' })
    return found
  }

  /** Writes a change made from the current revision, audits it, and refreshes this edge at once. */
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

  app.get('/api/rooms/:id/stats', async (c) => {
    const r = await room(c)
    let store: 'up' | 'down' = 'up'
    try {
      const [s, refused] = await Promise.all([deps.queue.stats(r.settings.id, deps.clock?.now()), deps.refusals.counts(r.settings.id)])
      return c.json({
        room: r.settings.id,
        mode: r.settings.mode,
        waiting: s.waiting,
        active: s.active,
        admittedLastMinute: s.admittedLastMinute,
        ratePerMinute: s.admittedLastMinute,
        // The wait of the last in line, as this edge estimates it (core/eta.ts), in whole seconds.
        etaBackOfLineSeconds:
          s.waiting === 0
            ? 0
            : r.settings.mode === 'fifo'
              ? (deps.rooms.estimate(
                  r.settings,
                  { arrival: s.now * 1000, position: s.waiting, waiting: s.waiting, admittedLastMinute: s.admittedLastMinute, now: s.now },
                  false,
                )?.seconds ?? null)
              : null,
        abandonedLastMinute: s.abandonedLastMinute,
        botDefence: botDefence(r.settings, refused),
        stock: stockStats(r.settings, deps.rooms.stock(r.settings.id), now()),
        store,
        at: s.now,
      })
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      store = 'down'
      return c.json(
        { room: r.settings.id, mode: r.settings.mode, stock: stockStats(r.settings, deps.rooms.stock(r.settings.id), now()), store },
        503,
      )
    }
  })

  app.get('/api/rooms/:id/history', async (c) => {
    const r = await room(c)
    return c.json({ room: r.settings.id, samples: await deps.queue.history(r.settings.id) })
  })

  app.get('/api/rooms/:id/report', async (c) => serveReport(c, deps.analytics, (await room(c)).settings.id, now()))

  app.get('/api/report', async (c) => {
    const html = await deps.lastReport?.()
    if (html === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No simulation report yet: run `npm run simulate`')
    // The report is static HTML with inline styles and SVG; it runs no script.
    return c.html(html, 200, {
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'",
      'cache-control': NO_STORE,
    })
  })

  app.get('/api/audit', async (c) => {
    const limit = Math.min(1000, Math.max(1, Number(c.req.query('limit') ?? 100) || 100))
    const kind = c.req.query('kind')
    if (kind !== undefined && !(AUDIT_KINDS as readonly string[]).includes(kind))
      throw new AnteroomError('ERR_BAD_REQUEST', 'kind: must be "changes" or "actions"', { field: 'kind' })
    return c.json({ entries: await deps.audit.list(limit, { kind: kind as (typeof AUDIT_KINDS)[number] | undefined, now: now() }) })
  })

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

// createEdgeApp: the waiting room as a Hono app. It speaks only the Fetch API, so the same app runs
// on Node and as a Worker; entry points hand it concrete stores, tokens and an origin.
import { type Context, Hono } from 'hono'
import type { AdmissionClaims, AdmissionTokens } from '../core/admission-token.js'
import { AnteroomError, isAnteroomError } from '../core/errors.js'
import { etaSeconds } from '../core/eta.js'
import { canonicalPath, isReserved } from '../core/path.js'
import { newVisitorId, type QueueTokens } from '../core/queue-token.js'
import { canonicalHost, hostServed, matchRoom } from '../core/rooms.js'
import { admissionLimits, ROOM_ID, type RoomSettings } from '../core/settings.js'
import type { Clock } from '../ports/clock.js'
import type { Origin, OriginResponse } from '../ports/origin.js'
import type { PollResult, QueueStore } from '../ports/queue-store.js'
import { limitedBody } from './body.js'
import { admissionCookieName, JS_COOKIE, queueCookieName, readCookie, serializeCookie } from './cookies.js'
import { renderError } from './errors.js'
import { requestHeadersForOrigin, responseHeadersForVisitor } from './forward-headers.js'
import { POLL_SCRIPT, type QueueView, queuePage } from './pages.js'
import type { RoomDirectory } from './room-directory.js'

export interface EdgeDeps {
  queue: QueueStore
  rooms: RoomDirectory
  queueTokens: QueueTokens
  admissionTokens: AdmissionTokens
  origin: Origin
  /** Tests pass a manual clock; it then also drives the store. Production leaves it out. */
  clock?: Clock
  /** The client address, from the runtime (Node socket, cf-connecting-ip). */
  clientIp?: (c: Context) => string | undefined
  /** The scheme the visitor really used, from the runtime (TLS socket); never from the request line. */
  scheme?: (c: Context) => 'http' | 'https'
  /** Mark cookies Secure even on plain HTTP (behind a TLS-terminating proxy). */
  secureCookies?: boolean
  /** The largest request body passed to the origin, bytes (1 MiB when unset); larger ones get 413. */
  maxBodyBytes?: number
  log?: (event: string, fields: Record<string, unknown>) => void
  /** The admin API and UI, mounted under /_anteroom (see admin/routes.ts). */
  // biome-ignore lint/suspicious/noExplicitAny: any Hono sub-app with its own variables
  admin?: Hono<any>
}

export interface StatusBody {
  room: string
  state: 'queued' | 'admitted' | 'paused' | 'closed' | 'busy'
  position: number | null
  ahead: number | null
  waiting: number | null
  etaSeconds: number | null
  refreshSeconds: number
}

/** What a poll decided: a page or JSON for the visitor, or an admission to act on. */
type Decision =
  | { kind: 'wait'; view: QueueView; status: number; cookies: string[] }
  | { kind: 'admit'; token: string; cookies: string[]; status: StatusBody }
  | { kind: 'open'; token: string; cookies: string[] }

const NO_STORE = 'no-store'

async function sha256Base64(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  let s = ''
  for (const b of new Uint8Array(digest)) s += String.fromCharCode(b)
  return btoa(s)
}

export function createEdgeApp(deps: EdgeDeps): Hono {
  const app = new Hono()
  const edgeNow = () => deps.clock?.now() ?? Date.now()
  const storeNow = () => deps.clock?.now()
  const log = deps.log ?? (() => {})
  const scriptHash = sha256Base64(POLL_SCRIPT)
  const maxBodyBytes = deps.maxBodyBytes ?? 1024 * 1024
  const tooLarge = () => new AnteroomError('ERR_BODY_TOO_LARGE', `The request body is larger than ${maxBodyBytes} bytes.`)

  /** What the edge needs to know about a request, worked out once. */
  interface Incoming {
    url: URL
    proto: 'http' | 'https'
    /** Cookies get Secure. */
    secure: boolean
    /** Canonical host, for room matching. */
    host: string
    /** The canonical path in lower case: what rooms are matched on (core/path.ts). */
    pathKey: string
    /** The path and query sent to the origin: the canonical path that rooms were matched against. */
    originPath: string
    /** The Cookie header, read once for the queue, admission and script cookies. */
    cookie: string | null
  }

  function incoming(c: Context): Incoming {
    const url = new URL(c.req.url)
    const path = canonicalPath(url.pathname)
    if (!path.ok) throw new AnteroomError('ERR_BAD_PATH', `This address cannot be served: ${path.problem}.`, { field: 'path' })
    // Two Host headers reach the app joined by a comma; an origin might read either one.
    if (c.req.header('host')?.includes(',')) throw new AnteroomError('ERR_BAD_REQUEST', 'The request has more than one Host header.')
    const proto = deps.scheme?.(c) ?? 'http'
    return {
      url,
      proto,
      secure: deps.secureCookies === true || proto === 'https',
      host: canonicalHost(url.host),
      pathKey: path.key,
      originPath: path.path + url.search,
      cookie: c.req.header('cookie') ?? null,
    }
  }

  /** A status with no place in line: closed, busy. */
  function noPlace(room: RoomSettings, state: 'closed' | 'busy'): StatusBody {
    return { room: room.id, state, position: null, ahead: null, waiting: null, etaSeconds: null, refreshSeconds: room.refreshSeconds }
  }

  function admittedStatus(room: RoomSettings): StatusBody {
    return { room: room.id, state: 'admitted', position: 0, ahead: 0, waiting: null, etaSeconds: 0, refreshSeconds: room.refreshSeconds }
  }

  function statusOf(room: RoomSettings, result: PollResult): StatusBody {
    if (result.state === 'admitted') {
      return admittedStatus(room)
    }
    return {
      room: room.id,
      state: result.state,
      position: result.position,
      ahead: result.position - 1,
      waiting: result.waiting,
      etaSeconds: result.state === 'paused' ? null : etaSeconds(result.position, result.admittedLastMinute),
      refreshSeconds: room.refreshSeconds,
    }
  }

  function viewOf(room: RoomSettings, s: StatusBody): QueueView {
    return { ...s, state: s.state === 'admitted' ? 'queued' : s.state, title: room.title, message: room.message }
  }

  async function admissionCookie(room: RoomSettings, claims: Omit<AdmissionClaims, 'iat'>, now: number, secure: boolean) {
    const token = await deps.admissionTokens.sign(claims, now)
    const cookie = serializeCookie(admissionCookieName(room.id), token, { maxAgeSeconds: claims.exp - Math.floor(now / 1000), secure })
    return { token, cookie }
  }

  /** A visitor without a valid admission: one store call decides their place or their turn. */
  async function poll(room: RoomSettings, req: Incoming): Promise<Decision> {
    const secure = req.secure
    const now = edgeNow()
    if (room.mode === 'closed') {
      const status = noPlace(room, 'closed')
      return { kind: 'wait', view: viewOf(room, status), status: 200, cookies: [] }
    }
    const ticket = await deps.queueTokens.verify(readCookie(req.cookie, queueCookieName(room.id)), room.id, now)
    const visitor = ticket?.visitor ?? newVisitorId()
    let result: PollResult
    try {
      result = await deps.queue.poll({ room: room.id, visitor, arrival: ticket?.arrival, limits: admissionLimits(room), now: storeNow() })
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      log('store_unavailable', { room: room.id, policy: room.onStoreError })
      if (room.onStoreError === 'open') return openAdmission(room, visitor, ticket?.arrival, now, secure)
      const status = noPlace(room, 'busy')
      return { kind: 'wait', view: viewOf(room, status), status: 503, cookies: [] }
    }
    const status = statusOf(room, result)
    if (result.state === 'admitted') {
      const claims = {
        sub: visitor,
        jti: newVisitorId(),
        room: room.id,
        // Arrival in ms (the store counts in µs so that arrivals never tie).
        arr: Math.floor(result.arrival / 1000),
        exp: Math.floor(result.sessionExpires / 1000),
      }
      const { token, cookie } = await admissionCookie(room, claims, result.now, secure)
      const dropQueue = serializeCookie(queueCookieName(room.id), '', { maxAgeSeconds: 0, secure })
      return { kind: 'admit', token, cookies: [cookie, dropQueue], status }
    }
    const abandonMs = room.abandonAfterSeconds * 1000
    const queueToken = await deps.queueTokens.sign({ room: room.id, visitor, arrival: result.arrival, expires: result.now + abandonMs })
    const cookie = serializeCookie(queueCookieName(room.id), queueToken, { maxAgeSeconds: room.abandonAfterSeconds, secure })
    return { kind: 'wait', view: viewOf(room, status), status: 200, cookies: [cookie] }
  }

  /** An admitted visitor: usually no store call; a renewal once half the session has gone. */
  async function checkAdmission(room: RoomSettings, req: Incoming): Promise<{ token: string; cookies: string[] } | undefined> {
    const now = edgeNow()
    const token = readCookie(req.cookie, admissionCookieName(room.id))
    const claims = await deps.admissionTokens.verify(token, room.id, now)
    if (claims === undefined || token === undefined) return undefined
    const nowSec = now / 1000
    // An open admission is never renewed: once it lapses, the visitor's queue token takes them back in line.
    if (claims.open || nowSec < claims.iat + (claims.exp - claims.iat) / 2) return { token, cookies: [] }
    try {
      const renewed = await deps.queue.renew({
        room: room.id,
        visitor: claims.sub,
        sessionMs: room.sessionDurationSeconds * 1000,
        now: storeNow(),
      })
      if (renewed === undefined) {
        log('session_ended', { room: room.id })
        return undefined
      }
      const next = await admissionCookie(room, { ...claims, exp: Math.floor(renewed.sessionExpires / 1000) }, renewed.now, req.secure)
      return { token: next.token, cookies: [next.cookie] }
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      // Admitted visitors keep working while the store is away: their token still holds.
      return { token, cookies: [] }
    }
  }

  async function forward(
    c: Context,
    req: Incoming,
    room: RoomSettings | undefined,
    admissionToken: string | undefined,
    cookies: string[],
  ): Promise<Response> {
    const body = limitedBody(c.req.raw, maxBodyBytes)
    if (body.tooLarge) throw tooLarge()
    const headers = requestHeadersForOrigin(c.req.raw.headers, {
      clientIp: deps.clientIp?.(c),
      proto: req.proto,
      host: req.url.host,
      admissionToken,
    })
    const method = c.req.method
    let res: OriginResponse
    try {
      res = await deps.origin.forward({
        method,
        path: req.originPath,
        headers,
        body: body.stream,
        signal: body.signal,
      })
    } catch (err) {
      // A visitor admitted on this very request keeps their admission even if the origin failed.
      const out = errorResponse(c, body.overflowed() ? tooLarge() : err)
      for (const cookie of cookies) out.headers.append('set-cookie', cookie)
      return out
    }
    // Statuses a Response cannot carry (1xx) are the origin misbehaving: report it as unreachable.
    if (res.status < 200 || res.status > 599) {
      return errorResponse(c, new AnteroomError('ERR_ORIGIN_UNREACHABLE', `The origin answered with status ${res.status}`))
    }
    return new Response(res.body, { status: res.status, headers: responseHeadersForVisitor(res.headers, cookies, room !== undefined) })
  }

  async function respondWait(req: Incoming, d: Extract<Decision, { kind: 'wait' }>, json: boolean): Promise<Response> {
    // A plain header object: the Node server writes it as it is. A wait sets at most one cookie.
    const headers: Record<string, string> = { 'cache-control': NO_STORE }
    if (d.cookies[0] !== undefined) headers['set-cookie'] = d.cookies[0]
    const { title: _t, message: _m, ...status } = d.view
    if (json) {
      headers['content-type'] = 'application/json; charset=utf-8'
      return new Response(JSON.stringify(status), { status: d.status, headers })
    }
    headers['content-type'] = 'text/html; charset=utf-8'
    headers['content-security-policy'] =
      `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${await scriptHash}'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
    headers['x-content-type-options'] = 'nosniff'
    headers['referrer-policy'] = 'no-referrer'
    if (d.view.state !== 'closed' && readCookie(req.cookie, JS_COOKIE) !== '1') {
      headers.refresh = String(d.view.refreshSeconds)
    }
    if (d.status === 503) headers['retry-after'] = String(d.view.refreshSeconds)
    return new Response(queuePage(d.view), { status: d.status, headers })
  }

  function wantsJson(c: Context): boolean {
    const accept = c.req.header('accept') ?? ''
    return accept.includes('application/json') && !accept.includes('text/html')
  }

  /**
   * onStoreError=open: the room lets traffic through without the store. Each visitor keeps their own
   * identity (the visitor id of their queue token, or a new one), and the token says `open`, so an
   * origin can tell these admissions apart and apply its own policy. It lasts 60 s and is kept in the
   * visitor's cookie, so a visitor costs one signature a minute; the queue token is re-signed to outlast
   * it, so the visitor's place in line is still theirs when the store is back.
   */
  async function openAdmission(
    room: RoomSettings,
    visitor: string,
    arrival: number | undefined,
    now: number,
    secure: boolean,
  ): Promise<Extract<Decision, { kind: 'open' }>> {
    const since = arrival ?? now * 1000
    const claims = {
      sub: visitor,
      jti: newVisitorId(),
      room: room.id,
      arr: Math.floor(since / 1000),
      exp: Math.floor(now / 1000) + 60,
      open: true as const,
    }
    const { token, cookie } = await admissionCookie(room, claims, now, secure)
    const keepMs = 60_000 + room.abandonAfterSeconds * 1000
    const queueToken = await deps.queueTokens.sign({ room: room.id, visitor, arrival: since, expires: now + keepMs })
    const place = serializeCookie(queueCookieName(room.id), queueToken, { maxAgeSeconds: keepMs / 1000, secure })
    return { kind: 'open', token, cookies: [cookie, place] }
  }

  app.get('/.well-known/jwks.json', (c) => {
    c.header('cache-control', 'public, max-age=300')
    return c.json(deps.admissionTokens.jwks())
  })

  app.get('/_anteroom/health', async (c) => {
    const store = await deps.queue.ping()
    c.header('cache-control', NO_STORE)
    return c.json({ ok: store, store: store ? 'up' : 'down' }, store ? 200 : 503)
  })

  app.get('/_anteroom/status', async (c) => {
    const id = c.req.query('room') ?? ''
    const room = ROOM_ID.test(id) ? deps.rooms.get(id) : undefined
    if (room === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'room' })
    const req = incoming(c)
    c.header('cache-control', NO_STORE)
    if (await checkAdmission(room, req)) {
      return c.json(admittedStatus(room))
    }
    const d = await poll(room, req)
    if (d.kind === 'wait') return respondWait(req, d, true)
    if (d.kind === 'admit') {
      for (const cookie of d.cookies) c.header('set-cookie', cookie, { append: true })
      return c.json(d.status)
    }
    const busy = noPlace(room, 'busy')
    return c.json(busy, 503)
  })

  if (deps.admin) app.route('/_anteroom', deps.admin)

  app.all('/_anteroom/*', () => {
    throw new AnteroomError('ERR_NOT_FOUND', 'No such Anteroom endpoint')
  })

  app.all('*', async (c) => {
    const method = c.req.method
    if (method === 'TRACE' || method === 'TRACK') throw new AnteroomError('ERR_METHOD_NOT_ALLOWED', `${method} is not served here.`)
    const req = incoming(c)
    // The edge's own prefix, in any spelling the routes above did not serve, is never the origin's.
    if (isReserved(req.pathKey)) throw new AnteroomError('ERR_NOT_FOUND', 'No such Anteroom endpoint')
    const rooms = deps.rooms.rooms()
    if (!hostServed(rooms, req.host)) throw new AnteroomError('ERR_HOST_NOT_SERVED', 'This site is not served here')
    const room = matchRoom(rooms, req.host, req.pathKey)
    if (room === undefined) return forward(c, req, undefined, undefined, [])
    const admitted = await checkAdmission(room, req)
    if (admitted) return forward(c, req, room, admitted.token, admitted.cookies)
    const d = await poll(room, req)
    if (d.kind === 'wait') return respondWait(req, d, wantsJson(c))
    if (d.kind === 'open') return forward(c, req, room, d.token, d.cookies)
    if (wantsJson(c)) {
      const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': NO_STORE })
      for (const cookie of d.cookies) headers.append('set-cookie', cookie)
      return new Response(JSON.stringify(d.status), { headers })
    }
    return forward(c, req, room, d.token, d.cookies)
  })

  /** The edge's errors: JSON for API callers and under /_anteroom/, the error page for visitors. */
  function errorResponse(c: Context, err: unknown): Response {
    const json = wantsJson(c) || new URL(c.req.url).pathname.startsWith('/_anteroom/')
    return renderError(c, err, { json, log: (fields) => log('error', fields) })
  }

  app.onError((err, c) => errorResponse(c, err))

  return app
}

// createEdgeApp: the waiting room as a Hono app. It speaks only the Fetch API, so the same app runs
// on Node and as a Worker; entry points hand it concrete stores, tokens and an origin. Each route is a
// named step below; a visitor on a protected path goes readIncoming → matchRoom → checkAdmission
// (admission.ts) → visit (visit.ts: one poll, then decideVisit in core/visit.ts) → forward (proxy.ts)
// or waitResponse (responses.ts); errors go to edgeError.
import { type Context, Hono } from 'hono'
import { AnteroomError } from '../core/errors.js'
import { isReserved } from '../core/path.js'
import { hostServed, matchRoom } from '../core/rooms.js'
import { ROOM_ID, type RoomSettings } from '../core/settings.js'
import { admittedStatus } from '../core/visit.js'
import { withoutCode } from './access.js'
import { type AdmissionCheck, checkAdmission, isAdmitted } from './admission.js'
import { bypassRule, hasBypass, serveBypassed } from './bypass.js'
import { drawAnswer } from './draws.js'
import { type EdgeContext, type EdgeDeps, edgeContext } from './edge-context.js'
import { HUMAN_CHECK_SCRIPT_PATH, humanCheckResponse, serveHumanCheckScript } from './human-check-page.js'
import { bearerIn } from './metrics.js'
import { QUEUE_ASSETS } from './pages.js'
import { challengeResponse, POW_WORKER_PATH, serveWorkerScript } from './pow.js'
import { forward } from './proxy.js'
import { type Incoming, readIncoming } from './request.js'
import { admittedJson, edgeError, NO_STORE, queueAsset, seeOther, waitResponse } from './responses.js'
import { cachedRouter } from './route-cache.js'
import { type Answer, visit } from './visit.js'

export type { EdgeDeps } from './edge-context.js'

export function createEdgeApp(deps: EdgeDeps): Hono {
  const edge = edgeContext(deps)
  const app = new Hono({ router: cachedRouter() })
  app.get('/.well-known/jwks.json', (c) => serveJwks(edge, c))
  app.get('/_anteroom/health', (c) => serveHealth(edge, c))
  app.get('/_anteroom/live', serveLive)
  app.get('/_anteroom/ready', (c) => serveReady(edge, c))
  app.get('/_anteroom/metrics', (c) => serveMetrics(edge, c))
  app.get('/_anteroom/status', (c) => serveStatus(edge, c))
  app.get('/_anteroom/draw', (c) => serveDraw(edge, c))
  app.get(POW_WORKER_PATH, serveWorkerScript)
  app.get(HUMAN_CHECK_SCRIPT_PATH, serveHumanCheckScript)
  app.get(QUEUE_ASSETS.css.path, (c) => queueAsset(QUEUE_ASSETS.css, c.req.query('v')))
  app.get(QUEUE_ASSETS.js.path, (c) => queueAsset(QUEUE_ASSETS.js, c.req.query('v')))
  if (deps.admin) app.route('/_anteroom', deps.admin)
  app.all('/_anteroom/*', () => {
    throw new AnteroomError('ERR_NOT_FOUND', 'No such Anteroom endpoint')
  })
  app.all('*', (c) => serveVisitor(edge, c))
  app.onError((err, c) => edgeError(edge, c, err))
  return app
}

/** The public keys origins check admissions with. */
function serveJwks(edge: EdgeContext, c: Context): Response {
  c.header('cache-control', 'public, max-age=300')
  return c.json(edge.deps.admissionTokens.jwks())
}

/** Whether the store answers. */
async function serveHealth(edge: EdgeContext, c: Context): Promise<Response> {
  const store = await edge.deps.queue.ping()
  c.header('cache-control', NO_STORE)
  return c.json({ ok: store, store: store ? 'up' : 'down' }, store ? 200 : 503)
}

/** Liveness: the process answers (no store call): restart it if it does not. */
function serveLive(c: Context): Response {
  c.header('cache-control', NO_STORE)
  return c.json({ live: true })
}

/**
 * Readiness: the store answers, the rooms were read from it at least once, and the signing keys are
 * loaded. 503 says which check failed: take the edge out of rotation (its rooms' onStoreError still
 * applies to whoever reaches it).
 */
async function serveReady(edge: EdgeContext, c: Context): Promise<Response> {
  const store = await edge.deps.queue.ping()
  const rooms = edge.deps.rooms.lastLoaded() !== undefined
  const keys = edge.deps.admissionTokens.jwks().keys.length > 0
  const ready = store && rooms && keys
  c.header('cache-control', NO_STORE)
  return c.json(
    { ready, checks: { store: store ? 'up' : 'down', rooms: rooms ? 'loaded' : 'not loaded', keys: keys ? 'loaded' : 'missing' } },
    ready ? 200 : 503,
  )
}

/** GET /_anteroom/metrics: Prometheus text, for a bearer metrics token or admin token only; never for visitors. */
async function serveMetrics(edge: EdgeContext, c: Context): Promise<Response> {
  const metrics = edge.deps.metrics
  if (metrics === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'Metrics are switched off on this edge (ANTEROOM_METRICS=off)')
  if (!bearerIn(c.req.header('authorization'), metrics.tokens)) {
    c.header('www-authenticate', 'Bearer realm="anteroom-metrics"')
    throw new AnteroomError(
      'ERR_UNAUTHORIZED',
      'Metrics need Authorization: Bearer with the metrics token (ANTEROOM_METRICS_TOKEN) or an admin token',
    )
  }
  const text = await metrics.exporter.text()
  return c.body(text, 200, { 'content-type': metrics.exporter.contentType, 'cache-control': NO_STORE })
}

/** GET /_anteroom/status?room=ID: the visitor's status as JSON (the queue page's script polls it). */
async function serveStatus(edge: EdgeContext, c: Context): Promise<Response> {
  const id = c.req.query('room') ?? ''
  const room = ROOM_ID.test(id) ? edge.deps.rooms.get(id) : undefined
  if (room === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'room' })
  const req = readIncoming(c, edge.deps)
  c.header('cache-control', NO_STORE)
  const check = await checkAdmission(edge, room, req)
  if (isAdmitted(check)) return c.json(admittedStatus(room))
  const answer = await visit(edge, room, req, check?.ended)
  if (answer.kind === 'challenge') return challengeResponse(edge, req, room, answer.status, true)
  if (answer.kind === 'human_check') return humanCheckResponse(req, room, answer.status, true)
  if (answer.kind === 'wait') return waitResponse(edge, req, room, answer, true)
  if (answer.kind === 'admit') {
    for (const cookie of answer.cookies) c.header('set-cookie', cookie, { append: true })
    return c.json(answer.status)
  }
  // An open admission lets the visitor through on a protected path only; here the store is simply away.
  return c.json(answer.status, 503)
}

/** GET /_anteroom/draw?room=ID: a scheduled room's draw, to check (draws.ts). */
async function serveDraw(edge: EdgeContext, c: Context): Promise<Response> {
  const id = c.req.query('room') ?? ''
  const room = ROOM_ID.test(id) ? edge.deps.rooms.get(id) : undefined
  if (room === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'room' })
  const { body, maxAge } = await drawAnswer(edge.deps.draws, edge.deps.queue, room, edge.now(), {
    offset: c.req.query('offset'),
    limit: c.req.query('limit'),
  })
  c.header('cache-control', `public, max-age=${maxAge}`)
  return c.json(body)
}

/**
 * Every other request: to the origin directly, or through the room that protects its path. A waiting
 * visitor's poll goes from the store's answer to the response in one step (no async function waits in
 * between: the poll is the request the edge serves most).
 */
function serveVisitor(edge: EdgeContext, c: Context): Response | Promise<Response> {
  const method = c.req.method
  if (method === 'TRACE' || method === 'TRACK') throw new AnteroomError('ERR_METHOD_NOT_ALLOWED', `${method} is not served here.`)
  const req = readIncoming(c, edge.deps)
  // The edge's own prefix, in any spelling the routes above did not serve, is never the origin's.
  if (isReserved(req.pathKey)) throw new AnteroomError('ERR_NOT_FOUND', 'No such Anteroom endpoint')
  const rooms = edge.deps.rooms.rooms()
  if (!hostServed(rooms, req.host)) throw new AnteroomError('ERR_HOST_NOT_SERVED', 'This site is not served here')
  const room = matchRoom(rooms, req.host, req.pathKey)
  if (room === undefined) return forward(edge, c, req, undefined, undefined)
  // A bypass rule lets the request skip the line (bypass.ts): a room without rules costs this one check.
  if (hasBypass(room)) return afterBypassCheck(edge, c, req, room, bypassRule(edge, room, req))
  return atAdmissionCheck(edge, c, req, room)
}

/** A request of a room with bypass rules: forwarded past the line by the rule that matched, or on as any other. */
function afterBypassCheck(
  edge: EdgeContext,
  c: Context,
  req: Incoming,
  room: RoomSettings,
  rule: ReturnType<typeof bypassRule>,
): Response | Promise<Response> {
  if (rule instanceof Promise) return rule.then((found) => afterBypassCheck(edge, c, req, room, found))
  if (rule !== undefined) return serveBypassed(edge, c, req, room, rule)
  return atAdmissionCheck(edge, c, req, room)
}

/** A request of a room that no bypass rule let through: its admission cookie checked (in this turn when it can be), then on. */
function atAdmissionCheck(edge: EdgeContext, c: Context, req: Incoming, room: RoomSettings): Response | Promise<Response> {
  const pending = checkAdmission(edge, room, req)
  if (pending instanceof Promise) return pending.then((check) => afterAdmissionCheck(edge, c, req, room, check))
  return afterAdmissionCheck(edge, c, req, room, pending)
}

/** A visitor on a protected path, their admission cookie checked: forwarded, or a visit to the line. */
function afterAdmissionCheck(
  edge: EdgeContext,
  c: Context,
  req: Incoming,
  room: RoomSettings,
  check: AdmissionCheck,
): Response | Promise<Response> {
  if (isAdmitted(check)) return forward(edge, c, req, room, check)
  return visit(edge, room, req, check?.ended).then((answer) => visitResponse(edge, c, req, room, answer))
}

/** What a visit answered, as the visitor's response: a challenge, the queue page or JSON, or the request forwarded. */
function visitResponse(edge: EdgeContext, c: Context, req: Incoming, room: RoomSettings, answer: Answer): Response | Promise<Response> {
  if (answer.kind === 'challenge') return challengeResponse(edge, req, room, answer.status, req.json)
  if (answer.kind === 'human_check') return humanCheckResponse(req, room, answer.status, req.json)
  // A browser that brought an access code goes to the URL without it: a reload then redeems nothing.
  if (answer.kind !== 'open' && answer.redeemed && !req.json) return seeOther(withoutCode(req.originPath), answer.cookies)
  if (answer.kind === 'wait') return waitResponse(edge, req, room, answer, req.json)
  if (answer.kind === 'admit' && req.json) return admittedJson(answer.status, answer.cookies)
  return forward(edge, c, req, room, answer)
}

// The OpenAPI documents (src/http/api-description.ts, src/booking/api-description.ts) stay true: they
// are valid OpenAPI 3.1 whose schemas compile in strict JSON Schema 2020-12; every route the edge and
// the origin register is described and every described route is registered; they are served over
// HTTP by a Node edge, by the Worker in workerd and by the origin; real answers of both edges and the
// origin (on a real PostgreSQL server) match their schemas; and the schemas made from the code's own
// (room settings, request bodies) accept and refuse what the code does.
import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { Hono } from 'hono'
import { inspectRoutes } from 'hono/dev'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { BULK_END_BODY, SIGN_IN_BODY } from '../admin/inputs.js'
import { bookingApiDocument } from '../src/booking/api-description.js'
import { holdBody } from '../src/booking/claims.js'
import { type BodyNode, checkBody, type JsonSchema, jsonSchemaOf } from '../src/core/body-schema.js'
import { openApiDocument, type RouteSpec } from '../src/core/openapi.js'
import { parseRoomSettings, ROOM_SETTINGS, type SettingSpec } from '../src/core/settings.js'
import { settingsJsonSchema } from '../src/core/settings-json-schema.js'
import { buildBooking } from '../src/entry/booking.js'
import type { Edge } from '../src/entry/build.js'
import { EDGE_API, edgeApiDocument } from '../src/http/api-description.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freePort } from './support/redis-server.js'
import { type RequestTarget, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { type Served, serveOnFreePort } from './support/serve.js'
import { Visitor } from './support/visitor.js'

type Doc = Record<string, unknown> & { paths: Record<string, Record<string, Operation>> }
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>
}

const TOKEN = 'o'.repeat(32)
const ADMIN = { authorization: `Bearer ${TOKEN}` }

// --- checking answers against a document --------------------------------------------------------

/** Ajv 2020 over a whole document, so that a schema's $refs into components resolve. */
function ajvFor(doc: Doc, id: string, strict: boolean) {
  const ajv = new Ajv2020({ strict, allowUnionTypes: true, allErrors: true })
  ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)))
  // The document's own members, around its schemas: not JSON Schema keywords.
  for (const keyword of ['openapi', 'jsonSchemaDialect', 'info', 'tags', 'paths', 'components']) ajv.addKeyword(keyword)
  // The document is not a schema, but its schemas are found in it by JSON pointer.
  ajv.addSchema({ ...doc, $id: id }, undefined, undefined, false)
  return ajv
}

const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`

class DocumentCheck {
  private readonly ajv
  constructor(
    readonly doc: Doc,
    private readonly id: string,
  ) {
    this.ajv = ajvFor(doc, id, false)
  }

  /** The answer's status is described for the route, its media type too, and a JSON body matches its schema. */
  async answer(method: string, path: string, res: Response): Promise<unknown> {
    const op = this.doc.paths[path]?.[method]
    expect(op, `${method} ${path} is described`).toBeDefined()
    const response = op?.responses[String(res.status)]
    const text = await res.text()
    expect(response, `${method} ${path} describes ${res.status}: ${text.slice(0, 300)}`).toBeDefined()
    const type = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? ''
    const media = Object.keys(response?.content ?? {})
    expect(
      media.map((m) => m.split(';')[0]?.trim()),
      `${method} ${path} ${res.status} describes ${type}`,
    ).toContain(type)
    if (type !== 'application/json') return text
    const body = JSON.parse(text)
    const validate = this.ajv.compile({
      $ref: `${this.id}${pointer('paths', path, method, 'responses', String(res.status), 'content', 'application/json', 'schema')}`,
    })
    expect(validate(body) ? [] : validate.errors, `${method} ${path} ${res.status}: ${text.slice(0, 400)}`).toEqual([])
    return body
  }
}

/** A target that goes over HTTP to wherever the URL says. */
const overHttp: RequestTarget = { request: (url, init) => fetch(url, init) }

/** An app on a loopback port: a free one, or `port` when the other app must know it first. */
const listen = (app: Hono, port?: number): Promise<Served> => serveOnFreePort(app.fetch, { port })

// --- the documents ---------------------------------------------------------------------------------

describe('the documents', () => {
  for (const [name, doc] of [
    ['edge', edgeApiDocument()],
    ['origin', bookingApiDocument()],
  ] as const) {
    it(`the ${name}'s is valid OpenAPI 3.1 in the JSON Schema 2020-12 dialect`, async () => {
      const validator = new Validator()
      const result = await validator.validate(structuredClone(doc) as never)
      expect(result.errors ?? []).toEqual([])
      expect(result.valid).toBe(true)
      expect(validator.version).toBe('3.1')
      expect(doc).toMatchObject({ openapi: '3.1.0', jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema' })
    })

    it(`every schema of the ${name}'s compiles in strict mode (no unknown keyword, no misplaced one)`, () => {
      const d = doc as Doc
      const ajv = ajvFor(d, `urn:anteroom:${name}`, true)
      const at: string[][] = Object.keys((d.components as { schemas: object }).schemas).map((s) => ['components', 'schemas', s])
      for (const [path, item] of Object.entries(d.paths)) {
        for (const [method, op] of Object.entries(item)) {
          const o = op as unknown as Record<string, unknown> & Operation
          for (const [status, r] of Object.entries(o.responses)) {
            for (const type of Object.keys(r.content ?? {})) {
              if (r.content?.[type]?.schema) at.push(['paths', path, method, 'responses', status, 'content', type, 'schema'])
            }
          }
          if (o.requestBody) at.push(['paths', path, method, 'requestBody', 'content', 'application/json', 'schema'])
          for (const [i] of ((o.parameters as unknown[]) ?? []).entries())
            at.push(['paths', path, method, 'parameters', String(i), 'schema'])
        }
      }
      expect(at.length).toBeGreaterThan(20)
      for (const parts of at) expect(() => ajv.compile({ $ref: `urn:anteroom:${name}${pointer(...parts)}` }), parts.join(' ')).not.toThrow()
    })
  }

  it('errors come from the registry: each status lists the codes of that status, each code its body', () => {
    const doc = edgeApiDocument() as Doc
    const patch = doc.paths['/_anteroom/api/rooms/{id}']?.patch as unknown as { responses: Record<string, unknown> }
    expect(Object.keys(patch.responses).sort()).toEqual(['200', '400', '401', '403', '404', '412', '413', '428', '429', '500', '503'])
    expect(JSON.stringify(patch.responses['400'])).toMatch(/ERR_BODY.*ERR_SETTINGS_INVALID/)
    const schemas = (doc.components as { schemas: Record<string, JsonSchema> }).schemas
    expect(schemas.ERR_STALE).toMatchObject({
      properties: {
        error: {
          properties: {
            code: { const: 'ERR_STALE' },
            // A room's settings, or a page template's (admin/templates.ts).
            current: {
              anyOf: expect.arrayContaining([{ $ref: '#/components/schemas/RoomSettings' }, { $ref: '#/components/schemas/PageTemplate' }]),
            },
          },
        },
      },
    })
  })

  it('the generator refuses a route whose path parameter is not described, and a route described twice', () => {
    const route: RouteSpec = {
      method: 'get',
      path: '/_anteroom/api/rooms/:id/things',
      summary: 'x',
      tag: 'rooms',
      security: 'admin',
      responses: { 200: { description: 'x' } },
    }
    expect(() => openApiDocument({ ...EDGE_API, routes: [route] })).toThrow(/describe :id/)
    const described = { ...route, parameters: [{ name: 'id', in: 'path' as const, description: 'x', schema: {} }] }
    expect(() => openApiDocument({ ...EDGE_API, routes: [described, described] })).toThrow(/described twice/)
  })
})

// --- the routes --------------------------------------------------------------------------------------

/** What an app registers, as "METHOD /path", without middleware (a handler that takes next). */
function registered(app: Hono<never>): Set<string> {
  return new Set(
    inspectRoutes(app as never)
      .filter((r) => !r.isMiddleware)
      .map((r) => `${r.method} ${r.path}`),
  )
}

/** What a document describes, as "METHOD /path" with Hono's `:name`. */
function described(doc: Doc): Set<string> {
  const out = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) out.add(`${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`)
  }
  return out
}

/**
 * Routes that are not endpoints, each with why it is not described: the catch-alls. The admin API's
 * own 404 (admin/routes.ts registers it as ALL /api/*, under /_anteroom), the edge's 404 for the rest
 * of its prefix, and every other path: a visitor's request, for the line or the origin (the status
 * JSON such a request may answer is described at /_anteroom/status).
 */
const EDGE_CATCH_ALLS: Record<string, string> = {
  'ALL /_anteroom/api/*': 'the admin API answers 404 ERR_NOT_FOUND for any other path under it',
  'ALL /_anteroom/*': 'the edge answers 404 ERR_NOT_FOUND for any other path of its own',
  'ALL /*': 'every other request goes to the line or to the origin, whose API it is',
}

// --- the servers -------------------------------------------------------------------------------

let echo: OriginServer
let edge: Edge
let edgeServer: Served
let booking: Awaited<ReturnType<typeof buildBooking>>
let bookingServer: Served
const EVENT = `oa${Date.now().toString(36)}`
const day = 86_400_000

/** The rooms both edges serve: one per state of the status JSON, and the shop in front of the booking origin. */
const ROOMS = [
  { id: 'line', paths: ['/line'], totalActiveUsers: 1, newUsersPerMinute: 60 },
  { id: 'held', paths: ['/held'], totalActiveUsers: 5, newUsersPerMinute: 60, mode: 'paused' },
  { id: 'shut', paths: ['/shut'], totalActiveUsers: 5, newUsersPerMinute: 60, mode: 'closed' },
  { id: 'work', paths: ['/work'], totalActiveUsers: 5, newUsersPerMinute: 60, powDifficulty: 1 },
  {
    id: 'later',
    paths: ['/later'],
    totalActiveUsers: 5,
    newUsersPerMinute: 60,
    schedule: { prequeueAt: new Date(T0 + day).toISOString(), opensAt: new Date(T0 + 2 * day).toISOString() },
  },
  { id: 'shop', paths: ['/events', '/holds'], totalActiveUsers: 100, newUsersPerMinute: 6000 },
]

beforeAll(async () => {
  echo = await startOrigin()
  const [edgePort, bookingPort] = [await freePort(), await freePort()]
  booking = await buildBooking({
    databaseUrl: inject('postgresUrl'),
    jwksUrl: `http://127.0.0.1:${edgePort}/.well-known/jwks.json`,
    issuer: 'anteroom',
    audience: 'origin',
    room: 'shop',
    eventId: EVENT,
    festival: false,
  })
  bookingServer = await listen(booking.app as unknown as Hono, bookingPort)
  edge = await testEdge({ rooms: ROOMS, originUrl: bookingServer.url, clock: new ManualClock(T0), adminTokens: `ops:${TOKEN}` })
  edgeServer = await listen(edge.app, edgePort)
})

afterAll(async () => {
  await edgeServer?.close()
  await edge?.close()
  await bookingServer?.close()
  await booking?.close()
  await echo?.close()
})

describe('every route is described, and every description is a route', () => {
  it('the edge (its own routes and the admin API under /_anteroom)', () => {
    const routes = registered(edge.app as never)
    for (const catchAll of Object.keys(EDGE_CATCH_ALLS)) expect(routes, catchAll).toContain(catchAll)
    const endpoints = [...routes].filter((r) => !Object.hasOwn(EDGE_CATCH_ALLS, r)).sort()
    expect([...described(edgeApiDocument() as Doc)].sort()).toEqual(endpoints)
  })

  it('the booking origin', () => {
    // The origin has no catch-all route: app.notFound answers 404, and middleware is left out above.
    expect([...described(bookingApiDocument() as Doc)].sort()).toEqual([...registered(booking.app as never)].sort())
  })
})

/** The edge's document as an edge at `base` serves it over HTTP, to anyone. */
async function servedEdgeDocument(base: string): Promise<void> {
  const res = await fetch(`${base}/_anteroom/api/openapi.json`)
  expect(res.status, base).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  expect(res.headers.get('cache-control')).toBe('no-store')
  expect(await res.json()).toEqual(JSON.parse(JSON.stringify(edgeApiDocument())))
}

describe('served over HTTP, without credentials', () => {
  it('by a Node edge and by the booking origin (the Worker: below)', async () => {
    await servedEdgeDocument(edgeServer.url)
    const res = await fetch(`${bookingServer.url}/openapi.json`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(bookingApiDocument())))
  })
})

// --- real answers --------------------------------------------------------------------------------

const edgeCheck = new DocumentCheck(edgeApiDocument() as Doc, 'urn:anteroom:edge')
const bookingCheck = new DocumentCheck(bookingApiDocument() as Doc, 'urn:anteroom:origin')

/** The status JSON in every state a test can reach, the draw, keys, health, probes and metrics, of the edge at `base`. */
async function checkEdgeAnswers(base: string): Promise<void> {
  const status = async (v: Visitor, room: string) => {
    const res = await v.request(overHttp, `/_anteroom/status?room=${room}`, { json: true })
    return (await edgeCheck.answer('get', '/_anteroom/status', res)) as { state: string }
  }
  const first = new Visitor(base)
  expect(await status(first, 'line')).toMatchObject({ state: 'admitted' })
  expect(await status(new Visitor(base), 'line')).toMatchObject({ state: 'queued' })
  expect(await status(new Visitor(base), 'held')).toMatchObject({ state: 'paused' })
  expect(await status(new Visitor(base), 'shut')).toMatchObject({ state: 'closed' })
  expect(await status(new Visitor(base), 'work')).toMatchObject({ state: 'challenge' })
  expect(await status(new Visitor(base), 'later')).toMatchObject({ state: 'scheduled', schedule: { prequeueInSeconds: 86_400 } })
  // A refused proof of work is an error with a fresh challenge; an unknown room a 404.
  const pow = await new Visitor(base).request(overHttp, '/_anteroom/status?room=work', {
    json: true,
    headers: { 'anteroom-pow': 'not-an-answer' },
  })
  expect(((await edgeCheck.answer('get', '/_anteroom/status', pow)) as { error: { code: string } }).error.code).toBe('ERR_POW_INVALID')
  const none = await fetch(`${base}/_anteroom/status?room=nope`, { headers: { accept: 'application/json' } })
  expect(((await edgeCheck.answer('get', '/_anteroom/status', none)) as { error: { code: string } }).error.code).toBe('ERR_NOT_FOUND')
  expect(await edgeCheck.answer('get', '/_anteroom/draw', await fetch(`${base}/_anteroom/draw?room=later`))).toMatchObject({
    state: 'scheduled',
  })
  await edgeCheck.answer('get', '/_anteroom/draw', await fetch(`${base}/_anteroom/draw?room=line`))
  await edgeCheck.answer('get', '/.well-known/jwks.json', await fetch(`${base}/.well-known/jwks.json`))
  for (const path of ['/_anteroom/health', '/_anteroom/live', '/_anteroom/ready', '/_anteroom/pow-worker.js', '/_anteroom/queue.css']) {
    await edgeCheck.answer('get', path, await fetch(`${base}${path}`))
  }
  await edgeCheck.answer('get', '/_anteroom/metrics', await fetch(`${base}/_anteroom/metrics`))
  await edgeCheck.answer('get', '/_anteroom/metrics', await fetch(`${base}/_anteroom/metrics`, { headers: ADMIN }))
}

/** The admin API's answers of the edge at `base`: rooms, a change, a conflict, stats, history, audit, sessions, sign-in, errors. */
async function checkAdminAnswers(base: string): Promise<void> {
  const api = async (method: string, path: string, init: RequestInit = {}, query = '') => {
    const res = await fetch(`${base}${path.replace(/\{(\w+)\}/g, (_, k) => (k === 'id' ? 'line' : 'v-1'))}${query}`, {
      method: method.toUpperCase(),
      ...init,
      headers: { ...ADMIN, ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers },
    })
    return { res, body: await edgeCheck.answer(method, path, res) }
  }
  const room = (await api('get', '/_anteroom/api/rooms/{id}')) as { res: Response; body: { etag: string } }
  await api('get', '/_anteroom/api/rooms')
  await api('get', '/_anteroom/api/session')
  await api('get', '/_anteroom/api/settings-schema')
  const changed = await api('patch', '/_anteroom/api/rooms/{id}', {
    body: JSON.stringify({ title: 'Almost there', schedule: null }),
    headers: { 'if-match': room.body.etag },
  })
  expect(changed.res.status).toBe(200)
  const stale = await api('put', '/_anteroom/api/rooms/{id}', {
    body: JSON.stringify({ newUsersPerMinute: 60, totalActiveUsers: 1 }),
    headers: { 'if-match': room.body.etag },
  })
  expect(stale.body).toMatchObject({ error: { code: 'ERR_STALE', current: { title: 'Almost there' } } })
  const bad = await api('patch', '/_anteroom/api/rooms/{id}', {
    body: JSON.stringify({ refreshSeconds: 1 }),
    headers: { 'if-match': (changed.body as { etag: string }).etag },
  })
  expect(bad.body).toMatchObject({ error: { code: 'ERR_SETTINGS_INVALID', field: 'refreshSeconds' } })
  expect((await api('patch', '/_anteroom/api/rooms/{id}', { body: '{}' })).res.status).toBe(428)
  expect((await api('get', '/_anteroom/api/rooms/{id}/stats')).body).toMatchObject({ room: 'line', store: 'up' })
  await api('get', '/_anteroom/api/rooms/{id}/history')
  expect((await api('get', '/_anteroom/api/rooms/{id}/report')).body).toMatchObject({ room: 'line' })
  expect((await api('get', '/_anteroom/api/rooms/{id}/report', {}, '?format=csv')).res.status).toBe(200)
  expect((await api('get', '/_anteroom/api/rooms/{id}/report', {}, '?from=soon')).body).toMatchObject({ error: { field: 'from' } })
  await api('post', '/_anteroom/api/rooms/{id}/pause')
  await api('post', '/_anteroom/api/rooms/{id}/resume')
  await api('post', '/_anteroom/api/rooms/{id}/sessions/{visitor}/end')
  await api('post', '/_anteroom/api/rooms/{id}/sessions/{visitor}/allow')
  await api('post', '/_anteroom/api/rooms/{id}/sessions/end', { body: JSON.stringify({ visitors: ['v-1', 'v-2'] }) })
  const badBulk = await api('post', '/_anteroom/api/rooms/{id}/sessions/end', { body: JSON.stringify({ visitors: ['v 1'] }) })
  expect(badBulk.body).toMatchObject({ error: { code: 'ERR_BAD_REQUEST', field: 'visitors[0]' } })
  await api('post', '/_anteroom/api/rooms/{id}/sessions/end-all')
  const audit = (await api('get', '/_anteroom/api/audit', {}, '?kind=changes&limit=5')).body as { entries: unknown[] }
  expect(audit.entries.length).toBeGreaterThan(0)
  expect((await api('get', '/_anteroom/api/audit', {}, '?kind=nope')).body).toMatchObject({ error: { field: 'kind' } })
  await api('get', '/_anteroom/api/report')
  // Access codes and invite links (admin/access.ts): made, listed, shown again, revoked; bad values name their field.
  const access = (body: unknown) => ({
    body: JSON.stringify({ maxUses: 2, lane: 'priority', expiresAt: new Date(T0 + 3_600_000).toISOString(), ...(body as object) }),
  })
  const made = (await api('post', '/_anteroom/api/rooms/{id}/access/codes', access({ count: 2, label: 'fans' }))).body as {
    grants: { id: string }[]
  }
  expect((await api('post', '/_anteroom/api/rooms/{id}/access/codes', access({ count: 1, lane: 'separate' }))).body).toMatchObject({
    error: { code: 'ERR_BAD_REQUEST', field: 'lane' },
  })
  const link = (await api('post', '/_anteroom/api/rooms/{id}/access/links', access({}))).body as { grant: { id: string } }
  expect((await api('get', '/_anteroom/api/rooms/{id}/access', {}, '?limit=5')).body).toMatchObject({ room: 'line', total: 3 })
  const again = await fetch(`${base}/_anteroom/api/rooms/line/access/${link.grant.id}/link`, { headers: ADMIN })
  expect(await edgeCheck.answer('get', '/_anteroom/api/rooms/{id}/access/{grant}/link', again)).toMatchObject({ grant: { kind: 'link' } })
  const revoked = await fetch(`${base}/_anteroom/api/rooms/line/access/${made.grants[0]?.id}/revoke`, { method: 'POST', headers: ADMIN })
  expect(await edgeCheck.answer('post', '/_anteroom/api/rooms/{id}/access/{grant}/revoke', revoked)).toMatchObject({
    grant: { state: 'revoked' },
  })
  await api('get', '/_anteroom/api/rooms/{id}/access/{grant}/link')
  // No credentials; a room that does not exist.
  const anonymous = await fetch(`${base}/_anteroom/api/rooms/line`)
  expect(((await edgeCheck.answer('get', '/_anteroom/api/rooms/{id}', anonymous)) as { error: { code: string } }).error.code).toBe(
    'ERR_UNAUTHORIZED',
  )
  const missing = await fetch(`${base}/_anteroom/api/rooms/nope`, { headers: ADMIN })
  expect(await edgeCheck.answer('get', '/_anteroom/api/rooms/{id}', missing)).toMatchObject({
    error: { code: 'ERR_NOT_FOUND', field: 'id' },
  })
  // The UI's way: a sign-in, a change without its CSRF token, a sign-out.
  const login = await fetch(`${base}/_anteroom/admin/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ops', token: TOKEN }),
  })
  const cookie = (login.headers.get('set-cookie') as string).split(';')[0] as string
  const { csrf } = (await edgeCheck.answer('post', '/_anteroom/admin/login', login)) as { csrf: string }
  const noCsrf = await fetch(`${base}/_anteroom/api/rooms/line/resume`, { method: 'POST', headers: { cookie } })
  expect(await edgeCheck.answer('post', '/_anteroom/api/rooms/{id}/resume', noCsrf)).toMatchObject({ error: { code: 'ERR_CSRF' } })
  const out = await fetch(`${base}/_anteroom/api/logout`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf } })
  expect(await edgeCheck.answer('post', '/_anteroom/api/logout', out)).toEqual({ ok: true })
  const badName = await fetch(`${base}/_anteroom/admin/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'not a name', token: TOKEN }),
  })
  expect(await edgeCheck.answer('post', '/_anteroom/admin/login', badName)).toMatchObject({
    error: { code: 'ERR_BAD_REQUEST', field: 'name' },
  })
  await edgeCheck.answer('get', '/_anteroom/admin', await fetch(`${base}/_anteroom/admin`))
  await edgeCheck.answer('get', '/_anteroom/admin/{module}', await fetch(`${base}/_anteroom/admin/app.js`))
  await edgeCheck.answer('get', '/_anteroom/admin/{module}', await fetch(`${base}/_anteroom/admin/report.js`))
  await edgeCheck.answer('get', '/_anteroom/admin/{module}', await fetch(`${base}/_anteroom/admin/nothing.js`))
}

describe('real answers match their schemas', () => {
  it("the Node edge's: the status JSON, the draw, keys, health, probes, metrics", () => checkEdgeAnswers(edgeServer.url))
  it("the Node edge's admin API", () => checkAdminAnswers(edgeServer.url))

  it("the booking origin's: the seat map, a hold, a 409 for a taken seat, bad bodies, a checkout, a release", async () => {
    const go = (v: Visitor, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      v.request(overHttp, path, {
        method: method.toUpperCase(),
        headers: { accept: 'application/json', ...(method === 'post' ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      })
    const [a, b] = [new Visitor(edgeServer.url), new Visitor(edgeServer.url)]
    // A first request admits each visitor (the edge answers its status JSON and sets the admission cookie).
    for (const v of [a, b]) expect((await v.status(overHttp, 'shop')).state).toBe('admitted')
    const map = (await bookingCheck.answer('get', '/events/{event}/seats', await go(a, 'get', `/events/${EVENT}/seats`))) as {
      seats: { seat: string }[]
    }
    const seat = map.seats[0]?.seat as string
    await bookingCheck.answer('get', '/events/{event}/items', await go(a, 'get', `/events/${EVENT}/items`))
    const held = (await bookingCheck.answer(
      'post',
      '/events/{event}/holds',
      await go(a, 'post', `/events/${EVENT}/holds`, { seats: [seat] }),
    )) as {
      hold: { id: string }
    }
    const taken = await bookingCheck.answer(
      'post',
      '/events/{event}/holds',
      await go(b, 'post', `/events/${EVENT}/holds`, { seats: [seat] }),
    )
    expect(taken).toMatchObject({ error: { code: 'ERR_SEATS_TAKEN', taken: [seat] } })
    for (const [body, code] of [
      [{ seats: [seat], price: 0 }, 'ERR_BODY'],
      [{ items: [{ item: 'nope', quantity: 1 }] }, 'ERR_UNKNOWN_ITEMS'],
      ['{"seats": [', 'ERR_BODY'],
    ] as const) {
      expect(await bookingCheck.answer('post', '/events/{event}/holds', await go(b, 'post', `/events/${EVENT}/holds`, body))).toMatchObject(
        {
          error: { code },
        },
      )
    }
    const plain = await go(b, 'post', `/events/${EVENT}/holds`, 'seats=A1', { 'content-type': 'application/x-www-form-urlencoded' })
    expect(await bookingCheck.answer('post', '/events/{event}/holds', plain)).toMatchObject({
      error: { code: 'ERR_UNSUPPORTED_MEDIA_TYPE' },
    })
    const second = (await bookingCheck.answer(
      'post',
      '/events/{event}/holds',
      await go(b, 'post', `/events/${EVENT}/holds`, { seats: [map.seats[1]?.seat] }),
    )) as { hold: { id: string } }
    const paid = await go(a, 'post', `/holds/${held.hold.id}/confirm`, undefined, { 'idempotency-key': `oa-${held.hold.id}` })
    expect(await bookingCheck.answer('post', '/holds/{hold}/confirm', paid)).toMatchObject({ booked: true, tickets: [{ seat }] })
    const noKey = await go(b, 'post', `/holds/${second.hold.id}/confirm`)
    expect(await bookingCheck.answer('post', '/holds/{hold}/confirm', noKey)).toMatchObject({ error: { code: 'ERR_IDEMPOTENCY_KEY' } })
    await bookingCheck.answer('delete', '/holds/{hold}', await go(b, 'delete', `/holds/${second.hold.id}`))
    expect(await bookingCheck.answer('delete', '/holds/{hold}', await go(b, 'delete', `/holds/${second.hold.id}`))).toMatchObject({
      error: { code: 'ERR_HOLD_NOT_ACTIVE' },
    })
    await bookingCheck.answer('get', '/events/{event}/stock', await go(a, 'get', `/events/${EVENT}/stock`))
    expect(await bookingCheck.answer('get', '/events/{event}/invariant', await go(a, 'get', `/events/${EVENT}/invariant`))).toMatchObject({
      ok: true,
    })
    // Straight to the origin: no admission, and the document and metrics that need none.
    const direct = await fetch(`${bookingServer.url}/events/${EVENT}/seats`)
    expect(await bookingCheck.answer('get', '/events/{event}/seats', direct)).toMatchObject({ error: { code: 'ERR_ADMISSION_MISSING' } })
    await bookingCheck.answer('get', '/metrics', await fetch(`${bookingServer.url}/metrics`))
    await bookingCheck.answer('get', '/openapi.json', await fetch(`${bookingServer.url}/openapi.json`))
  })
})

describe('the Worker in workerd', () => {
  let worker: TestEdge
  beforeAll(async () => {
    worker = await workerRuntime(() => inject('redisUrl')).start({ rooms: ROOMS, originUrl: echo.url, adminTokens: `ops:${TOKEN}` })
  })
  afterAll(async () => {
    await worker?.close()
  })

  it('serves the same document over HTTP, without credentials', () => servedEdgeDocument(worker.url as string))
  it('answers as described: the status JSON, the draw, keys, health, probes, metrics', () => checkEdgeAnswers(worker.url as string))
  it('answers as described: the admin API', () => checkAdminAnswers(worker.url as string))
})

// --- the schemas made from the code's own agree with it ----------------------------------------------

/** Values of one setting from its entry: in range, just out of range, of the wrong type, an unknown choice. */
function valuesOf(spec: SettingSpec): unknown[] {
  switch (spec.type) {
    case 'id':
      return ['a', 'a'.repeat(32), 'a1-b', '', 'A', 'a'.repeat(33), '-a', 'a_b', 42, null]
    case 'integer':
      return [spec.min, spec.max, spec.min + 1, spec.min - 1, spec.max + 1, spec.min + 0.5, String(spec.min), null, true]
    case 'choice':
      return [...spec.values, 'nope', spec.values[0]?.toUpperCase(), 42, null]
    case 'text':
      return ['', 'x'.repeat(spec.maxLength), 'x'.repeat(spec.maxLength + 1), 42, null, ['x']]
    case 'list': {
      const ok = spec.item === 'host' ? 'Shop.Example.' : '/tickets'
      const long = spec.item === 'host' ? 'a'.repeat(spec.maxLength) : `/${'a'.repeat(spec.maxLength - 1)}`
      const bad = spec.item === 'host' ? 'shop example' : 'tickets'
      return [[], [ok], [long], [`${long}a`], Array(spec.maxItems).fill(ok), Array(spec.maxItems + 1).fill(ok), [''], [bad], [42], ok, null]
    }
    case 'ref':
      return ['demo', 'a'.repeat(spec.maxLength), 'a'.repeat(spec.maxLength + 1), 'bad id!', '', 42, null]
    case 'bypass': {
      // Bits past a prefix, a path's canonical form and ids used twice are the code's alone to refuse.
      const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, kind: 'path', paths: [`/p${i}`] }))
      return [
        null,
        [],
        rules(spec.maxItems),
        rules(spec.maxItems + 1),
        [{ id: 'office', kind: 'cidr', networks: ['192.0.2.0/24', '2001:db8::/32'] }],
        [{ id: 'partner', kind: 'header', secret: 'partner-a' }],
        [{ id: 'search', kind: 'crawler', crawlers: ['googlebot', 'bingbot'] }],
        [{ id: 'search', kind: 'crawler', crawlers: ['askjeeves'] }],
        [{ id: 'office', kind: 'cidr', networks: [] }],
        [{ id: 'office', kind: 'cidr', networks: ['192.0.2.0/24'], extra: 1 }],
        [{ id: 'Office', kind: 'cidr', networks: ['192.0.2.0/24'] }],
        [{ id: 'office', kind: 'teleport' }],
        [{ id: 'static', kind: 'path', paths: ['static'] }],
        [{ id: 'partner', kind: 'header', secret: 'Not A Name' }],
        'office',
        [42],
      ]
    }
    case 'schedule': {
      const [p, o, c] = ['2026-12-01T09:00:00Z', '2026-12-01T10:00:00+01:00', '2026-12-02T10:00:00.5Z']
      // Times out of order are refused by parseRoomSettings alone: a rule across values JSON Schema cannot say.
      return [
        null,
        { prequeueAt: p, opensAt: '2026-12-01T10:00Z' },
        { prequeueAt: p, opensAt: '2026-12-01T12:00:00Z', closesAt: c },
        { prequeueAt: p, opensAt: '2026-12-01T12:00:00Z', closesAt: null },
        { prequeueAt: p },
        { prequeueAt: p, opensAt: o, extra: 1 },
        { prequeueAt: 'tomorrow', opensAt: o },
        { prequeueAt: '2026-12-01T09:00:00', opensAt: o },
        'soon',
        [],
        42,
      ]
    }
  }
}

describe('the schemas made from the code agree with it', () => {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true })
  const room = ajv.compile(settingsJsonSchema('room'))
  const patch = ajv.compile(settingsJsonSchema('patch'))
  const stored = ajv.compile(settingsJsonSchema('stored'))
  const parses = (input: unknown) => {
    try {
      return parseRoomSettings(input)
    } catch {
      return undefined
    }
  }

  it('room settings: every value made from every setting is accepted by both the JSON Schema and parseRoomSettings, or by neither', () => {
    // A room that passes with any in-range value of any one setting: refreshSeconds at its least, so that
    // abandonAfterSeconds at its least is still twice it (a rule across settings, checked by the code alone).
    const base = { id: 'sale', newUsersPerMinute: 60, totalActiveUsers: 10, refreshSeconds: 2 }
    let accepted = 0
    let refused = 0
    for (const [name, spec] of Object.entries(ROOM_SETTINGS) as [string, SettingSpec][]) {
      for (const value of valuesOf(spec)) {
        const input = { ...base, [name]: value }
        const parsed = parses(input)
        const label = `${name} = ${JSON.stringify(value)?.slice(0, 60)}`
        expect(room(input), label).toBe(parsed !== undefined)
        if (name !== 'id') expect(patch({ [name]: value }), `patch ${label}`).toBe(parsed !== undefined)
        if (parsed !== undefined) {
          expect(stored(parsed), `stored ${label}: ${JSON.stringify(stored.errors)}`).toBe(true)
          accepted++
        } else refused++
      }
    }
    expect([accepted, refused].every((n) => n > 40)).toBe(true)
    for (const input of [{ ...base, nope: 1 }, { id: 'sale', totalActiveUsers: 1 }, [], 'sale', null]) {
      expect(room(input), JSON.stringify(input)).toBe(false)
      expect(parses(input), JSON.stringify(input)).toBeUndefined()
    }
  })

  const HOLD = holdBody(4)
  const bodies: [string, BodyNode, unknown[]][] = [
    [
      'the hold',
      HOLD,
      [
        { seats: ['A1'] },
        { seats: ['A1', 'B2', 'C3', 'D4'] },
        { items: [{ item: 'night-12', quantity: 4 }] },
        { seats: ['A1'], items: [] },
        { seats: [], items: [{ item: 'ga', quantity: 1 }] },
        {},
        { seats: [] },
        { items: [] },
        { seats: [], items: [] },
        { seats: 'A1' },
        { seats: [1] },
        { seats: ['A 1'] },
        { seats: ['A1', 'A1'] },
        { seats: ['A1', 'A2', 'A3', 'A4', 'A5'] },
        { seats: ['A1'], extra: true },
        { items: [{ item: 'night-12' }] },
        { items: [{ item: 'night-12', quantity: 0 }] },
        { items: [{ item: 'night-12', quantity: 5 }] },
        { items: [{ item: 'night-12', quantity: 1.5 }] },
        { items: [{ item: 'night 12', quantity: 1 }] },
        { items: [{ item: 'night-12', quantity: 1, price: 0 }] },
        { items: ['night-12'] },
        { items: Array.from({ length: 21 }, (_, i) => ({ item: `x${i}`, quantity: 1 })) },
        null,
        [],
        'seats',
      ],
    ],
    [
      'the sign-in',
      SIGN_IN_BODY,
      [{ token: 'x' }, { name: 'alice', token: 'x' }, { name: '' }, { name: null }, { name: 'a b' }, { name: 7 }, {}],
    ],
    [
      'the bulk end',
      BULK_END_BODY,
      [
        { visitors: ['a'] },
        { visitors: [] },
        { visitors: 'a' },
        {},
        { visitors: ['a', 'b c'] },
        { visitors: [7] },
        { visitors: ['x'.repeat(65)] },
      ],
    ],
  ]
  for (const [name, node, values] of bodies) {
    it(`${name}: the body's JSON Schema and its check accept and refuse the same bodies`, () => {
      const validate = ajv.compile(jsonSchemaOf(node))
      for (const value of values) expect(validate(value), JSON.stringify(value)).toBe(checkBody(node, value) === undefined)
    })
  }

  it("the hold: what JSON Schema cannot say is checked all the same (an item twice, a hold over the visitor's limit)", () => {
    const validate = ajv.compile(jsonSchemaOf(HOLD))
    for (const [value, message] of [
      [
        {
          items: [
            { item: 'a', quantity: 1 },
            { item: 'b', quantity: 1 },
            { item: 'a', quantity: 1 },
          ],
        },
        'items: names a twice',
      ],
      [{ seats: ['A1', 'A2'], items: [{ item: 'ga', quantity: 3 }] }, 'items: at most 4 in one hold, seats and item units together, got 5'],
    ] as const) {
      expect(validate(value)).toBe(true)
      expect(checkBody(HOLD, value)).toEqual({ message, field: 'items' })
    }
  })
})

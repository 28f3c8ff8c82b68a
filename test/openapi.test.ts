// The OpenAPI documents (src/http/api-description.ts, src/booking/api-description.ts) stay true: valid OpenAPI 3.1 whose schemas compile in strict JSON Schema 2020-12; every route the edge and the origin register described and every described route registered; served over HTTP by a Node edge, the Worker in workerd and the origin; real answers of both edges and the origin (on a real PostgreSQL server) match their schemas. (The schemas made from the code's own: test/openapi-schemas.test.ts.)
import { Validator } from '@seriousme/openapi-schema-validator'
import type { Hono } from 'hono'
import { inspectRoutes } from 'hono/dev'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { bookingApiDocument } from '../src/booking/api-description.js'
import type { JsonSchema } from '../src/core/body-schema.js'
import { openApiDocument, type RouteSpec } from '../src/core/openapi.js'
import { buildBooking } from '../src/entry/booking.js'
import type { Edge } from '../src/entry/build.js'
import { EDGE_API, edgeApiDocument } from '../src/http/api-description.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import {
  ajvFor,
  checkAdminAnswers,
  checkEdgeAnswers,
  type Doc,
  type Operation,
  originCheck,
  overHttp,
  pointer,
  servedEdgeDocument,
  TOKEN,
} from './support/openapi-check.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freePort } from './support/redis-server.js'
import { T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { type Served, serveOnFreePort } from './support/serve.js'
import { Visitor } from './support/visitor.js'

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

describe('served over HTTP, without credentials', () => {
  it('by a Node edge and by the booking origin (the Worker: below)', async () => {
    await servedEdgeDocument(edgeServer.url)
    const res = await fetch(`${bookingServer.url}/openapi.json`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(bookingApiDocument())))
  })
})

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
    const map = (await originCheck.answer('get', '/events/{event}/seats', await go(a, 'get', `/events/${EVENT}/seats`))) as {
      seats: { seat: string }[]
    }
    const seat = map.seats[0]?.seat as string
    await originCheck.answer('get', '/events/{event}/items', await go(a, 'get', `/events/${EVENT}/items`))
    const held = (await originCheck.answer(
      'post',
      '/events/{event}/holds',
      await go(a, 'post', `/events/${EVENT}/holds`, { seats: [seat] }),
    )) as {
      hold: { id: string }
    }
    const taken = await originCheck.answer(
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
      expect(await originCheck.answer('post', '/events/{event}/holds', await go(b, 'post', `/events/${EVENT}/holds`, body))).toMatchObject({
        error: { code },
      })
    }
    const plain = await go(b, 'post', `/events/${EVENT}/holds`, 'seats=A1', { 'content-type': 'application/x-www-form-urlencoded' })
    expect(await originCheck.answer('post', '/events/{event}/holds', plain)).toMatchObject({
      error: { code: 'ERR_UNSUPPORTED_MEDIA_TYPE' },
    })
    const second = (await originCheck.answer(
      'post',
      '/events/{event}/holds',
      await go(b, 'post', `/events/${EVENT}/holds`, { seats: [map.seats[1]?.seat] }),
    )) as { hold: { id: string } }
    const paid = await go(a, 'post', `/holds/${held.hold.id}/confirm`, undefined, { 'idempotency-key': `oa-${held.hold.id}` })
    expect(await originCheck.answer('post', '/holds/{hold}/confirm', paid)).toMatchObject({ booked: true, tickets: [{ seat }] })
    const noKey = await go(b, 'post', `/holds/${second.hold.id}/confirm`)
    expect(await originCheck.answer('post', '/holds/{hold}/confirm', noKey)).toMatchObject({ error: { code: 'ERR_IDEMPOTENCY_KEY' } })
    await originCheck.answer('delete', '/holds/{hold}', await go(b, 'delete', `/holds/${second.hold.id}`))
    expect(await originCheck.answer('delete', '/holds/{hold}', await go(b, 'delete', `/holds/${second.hold.id}`))).toMatchObject({
      error: { code: 'ERR_HOLD_NOT_ACTIVE' },
    })
    await originCheck.answer('get', '/events/{event}/stock', await go(a, 'get', `/events/${EVENT}/stock`))
    expect(await originCheck.answer('get', '/events/{event}/invariant', await go(a, 'get', `/events/${EVENT}/invariant`))).toMatchObject({
      ok: true,
    })
    // Straight to the origin: no admission, and the document and metrics that need none.
    const direct = await fetch(`${bookingServer.url}/events/${EVENT}/seats`)
    expect(await originCheck.answer('get', '/events/{event}/seats', direct)).toMatchObject({ error: { code: 'ERR_ADMISSION_MISSING' } })
    await originCheck.answer('get', '/metrics', await fetch(`${bookingServer.url}/metrics`))
    await originCheck.answer('get', '/openapi.json', await fetch(`${bookingServer.url}/openapi.json`))
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

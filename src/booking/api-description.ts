// The booking origin's API description: one entry per route createBookingApp serves (./app.ts), turned
// into OpenAPI 3.1 by core/openapi.ts and served without admission at GET /openapi.json. The hold's
// body is the schema value readClaim checks with (./claims.ts, holdBody); errors come from the
// registry (core/errors.ts), the admission's from its ERR_ADMISSION_* codes.
//
// A new route is one entry in BOOKING_ROUTES: method and path as app.ts registers them (`:event`),
// summary, tag, security ('admission', 'metrics' or 'none'), parameters, body, responses and the error
// codes it may answer besides its security's. test/openapi.test.ts fails until the app's routes and
// these entries are the same, and checks real answers against the schemas given here.
import { type JsonSchema, jsonSchemaOf, patternOf } from '../core/body-schema.js'
import { ERRORS, type ErrorCode } from '../core/errors.js'
import {
  API_VERSION,
  type ApiSpec,
  closedObject as closed,
  documentOnce,
  nullable,
  OPENAPI_DOCUMENT_SCHEMA,
  type ParameterSpec,
  type RouteSpec,
} from '../core/openapi.js'
import { ITEM_KEY } from '../ports/seat-store.js'
import { HOLD_ID, holdBody, IDEMPOTENCY_KEY, LANE_ENTRY_ID } from './claims.js'
import { ADMISSION_HEADER } from './verify.js'

const integer = (minimum = 0): JsonSchema => ({ type: 'integer', minimum })
const string: JsonSchema = { type: 'string' }
const strings: JsonSchema = { type: 'array', items: string }
const itemKey: JsonSchema = { type: 'string', pattern: patternOf(ITEM_KEY) }
const itemClaim = closed({ item: itemKey, quantity: integer(1) })
const holdId: JsonSchema = { type: 'string', pattern: patternOf(HOLD_ID) }

const EVENT_PARAM: ParameterSpec = {
  name: 'event',
  in: 'path',
  description: 'The event’s id (a room’s `event` setting names it).',
  schema: string,
}
const HOLD_PARAM: ParameterSpec = { name: 'hold', in: 'path', description: 'The hold’s id.', schema: holdId }
const CLAIM_PARAM: ParameterSpec = { name: 'claim', in: 'path', description: 'The claim’s id (a 202’s Location).', schema: holdId }
const laneEntry: JsonSchema = { type: 'string', pattern: patternOf(LANE_ENTRY_ID) }
const ENTRY_PARAM: ParameterSpec = {
  name: 'entry',
  in: 'query',
  required: true,
  description: 'The lane entry the claim came in (a 202’s Location).',
  schema: laneEntry,
}
const heldAnswer = closed({ hold: closed({ id: holdId, seats: strings, items: { type: 'array', items: itemClaim }, expiresAt: string }) })
/** A claim in an event's ordered lane that its allocator has not decided yet. */
const pendingAnswer = {
  description:
    'Only for an event sold through the ordered lane: the claim is in the lane and not decided yet (its allocator is busy or away). Poll the Location.',
  json: closed({ claim: closed({ id: holdId, status: { enum: ['pending'] }, entry: laneEntry }) }),
  headers: {
    Location: { description: 'Where to poll the claim: /events/{event}/claims/{claim}?entry={entry}.' },
    'Retry-After': { description: 'Seconds to wait before polling.' },
  },
}
const CLAIM_ERRORS: readonly ErrorCode[] = [
  'ERR_SEATS_TAKEN',
  'ERR_VISITOR_LIMIT',
  'ERR_UNKNOWN_SEATS',
  'ERR_ITEMS_SHORT',
  'ERR_UNKNOWN_ITEMS',
]

/** What reading the database may answer besides the route's own. */
const DB: readonly ErrorCode[] = ['ERR_DB_BUSY', 'ERR_DB_UNAVAILABLE']
/** What a request with a body (every POST) may be refused for before it is read (./body.ts). */
const BODY: readonly ErrorCode[] = ['ERR_UNSUPPORTED_MEDIA_TYPE', 'ERR_BODY_TOO_LARGE', 'ERR_BODY']
const eventHead = closed({ id: string, name: string, priceCents: integer() })

export const BOOKING_ROUTES: readonly RouteSpec[] = [
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    description: 'Holds and confirms by outcome, and the process’s own. 404 when metrics are switched off.',
    tag: 'operations',
    security: 'metrics',
    responses: { 200: { description: 'The Prometheus text format.', media: { type: 'text/plain; version=0.0.4', schema: string } } },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    description: 'The OpenAPI 3.1 description of the booking origin: no admission needed.',
    tag: 'operations',
    security: 'none',
    responses: { 200: { description: 'The OpenAPI document.', json: OPENAPI_DOCUMENT_SCHEMA } },
  },
  {
    method: 'post',
    path: '/events/:event/holds',
    summary: 'Hold seats, items or both',
    description:
      'All or nothing, until the event’s hold time is up. A claim the claim gate knows cannot succeed is answered 409 before the admission’s signature is checked. For an event sold through the ordered lane, the claim is decided by the event’s allocator in arrival order, with the same answers; one not decided within the origin’s wait is answered 202.',
    tag: 'holds',
    security: 'admission',
    parameters: [EVENT_PARAM],
    body: { schema: jsonSchemaOf(holdBody()), description: 'JSON (Content-Type: application/json), at most 4 KiB.' },
    responses: { 201: { description: 'Held.', json: heldAnswer }, 202: pendingAnswer },
    errors: [...BODY, 'ERR_NOT_FOUND', ...CLAIM_ERRORS, ...DB, 'ERR_LANE_UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/events/:event/claims/:claim',
    summary: 'A claim in the ordered lane',
    description:
      'The answer of a claim that was answered 202: still 202 while pending, then what the hold would have answered (201 with the hold, or its refusal). 404 for a claim that is not the visitor’s, or was forgotten (answers are kept 10 minutes).',
    tag: 'holds',
    security: 'admission',
    parameters: [EVENT_PARAM, CLAIM_PARAM, ENTRY_PARAM],
    responses: { 201: { description: 'Held.', json: heldAnswer }, 202: pendingAnswer },
    errors: ['ERR_NOT_FOUND', ...CLAIM_ERRORS, ...DB, 'ERR_LANE_UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/',
    summary: 'The demo page',
    description: 'The seat map page an admitted visitor sees.',
    tag: 'events',
    security: 'admission',
    responses: { 200: { description: 'The page.', media: { type: 'text/html; charset=utf-8', schema: string } } },
  },
  {
    method: 'get',
    path: '/events/:event/seats',
    summary: 'The seat map',
    description: 'Each seat free, held or sold; a hold past its expiry reads as free.',
    tag: 'events',
    security: 'admission',
    parameters: [EVENT_PARAM],
    responses: {
      200: {
        description: 'The event and its seats.',
        json: closed({
          event: eventHead,
          seats: {
            type: 'array',
            items: closed({ seat: string, row: string, number: integer(), status: { enum: ['free', 'held', 'sold'] } }),
          },
        }),
      },
    },
    errors: ['ERR_NOT_FOUND', ...DB],
  },
  {
    method: 'get',
    path: '/events/:event/items',
    summary: 'The counted items',
    description: 'Each item’s units: total, free, held and sold (expired holds count as free).',
    tag: 'events',
    security: 'admission',
    parameters: [EVENT_PARAM],
    responses: {
      200: {
        description: 'The event and its items.',
        json: closed({
          event: eventHead,
          items: {
            type: 'array',
            items: closed({ item: itemKey, name: string, total: integer(), free: integer(), held: integer(), sold: integer() }),
          },
        }),
      },
    },
    errors: ['ERR_NOT_FOUND', ...DB],
  },
  {
    method: 'post',
    path: '/holds/:hold/confirm',
    summary: 'Pay for a hold',
    description:
      'Charges outside any transaction, then books only while the hold is still the visitor’s. A repeat of the Idempotency-Key replays the first answer (ERR_HOLD_LOST with `refunded` beside `error`), or finishes a checkout the database cut off. A purchase answers Anteroom-Command: end-session.',
    tag: 'holds',
    security: 'admission',
    parameters: [
      HOLD_PARAM,
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: true,
        description: 'One per checkout: a repeat replays or finishes it.',
        schema: { type: 'string', pattern: patternOf(IDEMPOTENCY_KEY) },
      },
    ],
    responses: {
      200: {
        description: 'Booked: one ticket per seat and per unit of an item.',
        json: closed({
          booked: { const: true },
          holdId,
          chargeId: string,
          amountCents: integer(),
          tickets: {
            type: 'array',
            items: { anyOf: [closed({ id: integer(), seat: string }), closed({ id: integer(), item: itemKey, serial: integer(1) })] },
          },
        }),
        headers: { 'Anteroom-Command': { description: 'end-session: the edge ends the visitor’s session (never passed to the visitor).' } },
      },
    },
    errors: [
      ...BODY,
      'ERR_IDEMPOTENCY_KEY',
      'ERR_NOT_FOUND',
      'ERR_IDEMPOTENCY_KEY_REUSED',
      'ERR_IN_PROGRESS',
      'ERR_HOLD_LOST',
      'ERR_PAYMENT_DECLINED',
      ...DB,
    ],
  },
  {
    method: 'delete',
    path: '/holds/:hold',
    summary: 'Release a hold',
    tag: 'holds',
    security: 'admission',
    parameters: [HOLD_PARAM],
    responses: {
      200: {
        description: 'The seats freed and, for a hold with items, the items given back.',
        json: closed({ released: strings, items: { type: 'array', items: itemClaim } }, ['items']),
      },
    },
    errors: [...BODY, 'ERR_NOT_FOUND', 'ERR_HOLD_NOT_ACTIVE', ...DB],
  },
  {
    method: 'get',
    path: '/events/:event/stock',
    summary: 'What the claim gate counts, and how it is kept honest',
    tag: 'events',
    security: 'admission',
    parameters: [EVENT_PARAM],
    responses: {
      200: {
        description: 'The gate’s counts for the event (null if it holds none), its figures and the reconciler’s.',
        json: closed({
          event: string,
          counts: nullable('object', {
            properties: { free: integer(), held: integer(), sold: integer(), reconciledAt: { type: 'number' }, repairs: integer() },
            required: ['free', 'held', 'sold', 'reconciledAt', 'repairs'],
          }),
          gate: nullable('object', { properties: { failures: integer(), refused: integer(), passed: integer(), unknown: integer() } }),
          reconciler: nullable('object', {
            properties: {
              periodMs: integer(),
              runs: integer(),
              repairs: integer(),
              rebuilds: integer(),
              failures: integer(),
              lastAt: { type: 'number' },
            },
          }),
        }),
      },
    },
    errors: ['ERR_NOT_FOUND', ...DB],
  },
  {
    method: 'get',
    path: '/events/:event/invariant',
    summary: 'Whether sold = tickets = paid',
    tag: 'events',
    security: 'admission',
    parameters: [EVENT_PARAM],
    responses: {
      200: {
        description: 'The three counts and whether they agree.',
        json: closed({ sold: integer(), tickets: integer(), paid: integer(), ok: { type: 'boolean' } }),
      },
    },
    errors: ['ERR_NOT_FOUND', ...DB],
  },
]

/** Every code an admission check may answer (src/booking/verify.ts): the registry's ERR_ADMISSION_*. */
const ADMISSION_ERRORS = (Object.keys(ERRORS) as ErrorCode[]).filter((code) => code.startsWith('ERR_ADMISSION_'))

export const BOOKING_API: ApiSpec = {
  title: 'Anteroom booking origin',
  version: API_VERSION,
  description:
    'The bundled booking origin behind the waiting room: seat maps, holds, checkouts. Every route but this document and the metrics needs the edge’s Anteroom-Admission header. Generated from the code’s own schemas (src/booking/api-description.ts).',
  tags: [
    { name: 'events', description: 'What an event has.' },
    { name: 'holds', description: 'Holding, paying, releasing.' },
    { name: 'operations', description: 'Metrics and this document.' },
  ],
  securitySchemes: {
    admission: {
      type: 'apiKey',
      in: 'header',
      name: ADMISSION_HEADER,
      description: 'The edge’s admission token (ES256 JWT, checked against the edge’s /.well-known/jwks.json).',
    },
    metricsToken: { type: 'http', scheme: 'bearer', description: 'The metrics token (ANTEROOM_METRICS_TOKEN) or an admin token.' },
  },
  security: {
    none: { requirements: [], errors: [] },
    admission: { requirements: [{ admission: [] }], errors: ADMISSION_ERRORS },
    metrics: { requirements: [{ metricsToken: [] }], errors: ['ERR_UNAUTHORIZED'] },
  },
  schemas: {},
  errorMembers: {
    ERR_SEATS_TAKEN: { taken: strings, nearest: strings },
    ERR_VISITOR_LIMIT: { limit: integer(), current: integer() },
    ERR_UNKNOWN_SEATS: { unknown: strings },
    ERR_ITEMS_SHORT: { short: { type: 'array', items: closed({ item: itemKey, wanted: integer(), left: integer() }) } },
    ERR_UNKNOWN_ITEMS: { unknown: strings },
    ERR_BODY_TOO_LARGE: { limit: integer() },
    ERR_UNSUPPORTED_MEDIA_TYPE: { accepted: strings },
  },
  routes: BOOKING_ROUTES,
}

/** The booking app's OpenAPI document (made once): what GET /openapi.json answers. */
export const bookingApiDocument = documentOnce(BOOKING_API)

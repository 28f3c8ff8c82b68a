// The edge's API description: one entry per route the edge app serves (src/http/app.ts) and its admin
// API and UI (admin/routes.ts), turned into OpenAPI 3.1 by core/openapi.ts and served without
// credentials at GET /_anteroom/api/openapi.json. Settings come from ROOM_SETTINGS
// (core/settings-json-schema.ts), request bodies from the schema values the routes check them with
// (admin/inputs.ts), errors from the registry (core/errors.ts).
//
// A new route is one entry in EDGE_ROUTES: its method and path as the app registers them (`:id`),
// summary, tag, security ('none', 'admin', 'signOut', 'metrics'), parameters (with the patterns the
// code uses: import its constant), body, responses and the error codes it may answer besides its
// security's. test/openapi.test.ts fails until every route the app registers has its entry, and until
// every entry's route exists; it also checks real answers against the schemas given here.

import { ACCESS_CODES_BODY, ACCESS_LINK_BODY } from '../../admin/access.js'
import { ADMIN_COOKIE } from '../../admin/auth.js'
import { ACCOUNT_NAME, ADMIN_MODULE, AUDIT_KINDS, BULK_END_BODY, ETAG, MAX_BULK, SIGN_IN_BODY, VISITOR_ID } from '../../admin/inputs.js'
import { MS_TIME, REPORT_FORMATS } from '../../admin/report.js'
import { GRANT_ID, GRANT_KINDS, GRANT_STATES, LANES } from '../core/access.js'
import { type JsonSchema, jsonSchemaOf, patternOf } from '../core/body-schema.js'
import {
  API_VERSION,
  type ApiSpec,
  closedObject,
  documentOnce,
  nullable,
  OPENAPI_DOCUMENT_SCHEMA,
  type ParameterSpec,
  type RouteSpec,
  schemaRef,
} from '../core/openapi.js'
import { ISO_TIME, ROOM_ID, ROOM_MODES, SETTINGS_SCHEMA } from '../core/settings.js'
import { settingsJsonSchema } from '../core/settings-json-schema.js'
import { STOCK_STATES } from '../core/stock.js'
import { VISITOR_STATES } from '../core/visit.js'
import { SAMPLED_STOCKS } from '../ports/analytics-store.js'
import { REFUSAL_REASONS } from '../ports/defence-store.js'
import { DRAW_PAGE_MAX } from './draws.js'
import {
  BYPASS_RULE_SCHEMA,
  GUARD_ADMIN_ROUTES,
  GUARD_VISITOR_ROUTES,
  HUMAN_CHECK_INFO_SCHEMA,
  HUMAN_CHECK_STATUS_DESCRIPTION,
} from './guards-api-description.js'
import { QUEUE_ASSETS } from './pages.js'
import { POW_WORKER_PATH } from './pow.js'
import { PAGE_TEMPLATE_SCHEMA, TEMPLATE_ROUTES } from './template-api-description.js'

// --- schema pieces ----------------------------------------------------------------------------

const integer = (minimum = 0): JsonSchema => ({ type: 'integer', minimum })
const string: JsonSchema = { type: 'string' }
const strings: JsonSchema = { type: 'array', items: string }
const closed = closedObject
const html = { type: 'text/html; charset=utf-8', schema: string }
const roomId: JsonSchema = { type: 'string', pattern: patternOf(ROOM_ID) }
const etag: JsonSchema = { type: 'string', pattern: patternOf(ETAG) }

const SCHEDULE_STATUS = closed({
  prequeueAt: string,
  opensAt: string,
  closesAt: nullable('string'),
  prequeueInSeconds: integer(),
  opensInSeconds: integer(),
})

const CHALLENGE = closed({
  value: string,
  difficulty: integer(1),
  expiresInSeconds: integer(),
  header: { const: 'Anteroom-Pow' },
})

/** A visitor's status (core/visit.ts VisitorStatus), with `state` as given. */
function statusSchema(state: JsonSchema, more: Record<string, JsonSchema> = {}, optional: readonly string[] = []): JsonSchema {
  return closed(
    {
      room: roomId,
      state,
      position: nullable('integer', { minimum: 0, description: '1-based place in line; 0 once admitted; null without one.' }),
      ahead: nullable('integer', { minimum: 0 }),
      waiting: nullable('integer', { minimum: 0 }),
      etaSeconds: nullable('number', { minimum: 0, description: 'The estimated wait; null while nothing can be estimated.' }),
      etaRange: {
        anyOf: [{ type: 'null' }, { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false, minItems: 2 }],
        description: '[low, high] seconds around etaSeconds.',
      },
      refreshSeconds: integer(1),
      nextPollSeconds: { type: 'number', minimum: 0, description: 'Poll again after this many seconds (ms precision).' },
      ...more,
    },
    optional,
  )
}

const SCHEMAS = {
  RoomSettings: settingsJsonSchema('stored'),
  RoomSettingsReplace: settingsJsonSchema('replace'),
  RoomSettingsPatch: settingsJsonSchema('patch'),
  PageTemplate: PAGE_TEMPLATE_SCHEMA,
  VersionedRoom: closed({ settings: schemaRef('RoomSettings'), etag }),
  VisitorStatus: {
    ...statusSchema(
      { enum: [...VISITOR_STATES] },
      {
        schedule: { ...SCHEDULE_STATUS, description: 'A scheduled room: its times.' },
        ticket: { type: 'string', description: 'A scheduled room: the visitor’s ticket in the draw.' },
        draw: { ...closed({ value: string, rank: integer(1), check: string }), description: 'After the draw, for a visitor in it.' },
        lane: { enum: [...LANES], description: 'A place in a lane, from an access code or invite link: which.' },
      },
      ['schedule', 'ticket', 'draw', 'lane'],
    ),
    description: 'A visitor’s state (src/core/visit.ts): the queue page’s numbers as JSON.',
  },
  ChallengeStatus: {
    ...statusSchema({ const: 'challenge' }, { challenge: CHALLENGE, schedule: SCHEDULE_STATUS }, ['schedule']),
    description: 'A new visitor of a room with proof of work: solve the challenge, send the answer as Anteroom-Pow.',
  },
  HumanCheckStatus: {
    ...statusSchema({ const: 'human_check' }, { humanCheck: HUMAN_CHECK_INFO_SCHEMA, schedule: SCHEDULE_STATUS }, ['schedule']),
    description: HUMAN_CHECK_STATUS_DESCRIPTION,
  },
  BypassRule: BYPASS_RULE_SCHEMA,
  StockStats: nullable('object', {
    required: ['event', 'state', 'stopsAdmissions', 'free', 'held', 'sold', 'reconciledAt', 'seenAt'],
    properties: {
      event: string,
      state: { enum: [...STOCK_STATES] },
      stopsAdmissions: { type: 'boolean' },
      free: nullable('integer'),
      held: nullable('integer'),
      sold: nullable('integer'),
      reconciledAt: nullable('number'),
      seenAt: nullable('number'),
    },
    additionalProperties: false,
    description: 'A linked room’s event stock as this edge last saw it; null for a room not linked to an event.',
  }),
} satisfies Record<string, JsonSchema>

/** A code or link as the admin API shows it (admin/access.ts grantView). */
const GRANT = closed({
  id: { type: 'string', pattern: patternOf(GRANT_ID) },
  kind: { enum: [...GRANT_KINDS] },
  lane: { enum: [...LANES] },
  label: string,
  maxUses: integer(1),
  used: integer(),
  remaining: integer(),
  expiresAt: { type: 'number', description: 'ms.' },
  createdAt: { type: 'number', description: 'ms.' },
  createdBy: string,
  revokedAt: nullable('number', { description: 'ms; null while not revoked.' }),
  hint: { type: 'string', description: 'A code’s last four characters ("" for a link): codes are shown once, when made.' },
  state: { enum: [...GRANT_STATES] },
})
const LINK = closed({ grant: GRANT, token: string, link: { type: 'string', description: 'The room’s first path with ?code=<token>.' } })
const GRANT_PARAM: ParameterSpec = {
  name: 'grant',
  in: 'path',
  description: 'The code’s or link’s id.',
  schema: { type: 'string', pattern: patternOf(GRANT_ID) },
}

// --- parameters -------------------------------------------------------------------------------

const ROOM_PARAM: ParameterSpec = { name: 'id', in: 'path', description: 'The room id.', schema: roomId }
const VISITOR_PARAM: ParameterSpec = {
  name: 'visitor',
  in: 'path',
  description: 'The visitor id (the admission token’s sub).',
  schema: { type: 'string', pattern: patternOf(VISITOR_ID) },
}
const ROOM_QUERY: ParameterSpec = { name: 'room', in: 'query', required: true, description: 'The room id.', schema: roomId }

// --- answers ----------------------------------------------------------------------------------

const VERSIONED: RouteSpec['responses'] = {
  200: {
    description: 'The room’s settings and their revision.',
    json: schemaRef('VersionedRoom'),
    headers: { ETag: { description: 'The revision, for If-Match.', schema: etag } },
  },
}

/** GET /_anteroom/ready's answer: ready or not, and each check. */
const readiness = (ready: boolean): JsonSchema =>
  closed({
    ready: { const: ready },
    checks: closed({ store: { enum: ['up', 'down'] }, rooms: { enum: ['loaded', 'not loaded'] }, keys: { enum: ['loaded', 'missing'] } }),
  })

/** Refused joins, by reason (the bot defences). */
const byReason = closed(Object.fromEntries(REFUSAL_REASONS.map((reason) => [reason, integer()])))

/** A room's post-event report (core/report.ts Report): its percentiles, buckets and minutes. */
const percentile: JsonSchema = {
  anyOf: [{ type: 'null' }, closed({ le: { type: 'number' } }), closed({ gt: { type: 'number' } })],
  description:
    'Seconds: at most `le` (the upper bound of the bucket the percentile falls in), or more than `gt` (the last bucket); null when nobody was admitted.',
}
const waitBuckets: JsonSchema = {
  type: 'array',
  items: closed({ le: nullable('number', { description: 'The upper bound, seconds; null: no bound (+Inf).' }), count: integer() }),
}
const REPORT = closed({
  room: roomId,
  from: { type: 'number', description: 'The range, ms: the minutes that start in [from, to).' },
  to: { type: 'number' },
  minutesInRange: integer(),
  minutesCovered: { ...integer(), description: 'Minutes of the range with a state sample.' },
  admitted: integer(),
  abandoned: integer(),
  refused: byReason,
  resets: { ...integer(), description: 'Samples whose running totals went down: the store lost the room and counted again from 0.' },
  peakWaiting: nullable('object', {
    required: ['waiting', 't'],
    properties: { waiting: integer(), t: { type: 'number' } },
    additionalProperties: false,
  }),
  soldOutAt: nullable('number', { description: 'The first minute (ms) whose sample saw the event sold out.' }),
  timeInQueue: closed({ admissions: integer(), p50: percentile, p90: percentile, p99: percentile, buckets: waitBuckets }),
  minutes: {
    type: 'array',
    description: 'A row a stored minute, oldest first: the room at its start, and what happened in the minute up to it.',
    items: closed({
      t: { type: 'number' },
      waiting: nullable('integer'),
      active: nullable('integer'),
      stock: { enum: [...SAMPLED_STOCKS, null] },
      admitted: nullable('integer'),
      abandoned: nullable('integer'),
      refused: { anyOf: [{ type: 'null' }, byReason] },
      admissions: integer(),
      queueWait: waitBuckets,
    }),
  },
})
const REPORT_TIME = (what: string): JsonSchema => ({
  type: 'string',
  anyOf: [{ pattern: patternOf(MS_TIME) }, { pattern: patternOf(ISO_TIME) }],
  description: `${what}: ISO 8601 with a time zone, or ms since 1970.`,
})

const FILES = (type: string, what: string): RouteSpec['responses'] => ({ 200: { description: what, media: { type, schema: string } } })

// --- the routes -------------------------------------------------------------------------------

const ADMIN_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/_anteroom/admin',
    summary: 'The admin UI',
    tag: 'admin UI',
    security: 'none',
    responses: { 200: { description: 'The page (it signs in with POST /_anteroom/admin/login).', media: html } },
  },
  {
    method: 'get',
    path: '/_anteroom/admin/',
    summary: 'The admin UI, without the slash',
    tag: 'admin UI',
    security: 'none',
    responses: { 302: { description: 'To /_anteroom/admin.', headers: { Location: { description: '/_anteroom/admin' } } } },
  },
  {
    method: 'get',
    path: '/_anteroom/admin/:module',
    summary: 'The admin UI’s ES modules: app.js, and the views it imports (report.js, ...)',
    tag: 'admin UI',
    security: 'none',
    parameters: [
      {
        name: 'module',
        in: 'path',
        description: 'The module’s file name in admin/ui/.',
        schema: { type: 'string', pattern: patternOf(ADMIN_MODULE) },
      },
    ],
    errors: ['ERR_NOT_FOUND'],
    responses: FILES('text/javascript; charset=utf-8', 'The module.'),
  },
  {
    method: 'get',
    path: '/_anteroom/admin/style.css',
    summary: 'The admin UI’s style sheet',
    tag: 'admin UI',
    security: 'none',
    responses: FILES('text/css; charset=utf-8', 'The style sheet.'),
  },
  {
    method: 'post',
    path: '/_anteroom/admin/login',
    summary: 'Sign in',
    description:
      'Gives a session cookie (HttpOnly, SameSite=Strict, 8 hours) and the CSRF token every change made with it carries. Failed sign-ins are throttled per client address and account: from the 5th, 429 with Retry-After.',
    tag: 'admin',
    security: 'none',
    body: { schema: jsonSchemaOf(SIGN_IN_BODY), description: 'JSON only (Content-Type: application/json).' },
    responses: {
      200: {
        description: 'Signed in.',
        json: closed({ who: { type: 'string', pattern: patternOf(ACCOUNT_NAME) }, csrf: string }),
        headers: { 'Set-Cookie': { description: `The session: ${ADMIN_COOKIE}=...; Path=/_anteroom; HttpOnly; SameSite=Strict.` } },
      },
    },
    errors: [
      'ERR_UNSUPPORTED_MEDIA_TYPE',
      'ERR_BODY',
      'ERR_BODY_TOO_LARGE',
      'ERR_BAD_REQUEST',
      'ERR_UNAUTHORIZED',
      'ERR_TOO_MANY_ATTEMPTS',
      'ERR_STORE_UNAVAILABLE',
    ],
  },
  {
    method: 'post',
    path: '/_anteroom/api/logout',
    summary: 'Sign out',
    description: 'Ends the session on every edge and clears the cookie (in this browser even when the store does not answer: then 503).',
    tag: 'admin',
    security: 'signOut',
    responses: { 200: { description: 'Signed out.', json: closed({ ok: { const: true } }) } },
    errors: ['ERR_STORE_UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/openapi.json',
    summary: 'This document',
    description: 'The OpenAPI 3.1 description of the edge: no credentials needed, nothing in it is secret.',
    tag: 'admin',
    security: 'none',
    responses: { 200: { description: 'The OpenAPI document.', json: OPENAPI_DOCUMENT_SCHEMA } },
  },
  {
    method: 'get',
    path: '/_anteroom/api/session',
    summary: 'Who is signed in',
    tag: 'admin',
    security: 'admin',
    responses: {
      200: {
        description: 'The account, and the CSRF token of a session cookie (null with a bearer token).',
        json: closed({ who: string, csrf: nullable('string') }),
      },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/api/settings-schema',
    summary: 'The room settings’ schema, for forms',
    description: 'ROOM_SETTINGS (src/core/settings.ts) as the admin UI builds its settings form from it.',
    tag: 'rooms',
    security: 'admin',
    responses: {
      200: {
        description: 'The form’s groups and the settings in order.',
        json: closed({
          groups: { type: 'array', items: closed({ name: string, legend: string, columns: integer(1) }) },
          settings: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name', 'type', 'label', 'help', 'group'],
              properties: {
                name: string,
                type: { enum: [...new Set(SETTINGS_SCHEMA.settings.map((s) => s.type))] },
                label: string,
                help: string,
                group: nullable('string'),
              },
            },
          },
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms',
    summary: 'Every room',
    tag: 'rooms',
    security: 'admin',
    responses: {
      200: { description: 'The rooms and their revisions.', json: closed({ rooms: { type: 'array', items: schemaRef('VersionedRoom') } }) },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id',
    summary: 'A room’s settings',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM],
    responses: VERSIONED,
    errors: ['ERR_NOT_FOUND'],
  },
  ...(['patch', 'put'] as const).map(
    (method): RouteSpec => ({
      method,
      path: '/_anteroom/api/rooms/:id',
      summary: method === 'patch' ? 'Change some settings' : 'Replace the settings',
      description:
        'Compare-and-set on the revision: send If-Match with the ETag read (428 without); 412 when someone changed the room meanwhile, with their settings. Audited (settings.update).',
      tag: 'rooms',
      security: 'admin',
      parameters: [
        ROOM_PARAM,
        { name: 'If-Match', in: 'header', required: true, description: 'The ETag of the settings the change starts from.', schema: etag },
      ],
      body: { schema: schemaRef(method === 'patch' ? 'RoomSettingsPatch' : 'RoomSettingsReplace') },
      responses: VERSIONED,
      errors: ['ERR_NOT_FOUND', 'ERR_IF_MATCH_REQUIRED', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_SETTINGS_INVALID', 'ERR_STALE'],
    }),
  ),
  ...(
    [
      ['pause', 'Pause the room: the line stays, nobody new gets in'],
      ['resume', 'Resume the line (mode fifo)'],
      ['close', 'Close the room: nobody gets in'],
    ] as const
  ).map(
    ([action, summary]): RouteSpec => ({
      method: 'post',
      path: `/_anteroom/api/rooms/:id/${action}`,
      summary,
      description: `Sets the mode whatever the settings are now (no If-Match). Audited (room.${action}).`,
      tag: 'rooms',
      security: 'admin',
      parameters: [ROOM_PARAM],
      responses: VERSIONED,
      errors: ['ERR_NOT_FOUND', 'ERR_STALE'],
    }),
  ),
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/sessions/end-all',
    summary: 'End every session',
    description: 'Every edge refuses the ended admissions within a second; the visitors get no place for 24 hours. Audited.',
    tag: 'sessions',
    security: 'admin',
    parameters: [ROOM_PARAM],
    responses: { 200: { description: 'How many sessions ended.', json: closed({ ended: integer() }) } },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/sessions/end',
    summary: `End up to ${MAX_BULK} sessions`,
    description: 'One audit entry for all of them.',
    tag: 'sessions',
    security: 'admin',
    parameters: [ROOM_PARAM],
    body: { schema: jsonSchemaOf(BULK_END_BODY) },
    responses: {
      200: {
        description: 'The distinct visitors asked for, and those who had a session.',
        json: closed({ requested: integer(1), ended: integer(), endedVisitors: strings }),
      },
    },
    errors: ['ERR_NOT_FOUND', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/sessions/:visitor/end',
    summary: 'End one session',
    description: 'The visitor gets no place in line (state ended) for 24 hours, or until allowed back. Audited.',
    tag: 'sessions',
    security: 'admin',
    parameters: [ROOM_PARAM, VISITOR_PARAM],
    responses: { 200: { description: 'Whether the visitor had a session.', json: closed({ ended: { type: 'boolean' } }) } },
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/sessions/:visitor/allow',
    summary: 'Let an ended visitor back',
    description: 'They join the line at the back. Audited.',
    tag: 'sessions',
    security: 'admin',
    parameters: [ROOM_PARAM, VISITOR_PARAM],
    responses: { 200: { description: 'Whether the visitor was kept out.', json: closed({ allowed: { type: 'boolean' } }) } },
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/stats',
    summary: 'The room’s live numbers',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM],
    responses: {
      200: {
        description: 'The line, the sessions, the pace, the bot defences and the stock.',
        json: closed({
          room: roomId,
          mode: { enum: [...ROOM_MODES] },
          waiting: integer(),
          active: integer(),
          admittedLastMinute: integer(),
          ratePerMinute: integer(),
          etaBackOfLineSeconds: nullable('number', {
            minimum: 0,
            description: 'The wait of the last in line; null unless the room is a line.',
          }),
          abandonedLastMinute: integer(),
          botDefence: closed({
            powDifficulty: integer(),
            joinsPerNetworkPerMinute: integer(),
            networkPrefixIPv4: integer(),
            networkPrefixIPv6: integer(),
            refused: closed({ total: byReason, lastMinute: byReason }),
          }),
          stock: schemaRef('StockStats'),
          store: { const: 'up' },
          at: { type: 'number', description: 'The store’s time, ms.' },
        }),
      },
      503: {
        description: 'The store does not answer: what this edge knows without it.',
        json: closed({ room: roomId, mode: { enum: [...ROOM_MODES] }, stock: schemaRef('StockStats'), store: { const: 'down' } }),
      },
    },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/history',
    summary: 'The last 30 minutes',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM],
    responses: {
      200: {
        description: 'One sample per 10 s, oldest first.',
        json: closed({
          room: roomId,
          samples: {
            type: 'array',
            items: closed({
              t: { type: 'number' },
              waiting: integer(),
              active: integer(),
              admittedLastMinute: integer(),
              abandonedLastMinute: integer(),
            }),
          },
        }),
      },
    },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/report',
    summary: 'The post-event report',
    description:
      'From the minutes the analytics keep (30 days): admitted, abandoned and refused joins, the peak of the line, the first sold-out minute, time in queue (p50, p90, p99 from bucket counts) and a row a minute. JSON, or CSV (the summary, an empty line, a line a minute) with format=csv or Accept: text/csv.',
    tag: 'rooms',
    security: 'admin',
    parameters: [
      ROOM_PARAM,
      { name: 'from', in: 'query', description: 'The range’s start (a day before `to` by default).', schema: REPORT_TIME('A time') },
      {
        name: 'to',
        in: 'query',
        description: 'The range’s end, left out (now by default); at most 30 days after `from`.',
        schema: REPORT_TIME('A time'),
      },
      { name: 'format', in: 'query', description: 'json (the default) or csv.', schema: { enum: [...REPORT_FORMATS] } },
    ],
    responses: {
      200: {
        description: 'The report.',
        json: REPORT,
        media: { type: 'text/csv; charset=utf-8', schema: string },
        headers: { 'Content-Disposition': { description: 'With CSV: attachment; filename="anteroom-<room>-<from>.csv".' } },
      },
    },
    errors: ['ERR_BAD_REQUEST', 'ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/report',
    summary: 'The last simulation report',
    description: 'The HTML report of the last `npm run simulate`, if there is one.',
    tag: 'admin',
    security: 'admin',
    responses: { 200: { description: 'The report (static HTML, no script).', media: html } },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/audit',
    summary: 'The audit log',
    description: 'Who changed what, newest first. Changes of settings and mode are kept 90 days; other entries, the newest 1,000.',
    tag: 'admin',
    security: 'admin',
    parameters: [
      {
        name: 'limit',
        in: 'query',
        description: 'At most this many (clamped to 1-1,000).',
        schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
      },
      { name: 'kind', in: 'query', description: 'One kind of entry only.', schema: { enum: [...AUDIT_KINDS] } },
    ],
    responses: {
      200: {
        description: 'The entries.',
        json: closed({
          entries: {
            type: 'array',
            items: closed({
              at: { type: 'string', format: 'date-time' },
              who: string,
              action: string,
              room: nullable('string'),
              before: {},
              after: {},
            }),
          },
        }),
      },
    },
    errors: ['ERR_BAD_REQUEST'],
  },
  // A room's bypass rules and human check (admin/bypass.ts; src/http/guards-api-description.ts).
  ...GUARD_ADMIN_ROUTES,
]

/** Access codes and invite links (admin/access.ts). */
const ACCESS_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/access',
    summary: 'A room’s access codes and invite links',
    description: 'Newest first, with their uses; the separate lane’s limits and line. Codes themselves are never listed.',
    tag: 'access',
    security: 'admin',
    parameters: [
      ROOM_PARAM,
      { name: 'offset', in: 'query', description: 'The first, 0-based.', schema: { type: 'integer', minimum: 0, default: 0 } },
      {
        name: 'limit',
        in: 'query',
        description: 'At most this many.',
        schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
      },
    ],
    responses: {
      200: {
        description: 'The grants.',
        json: closed({
          room: roomId,
          takesCodes: { type: 'boolean', description: 'The room’s accessCodes is on: codes and links work.' },
          lane: closed({
            activeUsers: integer(),
            usersPerMinute: integer(1),
            line: {
              anyOf: [{ type: 'null' }, closed({ waiting: integer(), active: integer() })],
              description: 'The separate lane’s line as the store has it; null without one (or while the store is away).',
            },
          }),
          total: integer(),
          offset: integer(),
          grants: { type: 'array', items: GRANT },
        }),
      },
    },
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/access/codes',
    summary: 'Make access codes',
    description: 'Each code has its own uses. The codes are in this answer only: the store keeps their MACs. Audited (access.create).',
    tag: 'access',
    security: 'admin',
    parameters: [ROOM_PARAM],
    body: { schema: jsonSchemaOf(ACCESS_CODES_BODY) },
    responses: {
      201: {
        description: 'The grants, and the codes in the same order (XXXX-XXXX-XXXX-XXXX).',
        json: closed({ grants: { type: 'array', items: GRANT }, codes: strings }),
      },
    },
    errors: ['ERR_NOT_FOUND', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/access/links',
    summary: 'Make an invite link',
    description: 'A token signed under the queue secret (its room, lane, uses and expiry), counted and revocable in the store. Audited.',
    tag: 'access',
    security: 'admin',
    parameters: [ROOM_PARAM],
    body: { schema: jsonSchemaOf(ACCESS_LINK_BODY) },
    responses: { 201: { description: 'The link.', json: LINK } },
    errors: ['ERR_NOT_FOUND', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_BAD_REQUEST'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/access/:grant/link',
    summary: 'An invite link again',
    description: 'Signed again from its terms. A code is shown once only: 404 for one.',
    tag: 'access',
    security: 'admin',
    parameters: [ROOM_PARAM, GRANT_PARAM],
    responses: { 200: { description: 'The link.', json: LINK } },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/access/:grant/revoke',
    summary: 'Revoke a code or link',
    description: 'No edge redeems it from now on; places it gave are kept. Audited (access.revoke).',
    tag: 'access',
    security: 'admin',
    parameters: [ROOM_PARAM, GRANT_PARAM],
    responses: { 200: { description: 'The grant, revoked.', json: closed({ grant: GRANT }) } },
    errors: ['ERR_NOT_FOUND'],
  },
]

const EDGE_OWN_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/.well-known/jwks.json',
    summary: 'The public keys admissions are signed with',
    description: 'Origins check the Anteroom-Admission header (ES256) with these keys only.',
    tag: 'origins',
    security: 'none',
    responses: {
      200: {
        description: 'The JWKS.',
        json: closed({
          keys: {
            type: 'array',
            items: {
              type: 'object',
              required: ['kty', 'kid', 'alg', 'use'],
              properties: {
                kty: { const: 'EC' },
                crv: { const: 'P-256' },
                x: string,
                y: string,
                kid: string,
                alg: { const: 'ES256' },
                use: { const: 'sig' },
              },
            },
          },
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/health',
    summary: 'Whether the store answers',
    tag: 'operations',
    security: 'none',
    responses: {
      200: { description: 'The store answers.', json: closed({ ok: { const: true }, store: { const: 'up' } }) },
      503: { description: 'The store does not answer.', json: closed({ ok: { const: false }, store: { const: 'down' } }) },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/live',
    summary: 'Liveness',
    description: 'The process answers; no store call. Restart it if it does not.',
    tag: 'operations',
    security: 'none',
    responses: { 200: { description: 'Alive.', json: closed({ live: { const: true } }) } },
  },
  {
    method: 'get',
    path: '/_anteroom/ready',
    summary: 'Readiness',
    description: 'The store answers, the rooms were loaded and the signing keys are there; 503 says which check failed.',
    tag: 'operations',
    security: 'none',
    responses: { 200: { description: 'Ready.', json: readiness(true) }, 503: { description: 'Not ready.', json: readiness(false) } },
  },
  {
    method: 'get',
    path: '/_anteroom/metrics',
    summary: 'Prometheus metrics',
    description: 'This edge’s counters and histograms, and the rooms as it last saw them. 404 when metrics are switched off.',
    tag: 'operations',
    security: 'metrics',
    responses: { 200: { description: 'The Prometheus text format.', media: { type: 'text/plain; version=0.0.4', schema: string } } },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'get',
    path: '/_anteroom/status',
    summary: 'A visitor’s place in line',
    description:
      'The queue page’s numbers as JSON, for the visitor of the queue cookie (a new one joins the line). Poll again after nextPollSeconds. Any protected URL asked with Accept: application/json answers the same.',
    tag: 'visitors',
    security: 'none',
    parameters: [
      ROOM_QUERY,
      {
        name: 'Anteroom-Pow',
        in: 'header',
        description: 'A solved challenge, <challenge>.<nonce>, in a room with proof of work.',
        schema: string,
      },
      {
        name: 'Anteroom-Human-Check',
        in: 'header',
        description: 'The token of the human check’s widget, in a room with a human check (humanCheck turnstile).',
        schema: string,
      },
      {
        name: 'code',
        in: 'query',
        description: 'An access code or an invite link’s token to redeem first, in a room that takes them (accessCodes on).',
        schema: string,
      },
    ],
    responses: {
      200: {
        description: 'The visitor’s status, or the challenge to solve first.',
        json: { anyOf: [schemaRef('VisitorStatus'), schemaRef('ChallengeStatus'), schemaRef('HumanCheckStatus')] },
        headers: { 'Set-Cookie': { description: 'The queue cookie (re-signed every poll), or the admission cookie once admitted.' } },
      },
      503: { description: 'The store does not answer (state busy).', json: schemaRef('VisitorStatus') },
    },
    errors: [
      'ERR_NOT_FOUND',
      'ERR_BAD_REQUEST',
      'ERR_POW_INVALID',
      'ERR_POW_EXPIRED',
      'ERR_POW_INSUFFICIENT',
      'ERR_TOO_MANY_JOINS',
      'ERR_HUMAN_CHECK_UNAVAILABLE',
      'ERR_ACCESS_INVALID',
      'ERR_ACCESS_USED_UP',
      'ERR_ACCESS_EXPIRED',
      'ERR_ACCESS_REVOKED',
      'ERR_TOO_MANY_CODES',
    ],
  },
  {
    method: 'get',
    path: '/_anteroom/draw',
    summary: 'A scheduled room’s draw, to check',
    description:
      'The commitment from the start of the pre-queue; after the opening, the seed and the draw in rank order (README, "Checking a draw").',
    tag: 'visitors',
    security: 'none',
    parameters: [
      ROOM_QUERY,
      { name: 'offset', in: 'query', description: 'The first rank, 0-based.', schema: { type: 'integer', minimum: 0, default: 0 } },
      {
        name: 'limit',
        in: 'query',
        description: 'At most this many entries.',
        schema: { type: 'integer', minimum: 0, maximum: DRAW_PAGE_MAX, default: DRAW_PAGE_MAX },
      },
    ],
    responses: {
      200: {
        description: 'The draw as far as it is known.',
        json: closed(
          {
            room: roomId,
            prequeueAt: string,
            opensAt: string,
            state: { enum: ['scheduled', 'prequeue', 'drawn'] },
            commitment: nullable('string'),
            seed: string,
            entrants: integer(),
            formula: { type: 'object', additionalProperties: string },
            offset: integer(),
            limit: integer(),
            draw: { type: 'array', items: closed({ rank: integer(1), ticket: string, value: string }) },
          },
          ['seed', 'entrants', 'formula', 'offset', 'limit', 'draw'],
        ),
      },
    },
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST', 'ERR_STORE_UNAVAILABLE'],
  },
  {
    method: 'get',
    path: POW_WORKER_PATH,
    summary: 'The proof-of-work solver',
    description: 'Run by the challenge page in Web Workers.',
    tag: 'visitors',
    security: 'none',
    responses: FILES('text/javascript; charset=utf-8', 'The script.'),
  },
  ...Object.values(QUEUE_ASSETS).map(
    (asset): RouteSpec => ({
      method: 'get',
      path: asset.path,
      summary: `The queue page’s ${asset.path.endsWith('.css') ? 'style sheet' : 'script'}`,
      tag: 'visitors',
      security: 'none',
      parameters: [
        { name: 'v', in: 'query', description: 'The version in the page’s link: with the current one, cached a year.', schema: string },
      ],
      responses: FILES(asset.type, 'The file.'),
    }),
  ),
  // The human check page's script (src/http/guards-api-description.ts).
  ...GUARD_VISITOR_ROUTES,
]

/** The edge's routes: its own, then the admin API's and UI's (admin/routes.ts, under /_anteroom). */
export const EDGE_ROUTES: readonly RouteSpec[] = [...EDGE_OWN_ROUTES, ...ADMIN_ROUTES, ...ACCESS_ROUTES, ...TEMPLATE_ROUTES]

const ADMIN_SECURITY = {
  requirements: [{ adminToken: [] }, { adminSession: [] }],
  onChange: { requirements: [{ adminToken: [] }, { adminSession: [], csrfToken: [] }], errors: ['ERR_CSRF'] },
  errors: ['ERR_UNAUTHORIZED', 'ERR_TOO_MANY_ATTEMPTS', 'ERR_STORE_UNAVAILABLE'],
} as const

export const EDGE_API: ApiSpec = {
  title: 'Anteroom edge',
  version: API_VERSION,
  description:
    'The waiting room’s own endpoints (a visitor’s status, the draw, the keys origins check admissions with, health, readiness and metrics) and the admin API. Generated from the code’s own schemas (src/http/api-description.ts); errors are `{ "error": { "code", "message", "field"? } }` with the codes of docs/errors.md.',
  tags: [
    { name: 'visitors', description: 'What the queue page and apps read.' },
    { name: 'origins', description: 'What origins check admissions with.' },
    { name: 'operations', description: 'Health, liveness, readiness, metrics.' },
    { name: 'admin', description: 'Signing in, the audit log, this document.' },
    { name: 'rooms', description: 'Room settings and numbers.' },
    { name: 'sessions', description: 'Ending sessions and letting visitors back.' },
    { name: 'access', description: 'Access codes and invite links: lanes before the public line or apart from it.' },
    { name: 'templates', description: 'Page templates: a room’s own queue page, and previews of every state and language.' },
    { name: 'admin UI', description: 'The admin page and its files.' },
  ],
  securitySchemes: {
    adminToken: {
      type: 'http',
      scheme: 'bearer',
      description: 'An admin token (ANTEROOM_ADMIN_TOKEN, ANTEROOM_ADMIN_TOKENS). Wrong ones are throttled per client address.',
    },
    adminSession: { type: 'apiKey', in: 'cookie', name: ADMIN_COOKIE, description: 'The session cookie of POST /_anteroom/admin/login.' },
    csrfToken: {
      type: 'apiKey',
      in: 'header',
      name: 'X-CSRF-Token',
      description: 'The csrf of the sign-in (or of GET /_anteroom/api/session): every change made with the session cookie carries it.',
    },
    metricsToken: { type: 'http', scheme: 'bearer', description: 'The metrics token (ANTEROOM_METRICS_TOKEN).' },
  },
  security: {
    none: { requirements: [], errors: [] },
    admin: ADMIN_SECURITY,
    signOut: { requirements: [{}, { adminSession: [], csrfToken: [] }], errors: ['ERR_CSRF'] },
    metrics: { requirements: [{ metricsToken: [] }, { adminToken: [] }], errors: ['ERR_UNAUTHORIZED'] },
  },
  schemas: SCHEMAS,
  errorMembers: {
    ERR_STALE: {
      current: { anyOf: [schemaRef('RoomSettings'), schemaRef('PageTemplate'), { type: 'null' }], description: 'What is there now.' },
      etag: { anyOf: [etag, { type: 'null' }] },
    },
    ERR_TEMPLATE_INVALID: { line: { type: 'integer', minimum: 1, description: 'The source’s line the problem is on.' } },
    ERR_TEMPLATE_IN_USE: { rooms: { type: 'array', items: string, description: 'The rooms whose template it is.' } },
    ERR_TOO_MANY_ATTEMPTS: { retryAfterSeconds: integer(1) },
    ERR_TOO_MANY_JOINS: { retryAfterSeconds: integer(1) },
    ERR_TOO_MANY_CODES: { retryAfterSeconds: integer(1) },
    ERR_POW_INVALID: { challenge: CHALLENGE },
    ERR_POW_EXPIRED: { challenge: CHALLENGE },
    ERR_POW_INSUFFICIENT: { challenge: CHALLENGE },
  },
  routes: EDGE_ROUTES,
}

/** The edge's OpenAPI document (made once): what GET /_anteroom/api/openapi.json answers. */
export const edgeApiDocument = documentOnce(EDGE_API)

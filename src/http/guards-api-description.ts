// The API description of the bypass rules and the human check (admin/bypass.ts, human-check*.ts), one
// entry a route, for the edge's route table (api-description.ts): the human check's script and status,
// and the admin routes of a room's rules.

import { type JsonSchema, patternOf } from '../core/body-schema.js'
import { BYPASS_KINDS, BYPASS_RULE_ID } from '../core/bypass.js'
import { CRAWLER_NAMES } from '../core/crawlers.js'
import { HUMAN_CHECK_COUNTED, HUMAN_CHECK_MODES, HUMAN_CHECK_ON_ERROR } from '../core/human-check.js'
import { closedObject, type ParameterSpec, type RouteSpec, schemaRef } from '../core/openapi.js'
import { ROOM_ID } from '../core/settings.js'
import { bypassRuleSchema } from '../core/settings-json-schema.js'
import { HUMAN_CHECK_SCRIPT_PATH } from './human-check-page.js'

const string: JsonSchema = { type: 'string' }
const strings: JsonSchema = { type: 'array', items: string }
const count: JsonSchema = { type: 'integer', minimum: 0 }
const etag: JsonSchema = { type: 'string', pattern: '^"rev-(\\d+)"$' }
const byOutcome = (names: readonly string[]) => closedObject(Object.fromEntries(names.map((n) => [n, count])))

/** A bypass rule (core/bypass.ts), as the `bypass` setting holds it. */
export const BYPASS_RULE_SCHEMA: JsonSchema = {
  ...bypassRuleSchema(),
  description: 'A bypass rule: its id names it in the admission’s bypass claim, the metrics and the log.',
}

/** The widget, as a JSON client gets it in the status body (core/human-check.ts HumanCheckInfo). */
export const HUMAN_CHECK_INFO_SCHEMA: JsonSchema = closedObject({
  siteKey: string,
  action: string,
  cData: string,
  header: { const: 'Anteroom-Human-Check' },
  scriptUrl: string,
})

const ROOM_PARAM: ParameterSpec = {
  name: 'id',
  in: 'path',
  description: 'The room id.',
  schema: { type: 'string', pattern: patternOf(ROOM_ID) },
}
const RULE_PARAM: ParameterSpec = {
  name: 'rule',
  in: 'path',
  description: 'The rule’s id.',
  schema: { type: 'string', pattern: patternOf(BYPASS_RULE_ID) },
}
const IF_MATCH: ParameterSpec = {
  name: 'If-Match',
  in: 'header',
  description: 'The room’s ETag: the change applies to that revision only (412 otherwise). Without it, to the settings as they are.',
  schema: etag,
}
const CHANGED = (what: string, member: 'rule' | 'removed'): RouteSpec['responses'][number] => ({
  description: what,
  json: closedObject({ [member]: schemaRef('BypassRule'), etag }),
  headers: { ETag: { description: 'The room’s new revision.', schema: etag } },
})
const RULE_ERRORS = ['ERR_NOT_FOUND', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_SETTINGS_INVALID', 'ERR_STALE'] as const

/** The human check's script (visitors). */
export const GUARD_VISITOR_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: HUMAN_CHECK_SCRIPT_PATH,
    summary: 'The human check page’s script',
    description: 'Renders the provider’s widget and sends its token with a status request (Anteroom-Human-Check).',
    tag: 'visitors',
    security: 'none',
    parameters: [
      { name: 'v', in: 'query', description: 'The version in the page’s link: with the current one, cached a year.', schema: string },
    ],
    responses: { 200: { description: 'The script.', media: { type: 'text/javascript; charset=utf-8', schema: string } } },
  },
]

/** A room's bypass rules and human check (admin). */
export const GUARD_ADMIN_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/bypass',
    summary: 'The room’s bypass rules and human check',
    description:
      'What the Bypass & checks view shows: the rules, the human check’s settings and this edge’s provider, the secrets and crawlers a rule may name, and this edge’s counts since it started (on a Worker, one isolate’s; Prometheus adds up every edge’s).',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM],
    responses: {
      200: {
        description: 'The rules and the counts.',
        json: closedObject({
          room: { type: 'string', pattern: patternOf(ROOM_ID) },
          etag,
          rules: { type: 'array', items: schemaRef('BypassRule') },
          humanCheck: closedObject({
            mode: { enum: [...HUMAN_CHECK_MODES] },
            onError: { enum: [...HUMAN_CHECK_ON_ERROR] },
            provider: { anyOf: [{ type: 'null' }, closedObject({ siteKey: string, scriptUrl: string })] },
          }),
          kinds: { type: 'array', items: { enum: [...BYPASS_KINDS] } },
          secrets: { ...strings, description: 'The names of ANTEROOM_BYPASS_SECRETS (never a secret).' },
          crawlers: { type: 'array', items: closedObject({ name: { enum: [...CRAWLER_NAMES] }, label: string, domains: strings }) },
          crawlerChecks: { type: 'boolean', description: 'Whether this edge can check crawlers (it has a resolver).' },
          counts: closedObject({
            rules: { type: 'object', additionalProperties: count, description: 'Requests each rule let past, by rule id.' },
            humanCheck: byOutcome(HUMAN_CHECK_COUNTED),
            shadowVisits: count,
            crawlerChecks: byOutcome(['verified', 'refused', 'error']),
            crawlerLookups: byOutcome(['verified', 'refused', 'error']),
          }),
        }),
        headers: { ETag: { description: 'The room’s revision, for If-Match.', schema: etag } },
      },
    },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'post',
    path: '/_anteroom/api/rooms/:id/bypass/rules',
    summary: 'Add a bypass rule',
    description:
      'A 400 names the bad member: an invalid or too wide block, bits past a prefix, a path not in canonical form or outside the room’s paths, an unknown crawler or secret, an id the room has. Audited (bypass.add).',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM, IF_MATCH],
    body: { schema: schemaRef('BypassRule') },
    responses: { 201: CHANGED('The rule as stored, and the room’s new revision.', 'rule') },
    errors: [...RULE_ERRORS],
  },
  {
    method: 'put',
    path: '/_anteroom/api/rooms/:id/bypass/rules/:rule',
    summary: 'Replace a bypass rule',
    description: 'The body is the rule; its id, if given, must be the path’s. Audited (bypass.update).',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM, RULE_PARAM, IF_MATCH],
    body: { schema: { description: 'A rule (its id may be left out).', type: 'object' } },
    responses: { 200: CHANGED('The rule as stored, and the room’s new revision.', 'rule') },
    errors: [...RULE_ERRORS],
  },
  {
    method: 'delete',
    path: '/_anteroom/api/rooms/:id/bypass/rules/:rule',
    summary: 'Remove a bypass rule',
    description: 'Audited (bypass.remove).',
    tag: 'rooms',
    security: 'admin',
    parameters: [ROOM_PARAM, RULE_PARAM, IF_MATCH],
    responses: { 200: CHANGED('The rule removed, and the room’s new revision.', 'removed') },
    errors: ['ERR_NOT_FOUND', 'ERR_STALE'],
  },
]

/** The status body of a newcomer who must pass the human check first. */
export const HUMAN_CHECK_STATUS_DESCRIPTION =
  'A new visitor of a room with a human check: run the widget, send its token as Anteroom-Human-Check.'

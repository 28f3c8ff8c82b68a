// The API description of the page template routes (admin/templates.ts), one entry a route, for the
// edge's route table (api-description.ts): the templates, the variables they may use, and previews.
import { TEMPLATE_BODY } from '../../admin/templates.js'
import { type JsonSchema, jsonSchemaOf, patternOf } from '../core/body-schema.js'
import { LOCALE_TAGS } from '../core/locales.js'
import { closedObject, nullable, type ParameterSpec, type RouteSpec, schemaRef } from '../core/openapi.js'
import { TEMPLATE_NAME, TEMPLATE_STATES } from '../core/page-template.js'
import { ROOM_ID } from '../core/settings.js'

const string: JsonSchema = { type: 'string' }
const strings: JsonSchema = { type: 'array', items: string }
const etag: JsonSchema = { type: 'string', pattern: '^"rev-(\\d+)"$' }
const html = { type: 'text/html; charset=utf-8', schema: string }

/** A page template as stored (core/page-template.ts PageTemplate). */
export const PAGE_TEMPLATE_SCHEMA: JsonSchema = {
  ...closedObject({ name: { type: 'string', pattern: patternOf(TEMPLATE_NAME) }, source: string, stylesheet: nullable('string') }),
  description: 'A room’s own queue page body: a mustache template rendered inside the edge’s shell.',
}

const NAME_PARAM: ParameterSpec = {
  name: 'name',
  in: 'path',
  description: 'The template’s name: 1-64 lower-case letters, digits or dashes.',
  schema: { type: 'string', pattern: patternOf(TEMPLATE_NAME) },
}
const PREVIEW_PARAMS: ParameterSpec[] = [
  { name: 'state', in: 'query', description: 'The state to show (queued by default).', schema: { enum: [...TEMPLATE_STATES] } },
  { name: 'lang', in: 'query', description: 'The language (the room’s locale, or en, by default).', schema: { enum: [...LOCALE_TAGS] } },
]
const VERSIONED: RouteSpec['responses'][number] = {
  description: 'The template and its revision.',
  json: closedObject({ template: schemaRef('PageTemplate'), etag }),
  headers: { ETag: { description: 'The revision, for If-Match.', schema: etag } },
}
const PREVIEW = {
  200: {
    description:
      'The page as HTML with sample values, without its script: for a frame of the admin UI (frame-ancestors self). Its policy names the template’s style sheet.',
    media: html,
  },
}

export const TEMPLATE_ROUTES: RouteSpec[] = [
  {
    method: 'get',
    path: '/_anteroom/api/template-variables',
    summary: 'What a page template may use',
    description:
      'The documented variables (the t texts’ keys among them), the states and languages of previews, and the allowed style sheet origins.',
    tag: 'templates',
    security: 'admin',
    responses: {
      200: {
        description: 'Variables, states, languages, style sheet origins and the size limit.',
        json: closedObject({
          variables: {
            type: 'array',
            items: closedObject({ name: string, kind: { enum: ['text', 'flag', 'object'] }, what: string, keys: strings }, ['keys']),
          },
          states: { type: 'array', items: closedObject({ state: { enum: [...TEMPLATE_STATES] }, flag: string }) },
          locales: { type: 'array', items: closedObject({ tag: { enum: [...LOCALE_TAGS] }, name: string, dir: { enum: ['ltr', 'rtl'] } }) },
          styleOrigins: strings,
          maxChars: { type: 'integer', minimum: 1 },
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/api/templates',
    summary: 'Every page template',
    tag: 'templates',
    security: 'admin',
    responses: {
      200: {
        description: 'The templates, their revisions and the rooms that use each.',
        json: closedObject({
          templates: { type: 'array', items: closedObject({ template: schemaRef('PageTemplate'), etag, rooms: strings }) },
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/_anteroom/api/templates/:name',
    summary: 'A page template',
    tag: 'templates',
    security: 'admin',
    parameters: [NAME_PARAM],
    responses: { 200: VERSIONED },
    errors: ['ERR_NOT_FOUND'],
  },
  {
    method: 'put',
    path: '/_anteroom/api/templates/:name',
    summary: 'Make or change a page template',
    description:
      'If-None-Match: * makes a new one (201), If-Match: its ETag changes it (412 with the current one when someone changed it first; 428 without either). Checked: mustache syntax, only documented variables, no {{{raw}}}, no script, style=, inline event handler, <link> or head element, at most 32,768 characters, the style sheet’s origin in ANTEROOM_TEMPLATE_STYLE_ORIGINS; a refusal names the field and, for the source, the line. Audited (template.create, template.update); every edge uses it within a second.',
    tag: 'templates',
    security: 'admin',
    parameters: [
      NAME_PARAM,
      { name: 'If-Match', in: 'header', description: 'The ETag of the template the change starts from.', schema: etag },
      { name: 'If-None-Match', in: 'header', description: '* to make a new template.', schema: { const: '*' } },
    ],
    body: { schema: jsonSchemaOf(TEMPLATE_BODY) },
    responses: { 200: VERSIONED, 201: { ...VERSIONED, description: 'Made.' } },
    errors: ['ERR_IF_MATCH_REQUIRED', 'ERR_BODY', 'ERR_BODY_TOO_LARGE', 'ERR_TEMPLATE_INVALID', 'ERR_STALE'],
  },
  {
    method: 'delete',
    path: '/_anteroom/api/templates/:name',
    summary: 'Remove a page template',
    description: 'Needs If-Match; refused (409, with the rooms) while a room uses it. Audited (template.delete).',
    tag: 'templates',
    security: 'admin',
    parameters: [NAME_PARAM, { name: 'If-Match', in: 'header', required: true, description: 'The ETag read.', schema: etag }],
    responses: { 200: { description: 'Removed.', json: closedObject({ deleted: string }) } },
    errors: ['ERR_NOT_FOUND', 'ERR_IF_MATCH_REQUIRED', 'ERR_TEMPLATE_IN_USE', 'ERR_STALE'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/templates/:name/preview',
    summary: 'A template’s page, in a state and a language, with sample values',
    tag: 'templates',
    security: 'admin',
    parameters: [
      NAME_PARAM,
      ...PREVIEW_PARAMS,
      {
        name: 'room',
        in: 'query',
        description: 'A room whose title, message and refresh to show.',
        schema: { type: 'string', pattern: patternOf(ROOM_ID) },
      },
    ],
    responses: PREVIEW,
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST', 'ERR_TEMPLATE_INVALID'],
  },
  {
    method: 'get',
    path: '/_anteroom/api/rooms/:id/preview',
    summary: 'A room’s page as its visitors see it, in a state and a language, with sample values',
    description: 'Its template, or the built-in page.',
    tag: 'templates',
    security: 'admin',
    parameters: [
      { name: 'id', in: 'path', description: 'The room id.', schema: { type: 'string', pattern: patternOf(ROOM_ID) } },
      ...PREVIEW_PARAMS,
    ],
    responses: PREVIEW,
    errors: ['ERR_NOT_FOUND', 'ERR_BAD_REQUEST', 'ERR_TEMPLATE_INVALID'],
  },
]

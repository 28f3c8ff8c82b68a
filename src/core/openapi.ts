// The OpenAPI 3.1 generator: an app's route table (one entry per route: src/http/api-description.ts for
// the edge and its admin API, src/booking/api-description.ts for the booking origin) becomes an OpenAPI
// 3.1.0 document in the JSON Schema 2020-12 dialect. Schemas come from what the code checks with
// (core/body-schema.ts, core/settings-json-schema.ts); error answers from the registry
// (core/errors.ts): a route names the codes it may answer, the registry gives each its status, and
// each code's body is `{ error: { code, message, field?, ...members } }`. Plain data in, plain JSON out.
import type { JsonSchema } from './body-schema.js'
import { ERRORS, type ErrorCode, errorSpec } from './errors.js'

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete'

export interface ParameterSpec {
  name: string
  in: 'path' | 'query' | 'header'
  description: string
  /** Path parameters always are. */
  required?: boolean
  schema: JsonSchema
}

export interface ResponseSpec {
  description: string
  /** A JSON body (application/json). */
  json?: JsonSchema
  /** A body of another media type (text/html; charset=utf-8, text/plain; version=0.0.4, ...). */
  media?: { type: string; schema?: JsonSchema }
  headers?: Readonly<Record<string, { description: string; schema?: JsonSchema }>>
}

/** One route of an app: one entry of its table. */
export interface RouteSpec {
  method: HttpMethod
  /** As the app registers it with Hono: `/_anteroom/api/rooms/:id`. */
  path: string
  summary: string
  description?: string
  tag: string
  /** Who may call it: a key of the API's `security`. */
  security: string
  /** Every `:name` of the path needs one (in: 'path'); the generator refuses a table where one is missing. */
  parameters?: readonly ParameterSpec[]
  body?: { schema: JsonSchema; description?: string; required?: boolean }
  /** The answers that are not errors, by status. */
  responses: Readonly<Record<number, ResponseSpec>>
  /** The error codes it may answer besides its security's and ERR_INTERNAL; the registry gives their statuses. */
  errors?: readonly ErrorCode[]
}

/** Who may call a route, as OpenAPI security requirements (any one will do), and the errors that come with them. */
export interface SecuritySpec {
  /** Each is a requirement (schemes that go together); none at all: anyone. */
  requirements: readonly Readonly<Record<string, readonly string[]>>[]
  /** For a change (not GET): requirements instead of `requirements`, and errors besides `errors`. */
  onChange?: { requirements: readonly Readonly<Record<string, readonly string[]>>[]; errors: readonly ErrorCode[] }
  errors: readonly ErrorCode[]
}

export interface ApiSpec {
  title: string
  version: string
  description: string
  tags: readonly { name: string; description: string }[]
  securitySchemes: Readonly<Record<string, JsonSchema>>
  security: Readonly<Record<string, SecuritySpec>>
  /** Named schemas (components/schemas), referred to as `#/components/schemas/<name>` (schemaRef). */
  schemas: Readonly<Record<string, JsonSchema>>
  /** Members some codes add to `error` beside code, message and field (docs/errors.md). */
  errorMembers?: Readonly<Partial<Record<ErrorCode, Readonly<Record<string, JsonSchema>>>>>
  routes: readonly RouteSpec[]
}

export const OPENAPI_VERSION = '3.1.0'
/** The version the documents carry: the package's (package.json). */
export const API_VERSION = '0.1.0'
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

/** Any route may fail unexpectedly; its answer is then ERR_INTERNAL, logged. */
const ALWAYS: readonly ErrorCode[] = ['ERR_INTERNAL']

export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` })

/** `type` or null. */
export const nullable = (type: string, more: JsonSchema = {}): JsonSchema => ({ type: [type, 'null'], ...more })

/**
 * An object with these members and no others, all there but the `optional` ones: what an app answers,
 * so that a member it starts to send is not answered undescribed (test/openapi.test.ts checks answers).
 */
export function closedObject(properties: Readonly<Record<string, JsonSchema>>, optional: readonly string[] = []): JsonSchema {
  return {
    type: 'object',
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    properties: { ...properties },
    additionalProperties: false,
  }
}

/** A Hono path as an OpenAPI path: `/rooms/:id` → `/rooms/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

/** The names of a Hono path's parameters, in order. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1] as string)
}

/** An OpenAPI document, as the route that serves one answers it. */
export const OPENAPI_DOCUMENT_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: { openapi: { const: OPENAPI_VERSION }, info: { type: 'object' }, paths: { type: 'object' } },
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/** getAnteroomApiRoomsById: the method and the path's words, unique per route. */
function operationId(route: RouteSpec): string {
  const words = route.path
    .split('/')
    .filter((s) => s !== '')
    .map((s) =>
      s.startsWith(':')
        ? `By${capital(s.slice(1))}`
        : s
            .split(/[^A-Za-z0-9]+/)
            .map(capital)
            .join(''),
    )
  const slash = route.path.length > 1 && route.path.endsWith('/') ? 'Slash' : ''
  return `${route.method}${words.join('') || 'Root'}${slash}`
}

/** The body of one error code: `{ error: { code, message, field?, ...members } }`. */
function errorSchema(code: ErrorCode, members: Readonly<Record<string, JsonSchema>> = {}): JsonSchema {
  return {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { const: code },
          message: { type: 'string', description: 'What was wrong, for people; from 500 on the registry’s text.' },
          field: { type: 'string', description: 'The input that was wrong (a body member, a parameter, a header).' },
          ...members,
        },
      },
    },
    description: ERRORS[code].api,
  }
}

/** The codes a route may answer, by status (ascending). */
function errorsByStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const by = new Map<number, ErrorCode[]>()
  for (const code of new Set(codes)) {
    const status = ERRORS[code].status
    by.set(status, [...(by.get(status) ?? []), code])
  }
  return new Map([...by].sort(([a], [b]) => a - b))
}

function responseObject(spec: ResponseSpec): JsonSchema {
  const content: JsonSchema = {}
  if (spec.json !== undefined) content['application/json'] = { schema: spec.json }
  if (spec.media !== undefined) content[spec.media.type] = spec.media.schema === undefined ? {} : { schema: spec.media.schema }
  return {
    description: spec.description,
    ...(spec.headers === undefined
      ? {}
      : {
          headers: Object.fromEntries(
            Object.entries(spec.headers).map(([name, h]) => [name, { description: h.description, schema: h.schema ?? { type: 'string' } }]),
          ),
        }),
    ...(Object.keys(content).length === 0 ? {} : { content }),
  }
}

function operation(api: ApiSpec, route: RouteSpec, used: Set<ErrorCode>): JsonSchema {
  const security = api.security[route.security]
  if (security === undefined) throw new TypeError(`${route.method} ${route.path}: no security "${route.security}"`)
  const named = pathParameters(route.path)
  const params = route.parameters ?? []
  for (const name of named) {
    if (!params.some((p) => p.in === 'path' && p.name === name)) throw new TypeError(`${route.method} ${route.path}: describe :${name}`)
  }
  for (const p of params) {
    if (p.in === 'path' && !named.includes(p.name)) throw new TypeError(`${route.method} ${route.path}: no :${p.name} in the path`)
  }
  const change = route.method !== 'get' && security.onChange !== undefined
  const requirements = change ? security.onChange?.requirements : security.requirements
  const codes = [...security.errors, ...(change ? (security.onChange?.errors ?? []) : []), ...(route.errors ?? []), ...ALWAYS]
  const responses: Record<string, JsonSchema> = {}
  for (const [status, spec] of Object.entries(route.responses)) responses[status] = responseObject(spec)
  for (const [status, errors] of errorsByStatus(codes)) {
    for (const code of errors) used.add(code)
    const schema = errors.length === 1 ? schemaRef(errors[0] as ErrorCode) : { anyOf: errors.map(schemaRef) }
    const described = errors.map((code) => `- \`${code}\`: ${ERRORS[code].api}`).join('\n')
    const retry = errors.some((code) => errorSpec(code).retryAfterSeconds !== undefined || api.errorMembers?.[code]?.retryAfterSeconds)
    const success = route.responses[status]
    const json = success?.json === undefined ? schema : { anyOf: [success.json, schema] }
    responses[status] = {
      ...(success === undefined ? {} : responseObject(success)),
      description: success === undefined ? described : `${success.description} Or an error:\n${described}`,
      ...(retry ? { headers: { 'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'string' } } } } : {}),
      content: { ...(success === undefined ? {} : (responseObject(success).content as JsonSchema)), 'application/json': { schema: json } },
    }
  }
  return {
    operationId: operationId(route),
    summary: route.summary,
    ...(route.description === undefined ? {} : { description: route.description }),
    tags: [route.tag],
    security: (requirements ?? []).map((r) => ({ ...r })),
    ...(params.length === 0
      ? {}
      : {
          parameters: params.map((p) => ({
            name: p.name,
            in: p.in,
            description: p.description,
            required: p.in === 'path' ? true : (p.required ?? false),
            schema: p.schema,
          })),
        }),
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            ...(route.body.description === undefined ? {} : { description: route.body.description }),
            required: route.body.required ?? true,
            content: { 'application/json': { schema: route.body.schema } },
          },
        }),
    responses,
  }
}

/** The OpenAPI 3.1.0 document of an API: its routes, their schemas and errors, and its security schemes. */
export function openApiDocument(api: ApiSpec): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {}
  const used = new Set<ErrorCode>()
  const ids = new Set<string>()
  for (const route of api.routes) {
    const path = openApiPath(route.path)
    paths[path] ??= {}
    const item = paths[path] as Record<string, JsonSchema>
    if (item[route.method] !== undefined) throw new TypeError(`${route.method} ${route.path} is described twice`)
    const op = operation(api, route, used)
    if (ids.has(op.operationId as string)) throw new TypeError(`${route.method} ${route.path}: operationId ${op.operationId} is taken`)
    ids.add(op.operationId as string)
    item[route.method] = op
  }
  const errors = Object.fromEntries([...used].sort().map((code) => [code, errorSchema(code, api.errorMembers?.[code])]))
  for (const name of Object.keys(errors)) if (Object.hasOwn(api.schemas, name)) throw new TypeError(`schema ${name} is an error code`)
  return {
    openapi: OPENAPI_VERSION,
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: { title: api.title, version: api.version, description: api.description, license: { name: 'MIT', identifier: 'MIT' } },
    tags: api.tags.map((t) => ({ ...t })),
    paths,
    components: { schemas: { ...api.schemas, ...errors }, securitySchemes: { ...api.securitySchemes } },
  }
}

/** The document of `api`, made on the first call and kept: what a GET of the document answers. */
export function documentOnce(api: ApiSpec): () => Readonly<JsonSchema> {
  let document: Readonly<JsonSchema> | undefined
  return () => {
    document ??= openApiDocument(api)
    return document
  }
}

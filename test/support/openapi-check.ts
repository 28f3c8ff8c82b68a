// How the OpenAPI tests check answers: a served document against the edge's own, and a response against the status, media type and JSON Schema its document describes; the edge's answers (the status JSON, the admin API) asked for and checked, for a Node edge and the Worker alike.
import { Ajv2020 } from 'ajv/dist/2020.js'
import { expect } from 'vitest'
import { bookingApiDocument } from '../../src/booking/api-description.js'
import type { JsonSchema } from '../../src/core/body-schema.js'
import { edgeApiDocument } from '../../src/http/api-description.js'
import { type RequestTarget, T0 } from './runtimes.js'
import { Visitor } from './visitor.js'

export type Doc = Record<string, unknown> & { paths: Record<string, Record<string, Operation>> }
export interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>
}

export const TOKEN = 'o'.repeat(32)
export const ADMIN = { authorization: `Bearer ${TOKEN}` }

// --- checking answers against a document --------------------------------------------------------

/** Ajv 2020 over a whole document, so that a schema's $refs into components resolve. */
export function ajvFor(doc: Doc, id: string, strict: boolean) {
  const ajv = new Ajv2020({ strict, allowUnionTypes: true, allErrors: true })
  ajv.addFormat('date-time', (s: string) => !Number.isNaN(Date.parse(s)))
  // The document's own members, around its schemas: not JSON Schema keywords.
  for (const keyword of ['openapi', 'jsonSchemaDialect', 'info', 'tags', 'paths', 'components']) ajv.addKeyword(keyword)
  // The document is not a schema, but its schemas are found in it by JSON pointer.
  ajv.addSchema({ ...doc, $id: id }, undefined, undefined, false)
  return ajv
}

export const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`

export class DocumentCheck {
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
export const overHttp: RequestTarget = { request: (url, init) => fetch(url, init) }

/** The edge's document as an edge at `base` serves it over HTTP, to anyone. */
export async function servedEdgeDocument(base: string): Promise<void> {
  const res = await fetch(`${base}/_anteroom/api/openapi.json`)
  expect(res.status, base).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  expect(res.headers.get('cache-control')).toBe('no-store')
  expect(await res.json()).toEqual(JSON.parse(JSON.stringify(edgeApiDocument())))
}

export const edgeCheck = new DocumentCheck(edgeApiDocument() as Doc, 'urn:anteroom:edge')
export const originCheck = new DocumentCheck(bookingApiDocument() as Doc, 'urn:anteroom:origin')

/** The status JSON in every state a test can reach, the draw, keys, health, probes and metrics, of the edge at `base`. */
export async function checkEdgeAnswers(base: string): Promise<void> {
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
export async function checkAdminAnswers(base: string): Promise<void> {
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

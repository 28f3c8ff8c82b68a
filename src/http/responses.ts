// The edge's own answers: the queue page or its JSON for a visitor who waits, the status JSON, and
// errors (rendered by src/http/errors.ts: JSON for API callers and under /_anteroom/, else a page).
import type { Context } from 'hono'
import { BoundedMap } from '../core/bounded-map.js'
import { LANG_COOKIE, LANG_PARAM, type Locale } from '../core/locales.js'
import type { RoomSettings } from '../core/settings.js'
import type { VisitorStatus } from '../core/visit.js'
import { JS_COOKIE, readCookie, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { renderError } from './errors.js'
import { type PageLocale, pageLocale } from './i18n.js'
import { type CompiledTemplate, templatedPage, templatePolicy } from './page-templates.js'
import { QUEUE_ASSETS, queuePage, refreshAfter, visitorErrorPage } from './pages.js'
import { type Incoming, ownSource, wantsJson } from './request.js'

export const NO_STORE = 'no-store'

/**
 * The queue page's Content-Security-Policy: it runs nothing inline, and its style sheet and script
 * may come only from the edge's own two files (QUEUE_ASSETS). Worked out once per scheme and host,
 * looked up by the request's authority as its URL's facts hold it (request.ts), without a new key a page.
 */
const policies = { http: new BoundedMap<string, string>(1024), https: new BoundedMap<string, string>(1024) }
function queuePagePolicy(req: Incoming): string {
  const byHost = policies[req.proto]
  let policy = byHost.get(req.authority)
  if (policy === undefined) {
    policy = `default-src 'none'; style-src ${ownSource(req, QUEUE_ASSETS.css.path)}; script-src ${ownSource(req, QUEUE_ASSETS.js.path)}; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
    byHost.set(req.authority, policy)
  }
  return policy
}

/** A template's policy: as the page's, with its style sheet (and that origin's images and fonts); per host and sheet. */
const templatePolicies = new BoundedMap<string, string>(1024)
function pagePolicy(req: Incoming, template: CompiledTemplate | undefined): string {
  if (template?.sheet === undefined) return queuePagePolicy(req)
  const key = `${req.proto}://${req.authority} ${template.sheet.csp}`
  let policy = templatePolicies.get(key)
  if (policy === undefined) {
    const own = templatePolicy(ownSource(req, QUEUE_ASSETS.css.path), ownSource(req, QUEUE_ASSETS.js.path), template.sheet)
    policy = `${own}; frame-ancestors 'none'`
    templatePolicies.set(key, policy)
  }
  return policy
}

/** The page's language (i18n.ts: ?lang=, its cookie, Accept-Language, the room's locale) and whether to keep a ?lang= choice. */
export function visitorLocale(req: Incoming, room: Pick<RoomSettings, 'locale'> | undefined): PageLocale {
  return pageLocale(req.lang, req.cookie, req.acceptLanguage, room?.locale ?? 'en')
}

/** The cookie that keeps a visitor's ?lang= choice: a year, for the whole site (it names a language, nothing else). */
export function langCookie(locale: Locale, secure: boolean): string {
  return serializeCookie(LANG_COOKIE, locale, { maxAgeSeconds: 365 * 86_400, secure })
}

/**
 * A visitor's page varies with their language: Accept-Language and the cookies (the queue token, the
 * ?lang= choice) go into the cache key of anything that keeps it.
 */
export const PAGE_VARY = 'Accept-Language, Cookie'

/**
 * A visitor who waits: the queue page (the room's template or the built-in one, in the visitor's
 * language), or the status as JSON, the same in every language. A wait sets the visitor's queue
 * token and, when they chose a language with ?lang=, the cookie that keeps it.
 */
export function waitResponse(
  edge: EdgeContext,
  req: Incoming,
  room: RoomSettings,
  wait: { status: VisitorStatus; httpStatus: number; cookies: string[] },
  json: boolean,
): Response {
  // A plain header object: the Node server writes it as it is.
  const headers: Record<string, string> = { 'cache-control': NO_STORE }
  if (wait.cookies[0] !== undefined) headers['set-cookie'] = wait.cookies[0]
  const { status } = wait
  if (json) {
    headers['content-type'] = 'application/json; charset=utf-8'
    return new Response(JSON.stringify(status), { status: wait.httpStatus, headers })
  }
  const { locale, keep } = visitorLocale(req, room)
  const template = edge.deps.pages?.get(room.template)
  headers['content-type'] = 'text/html; charset=utf-8'
  headers['content-security-policy'] = pagePolicy(req, template)
  headers['x-content-type-options'] = 'nosniff'
  headers['referrer-policy'] = 'no-referrer'
  headers.vary = PAGE_VARY
  // The page's script polls by itself where it runs: it sets JS_COOKIE to its own version. Elsewhere,
  // and when the browser ran another version (a page of this release is then its first, and its
  // script may come from an edge of the last one), the Refresh header does, one refresh after the
  // script's first poll (a browser without scripts has the noscript meta, at the poll itself). Had
  // both come together, a page without a place could ask twice without a queue cookie, the reload
  // sent before the poll's cookie was stored: two places for one browser.
  if (status.state !== 'closed' && readCookie(req.cookie, JS_COOKIE) !== QUEUE_ASSETS.js.version)
    headers.refresh = String(refreshAfter(status) + status.refreshSeconds)
  if (wait.httpStatus === 503) headers['retry-after'] = String(status.refreshSeconds)
  const body = template === undefined ? queuePage(status, room, locale) : templatedPage(template, status, room, locale)
  if (keep === undefined) return new Response(body, { status: wait.httpStatus, headers })
  // Two cookies: a header list (the Node server writes a plain object's one value as it is).
  const list = new Headers(headers)
  list.append('set-cookie', langCookie(keep, req.secure))
  return new Response(body, { status: wait.httpStatus, headers: list })
}

/** 303 to `location` on this host, with the cookies an answer set (a redeemed access code's place). */
export function seeOther(location: string, cookies: string[]): Response {
  const headers = new Headers({ location, 'cache-control': NO_STORE })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(null, { status: 303, headers })
}

/** The status of a visitor admitted on this request, as JSON, with their new cookies. */
export function admittedJson(status: VisitorStatus, cookies: string[]): Response {
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': NO_STORE })
  for (const cookie of cookies) headers.append('set-cookie', cookie)
  return new Response(JSON.stringify(status), { headers })
}

/** The edge's errors: JSON for API callers and under /_anteroom/, the error page for visitors, in their language. */
export function edgeError(edge: EdgeContext, c: Context, err: unknown): Response {
  const json = wantsJson(c) || new URL(c.req.url).pathname.startsWith('/_anteroom/')
  const log = (fields: Record<string, unknown>) => edge.log('error', { ...fields, requestId: edge.requestId(c) })
  if (json) return renderError(c, err, { json, log })
  // Read straight from the request: it may be one the edge could not read (a bad path, two Hosts).
  const cookie = c.req.header('cookie') ?? null
  const { locale } = pageLocale(c.req.query(LANG_PARAM), cookie, c.req.header('accept-language'), 'en')
  c.header('vary', PAGE_VARY)
  return renderError(c, err, { json, log, page: (p) => visitorErrorPage(p, locale) })
}

/** The queue page's style sheet or script (QUEUE_ASSETS): for a year when asked by its current version. */
export function queueAsset(asset: (typeof QUEUE_ASSETS)[keyof typeof QUEUE_ASSETS], version: string | undefined): Response {
  return new Response(asset.body, {
    headers: {
      'content-type': asset.type,
      'cache-control': version === asset.version ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
      'x-content-type-options': 'nosniff',
    },
  })
}

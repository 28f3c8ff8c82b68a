// The edge's own answers: the queue page or its JSON for a visitor who waits, the status JSON, and
// errors (rendered by src/http/errors.ts: JSON for API callers and under /_anteroom/, else a page).
import type { Context } from 'hono'
import type { RoomSettings } from '../core/settings.js'
import type { VisitorStatus } from '../core/visit.js'
import { JS_COOKIE, readCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { renderError } from './errors.js'
import { QUEUE_ASSETS, queuePage, refreshAfter } from './pages.js'
import { type Incoming, ownSource, wantsJson } from './request.js'

export const NO_STORE = 'no-store'

/**
 * The queue page's Content-Security-Policy: it runs nothing inline, and its style sheet and script
 * may come only from the edge's own two files (QUEUE_ASSETS). Worked out once per scheme and host,
 * looked up by the request's authority as its URL's facts hold it (request.ts), without a new key a page.
 */
const policies = { http: new Map<string, string>(), https: new Map<string, string>() }
function queuePagePolicy(req: Incoming): string {
  const byHost = policies[req.proto]
  let policy = byHost.get(req.authority)
  if (policy === undefined) {
    policy = `default-src 'none'; style-src ${ownSource(req, QUEUE_ASSETS.css.path)}; script-src ${ownSource(req, QUEUE_ASSETS.js.path)}; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
    if (byHost.size >= 1024) byHost.clear()
    byHost.set(req.authority, policy)
  }
  return policy
}

/** A visitor who waits: the queue page, or the status as JSON. A wait sets at most one cookie (their queue token). */
export function waitResponse(
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
  headers['content-type'] = 'text/html; charset=utf-8'
  headers['content-security-policy'] = queuePagePolicy(req)
  headers['x-content-type-options'] = 'nosniff'
  headers['referrer-policy'] = 'no-referrer'
  // The page's script polls by itself where it runs: it sets JS_COOKIE to its own version. Elsewhere,
  // and when the browser ran another version (a page of this release is then its first, and its
  // script may come from an edge of the last one), the Refresh header does, one refresh after the
  // script's first poll (a browser without scripts has the noscript meta, at the poll itself). Had
  // both come together, a page without a place could ask twice without a queue cookie, the reload
  // sent before the poll's cookie was stored: two places for one browser.
  if (status.state !== 'closed' && readCookie(req.cookie, JS_COOKIE) !== QUEUE_ASSETS.js.version)
    headers.refresh = String(refreshAfter(status) + status.refreshSeconds)
  if (wait.httpStatus === 503) headers['retry-after'] = String(status.refreshSeconds)
  return new Response(queuePage(status, room), { status: wait.httpStatus, headers })
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

/** The edge's errors: JSON for API callers and under /_anteroom/, the error page for visitors. */
export function edgeError(edge: EdgeContext, c: Context, err: unknown): Response {
  const json = wantsJson(c) || new URL(c.req.url).pathname.startsWith('/_anteroom/')
  return renderError(c, err, { json, log: (fields) => edge.log('error', { ...fields, requestId: edge.requestId(c) }) })
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

// The edge's own answers: the queue page or its JSON for a visitor who waits, the status JSON, and
// errors (rendered by src/http/errors.ts: JSON for API callers and under /_anteroom/, else a page).
import type { Context } from 'hono'
import type { RoomSettings } from '../core/settings.js'
import type { VisitorStatus } from '../core/visit.js'
import { JS_COOKIE, readCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { renderError } from './errors.js'
import { queuePage, refreshAfter } from './pages.js'
import { type Incoming, wantsJson } from './request.js'

export const NO_STORE = 'no-store'

/** The queue page's Content-Security-Policy (its one script by hash), worked out once per edge. */
const policies = new WeakMap<EdgeContext, Promise<string>>()
function queuePagePolicy(edge: EdgeContext): Promise<string> {
  let policy = policies.get(edge)
  if (policy === undefined) {
    policy = edge.scriptHash.then(
      (hash) =>
        `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${hash}'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
    )
    policies.set(edge, policy)
  }
  return policy
}

/** A visitor who waits: the queue page, or the status as JSON. A wait sets at most one cookie (their queue token). */
export async function waitResponse(
  edge: EdgeContext,
  req: Incoming,
  room: RoomSettings,
  wait: { status: VisitorStatus; httpStatus: number; cookies: string[] },
  json: boolean,
): Promise<Response> {
  // A plain header object: the Node server writes it as it is.
  const headers: Record<string, string> = { 'cache-control': NO_STORE }
  if (wait.cookies[0] !== undefined) headers['set-cookie'] = wait.cookies[0]
  const { status } = wait
  if (json) {
    headers['content-type'] = 'application/json; charset=utf-8'
    return new Response(JSON.stringify(status), { status: wait.httpStatus, headers })
  }
  headers['content-type'] = 'text/html; charset=utf-8'
  headers['content-security-policy'] = await queuePagePolicy(edge)
  headers['x-content-type-options'] = 'nosniff'
  headers['referrer-policy'] = 'no-referrer'
  // The page's script polls by itself where it runs (it sets JS_COOKIE); elsewhere the Refresh header does.
  if (status.state !== 'closed' && readCookie(req.cookie, JS_COOKIE) !== '1') headers.refresh = String(refreshAfter(status))
  if (wait.httpStatus === 503) headers['retry-after'] = String(status.refreshSeconds)
  return new Response(queuePage({ ...status, title: room.title, message: room.message }), { status: wait.httpStatus, headers })
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
  return renderError(c, err, { json, log: (fields) => edge.log('error', fields) })
}

// The one rendering of an error, for the edge, the admin API and the booking origin: status, body and
// headers come from the registry (core/errors.ts), as JSON for API callers or as a page for visitors.
// A visitor never sees a stack trace; an unexpected error (500) is logged by code and message only.
import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type Problem, problemOf } from '../core/errors.js'
import { errorPage } from './pages.js'

export interface RenderOptions {
  /** JSON for API callers; the error page for visitors otherwise. */
  json: boolean
  /** Where unexpected errors (500) are logged: code and message, never a request's headers or body. */
  log?: (fields: Record<string, unknown>) => void
  /** The visitor's page for an error (the edge's, in the visitor's language); the English page when unset. */
  page?: (p: Problem) => string
}

export interface ErrorBody {
  error: { code: string; message: string; field?: string; [extra: string]: unknown }
}

function bodyOf(p: Problem): ErrorBody {
  return { error: { code: p.code, message: p.message, ...(p.field ? { field: p.field } : {}), ...p.extra } }
}

/** The JSON body of an error, `{ error: { code, message, field?, ...extra } }`: for answers that are stored and replayed. */
export function errorBody(err: unknown): ErrorBody {
  return bodyOf(problemOf(err))
}

function rendered(err: unknown, options: RenderOptions): { status: ContentfulStatusCode; headers: Record<string, string>; body: string } {
  const p = problemOf(err)
  if (p.unexpected) {
    options.log?.({
      status: p.status,
      code: p.code,
      error: err instanceof Error ? err.name : typeof err,
      message: err instanceof Error ? err.message : String(err),
    })
  }
  const headers: Record<string, string> = { 'cache-control': 'no-store', ...p.headers }
  if (options.json) {
    headers['content-type'] = 'application/json; charset=utf-8'
    return { status: p.status as ContentfulStatusCode, headers, body: JSON.stringify(bodyOf(p)) }
  }
  headers['content-type'] = 'text/html; charset=utf-8'
  return { status: p.status as ContentfulStatusCode, headers, body: options.page?.(p) ?? errorPage(p.status, p.title, p.detail) }
}

/** The answer to c for an error. Headers set on c before (ETag, WWW-Authenticate, a cookie) stay. */
export function renderError(c: Context, err: unknown, options: RenderOptions): Response {
  const { status, headers, body } = rendered(err, options)
  return c.newResponse(body, status, headers)
}

/** The same answer without a Hono context (the Worker, when its app could not be built). */
export function errorResponse(err: unknown, options: RenderOptions): Response {
  const { status, headers, body } = rendered(err, options)
  return new Response(body, { status, headers })
}

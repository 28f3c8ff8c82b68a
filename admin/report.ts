// GET /_anteroom/api/rooms/:id/report: a room's post-event report (core/report.ts) from the minutes
// the analytics kept, as JSON, or as CSV with ?format=csv or Accept: text/csv. The range is `from` and
// `to`, each ISO 8601 with a time zone or ms since 1970; the last 24 hours by default, at most the 30
// days the store keeps. A bad value is a 400 that names its field.
import type { Context } from 'hono'
import { AnteroomError } from '../src/core/errors.js'
import { QUEUE_WAIT_BUCKETS } from '../src/core/metrics.js'
import { buildReport, type Report, reportCsv } from '../src/core/report.js'
import { ISO_TIME } from '../src/core/settings.js'
import { ANALYTICS_KEEP_MS, type AnalyticsStore } from '../src/ports/analytics-store.js'

/** The range when none is given: the last day. */
export const REPORT_DEFAULT_MS = 24 * 3_600_000
/** The longest range: what the store keeps. */
export const REPORT_MAX_MS = ANALYTICS_KEEP_MS
export const REPORT_FORMATS = ['json', 'csv'] as const
/** Milliseconds since 1970, as the query may give a time. */
export const MS_TIME = /^\d{1,15}$/

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_BAD_REQUEST', `${field}: ${message}`, { field })
}

/** A time of the query: ISO 8601 with a zone, or ms; undefined when not given. */
function timeOf(text: string | undefined, field: 'from' | 'to'): number | undefined {
  if (text === undefined || text === '') return undefined
  if (MS_TIME.test(text)) return Number(text)
  const ms = ISO_TIME.test(text) ? Date.parse(text) : Number.NaN
  if (Number.isNaN(ms)) bad(field, 'must be an ISO 8601 time with a time zone (2026-12-01T10:00:00Z) or milliseconds since 1970')
  return ms
}

/** The range asked for, [from, to) in ms: `to` defaults to now, `from` to a day before `to`. */
export function reportRange(query: { from?: string; to?: string }, now: number): { from: number; to: number } {
  const to = timeOf(query.to, 'to') ?? now
  const from = timeOf(query.from, 'from') ?? to - REPORT_DEFAULT_MS
  if (from >= to) bad('from', 'must be before to')
  if (to - from > REPORT_MAX_MS) bad('from', 'the range may be at most 30 days (what the analytics keep)')
  return { from, to }
}

/** JSON unless ?format=csv, or Accept names text/csv before JSON. */
function wantsCsv(c: Context): boolean {
  const format = c.req.query('format')
  if (format !== undefined && !(REPORT_FORMATS as readonly string[]).includes(format)) bad('format', 'must be json or csv')
  if (format !== undefined) return format === 'csv'
  const accept = c.req.header('accept') ?? ''
  const csv = accept.indexOf('text/csv')
  const json = accept.indexOf('application/json')
  return csv >= 0 && (json < 0 || csv < json)
}

/** The report of `room` for the range the query asks, in the format it asks. */
export async function serveReport(c: Context, analytics: Pick<AnalyticsStore, 'minutes'>, room: string, now: number): Promise<Response> {
  const csv = wantsCsv(c)
  const { from, to } = reportRange({ from: c.req.query('from'), to: c.req.query('to') }, now)
  const report: Report = buildReport({ room, from, to, samples: await analytics.minutes(room, from, to), bounds: QUEUE_WAIT_BUCKETS })
  if (!csv) return c.json(report)
  // A file name saying what the report is of (the admin UI's links name their downloads the same way).
  const name = `anteroom-${room}-${new Date(from).toISOString().slice(0, 16).replace(/[-:]/g, '')}.csv`
  return c.body(reportCsv(report), 200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${name}"`,
  })
}

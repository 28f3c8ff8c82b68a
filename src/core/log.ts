// Structured logs: one JSON line per event, `{"time", "level", "event", ...fields}`, for the edge, the
// admin API and the booking origin alike. Each event has one level (EVENT_LEVELS); lines under the
// configured level are dropped. No secret reaches a line: fields named like credentials are replaced,
// and every configured secret (and anything shaped like a signed token) is cut out of every value.

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** A log call: the event's name and its fields (room, requestId, ...). */
export type Log = (event: string, fields: Record<string, unknown>) => void

/** Each event's level; an event not listed is info. */
export const EVENT_LEVELS: Readonly<Record<string, LogLevel>> = {
  // Something is broken: an answer was a 500, a worker could not start.
  error: 'error',
  admin_error: 'error',
  origin_error: 'error',
  worker_start_failed: 'error',
  // Something a person should look at: the store or the gate away, a sale running on less than it should.
  store_unavailable: 'warn',
  redis_error: 'warn',
  redis_unavailable_at_start: 'warn',
  gate_redis_error: 'warn',
  gate_unavailable: 'warn',
  gate_reconcile_failed: 'warn',
  stock_unavailable: 'warn',
  reload_stuck: 'warn',
  origin_command_failed: 'warn',
  origin_command_unknown: 'warn',
  admin_signin_failed: 'warn',
  access_throttled: 'warn',
  warning: 'warn',
  // A human check that could not be made (siteverify away), a crawler check DNS could not answer.
  human_check_unavailable: 'warn',
  crawler_check_failed: 'warn',
  // What a sale does, one line each, for whoever follows it closely.
  admitted: 'debug',
  bypass: 'debug',
  human_check_passed: 'debug',
  origin_command_ignored: 'debug',
}

export function levelOf(event: string): LogLevel {
  return EVENT_LEVELS[event] ?? 'info'
}

/** Field names whose values are credentials whatever they hold. */
const SECRET_FIELD = /token|secret|password|passwd|authorization|cookie|signature|private|credential|api[-_]?key/i
/** A JWS (an admission token, a signed key) in any text: three base64url parts, the first a JSON header. */
const SIGNED_TOKEN = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16,}/g
const REDACTED = '[redacted]'

/** Secrets shorter than this are not searched for in values (they would match ordinary words). */
const MIN_SECRET_LENGTH = 8

export interface LogOptions {
  /** Lines under this level are dropped (info unless set). */
  level?: LogLevel
  /** Writes one line (with its newline): process.stdout on Node, console.log on the Worker. */
  write: (line: string) => void
  /** Every secret the process was configured with: never written, wherever it turns up (read at each line, so it may grow). */
  secrets?: readonly string[]
  now?: () => number
}

/** A value with every secret cut out: strings searched, objects and lists walked, credential-named fields replaced. */
function scrub(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof value === 'string') {
    let text = value.replace(SIGNED_TOKEN, REDACTED)
    for (const secret of secrets) if (text.includes(secret)) text = text.split(secret).join(REDACTED)
    return text
  }
  if (typeof value !== 'object' || value === null) return value
  if (depth > 4) return '[…]'
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) out[key] = SECRET_FIELD.test(key) ? REDACTED : scrub(v, secrets, depth + 1)
  return out
}

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value)
}

/** A Log that writes JSON lines at or above `level`, scrubbed of secrets. */
export function jsonLog(options: LogOptions): Log {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'info')
  const all = options.secrets ?? []
  const now = options.now ?? Date.now
  return function log(event, fields) {
    const level = levelOf(event)
    if (LOG_LEVELS.indexOf(level) < threshold) return
    const secrets = all.filter((s) => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH)
    const head = { time: new Date(now()).toISOString(), level, event }
    // The head first and last: its keys lead the line, and no field can pass for them.
    options.write(`${JSON.stringify(Object.assign({ ...head }, scrub(fields, secrets, 0), head))}\n`)
  }
}

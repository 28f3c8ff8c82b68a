// When the PostgreSQL server cannot be reached (stopped, restarting, the connection cut), the booking
// origin answers 503 ERR_DB_UNAVAILABLE with Retry-After instead of a 500. This module says which
// errors of the `postgres` driver mean that, and wraps them.
import { AnteroomError } from '../../core/errors.js'
import { sqlState } from './db.js'

/** The driver's own codes for a connection that failed, closed or was never made, and socket errors. */
const CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // ./postgres-js.ts gave up waiting for an answer (noAnswer below).
  'NO_ANSWER',
])

/**
 * SQLSTATEs of a server going away or not taking connections: 57P01 admin_shutdown (a fast or smart
 * stop), 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, in recovery),
 * 53300 too_many_connections; class 08 is connection_exception.
 */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03', '53300'])

export function isDbUnavailable(err: unknown): boolean {
  const code = sqlState(err)
  if (code === undefined) return false
  return CONNECTION_CODES.has(code) || SERVER_STATES.has(code) || code.startsWith('08')
}

/** err as ERR_DB_UNAVAILABLE (its cause kept) when it says the database is out of reach; else err itself. */
export function unavailable(err: unknown): unknown {
  if (!isDbUnavailable(err)) return err
  return new AnteroomError('ERR_DB_UNAVAILABLE', 'The booking database is unavailable; try again', { cause: err })
}

/** The error for a statement that got no answer in time: the client gave up on it and its connection. */
export function noAnswer(ms: number): Error {
  return Object.assign(new Error(`PostgreSQL did not answer within ${ms} ms`), { code: 'NO_ANSWER' })
}

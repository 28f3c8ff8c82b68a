// Every error a client of Anteroom may see, once: its code, its HTTP status and what visitors and API
// callers are told. The edge, the admin API and the booking origin render them with one function
// (src/http/errors.ts); docs/errors.md lists them. A new error gets its entry here, nowhere else.

export interface ErrorSpec {
  /** The HTTP status, the same in every app. */
  readonly status: number
  /** The headline of the visitor's error page. */
  readonly title: string
  /** The visitor's page says this when the error's own message is not for clients (see AnteroomError.expose). */
  readonly visitor: string
  /** The JSON `message` when the error's own message is not for clients. */
  readonly api: string
  /** Sent as Retry-After unless the error carries its own. */
  readonly retryAfterSeconds?: number
  /** Headers that go with every answer of this code. */
  readonly headers?: Readonly<Record<string, string>>
}

const AGAIN = 'Please try again in a moment.'
const unauthorized = (api: string): ErrorSpec => ({
  status: 401,
  title: 'Not admitted',
  visitor: 'Please go through the waiting room first.',
  api,
})

export const ERRORS = {
  // --- anywhere ---------------------------------------------------------------------------------
  ERR_INTERNAL: { status: 500, title: 'Something went wrong', visitor: AGAIN, api: 'Something went wrong; please try again in a moment.' },
  ERR_CONFIG: {
    status: 500,
    title: 'Not set up',
    visitor: 'This waiting room is not set up correctly. Please try again later.',
    api: 'The waiting room is not configured correctly; the operator can see why in the log.',
  },
  ERR_NOT_FOUND: { status: 404, title: 'Not found', visitor: 'There is nothing at this address.', api: 'Not found' },
  ERR_BAD_REQUEST: { status: 400, title: 'Bad request', visitor: 'This request cannot be served.', api: 'The request is not valid' },
  ERR_BODY: { status: 400, title: 'Bad request', visitor: 'The data sent cannot be read.', api: 'The body is not valid' },
  ERR_BODY_TOO_LARGE: {
    status: 413,
    title: 'Too much data',
    visitor: 'The data sent is too large.',
    api: 'The body is too large',
    // The rest of an unread body is not wanted: the connection is not reused after this answer.
    headers: { connection: 'close' },
  },
  ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: 'Bad request',
    visitor: 'The data sent is not in a form this site reads.',
    api: 'The body must be JSON, sent with Content-Type: application/json',
  },
  // --- the edge ---------------------------------------------------------------------------------
  ERR_BAD_PATH: { status: 400, title: 'Bad request', visitor: 'This address cannot be served.', api: 'This address cannot be served' },
  ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    title: 'Method not allowed',
    visitor: 'This kind of request is not served here.',
    api: 'This method is not served here',
    headers: { allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' },
  },
  ERR_HOST_NOT_SERVED: {
    status: 421,
    title: 'Wrong address',
    visitor: 'This site is not served here.',
    api: 'This site is not served here',
  },
  ERR_ORIGIN_TIMEOUT: {
    status: 504,
    title: 'The site is taking too long',
    visitor: 'The site behind this waiting room did not answer in time. Please try again.',
    api: 'The site behind this waiting room did not answer in time. Please try again.',
  },
  ERR_ORIGIN_UNREACHABLE: {
    status: 502,
    title: 'The site is not reachable',
    visitor: 'The site behind this waiting room could not be reached. Please try again shortly.',
    api: 'The site behind this waiting room could not be reached. Please try again shortly.',
  },
  ERR_STORE_UNAVAILABLE: {
    status: 503,
    title: 'We are busy right now',
    visitor: `The waiting room cannot reach its store. ${AGAIN}`,
    api: 'The store is not answering; try again',
  },
  /** An admission token the edge cannot check (unknown key); the edge treats it as no admission. */
  ERR_TOKEN_INVALID: { status: 401, title: 'Not admitted', visitor: 'Your admission is not valid.', api: 'The token is not valid' },
  /** The cap on new places per client network (src/http/join-cap.ts); Retry-After says when the network may join again. */
  ERR_TOO_MANY_JOINS: {
    status: 429,
    title: 'Too many people from your network',
    visitor: 'Too many people from your network joined this line in the last minute. Please wait a moment and try again.',
    api: 'Too many new places for this client network this minute; try again after Retry-After',
  },
  // Access codes and invite links (core/access.ts, src/http/access.ts): a refused one takes nobody's place away.
  ERR_ACCESS_INVALID: {
    status: 400,
    title: 'Code not valid',
    visitor: 'That access code or invite link is not valid. Check it and try again; your place in line, if you have one, is kept.',
    api: 'The access code or invite link is not valid',
  },
  ERR_ACCESS_USED_UP: {
    status: 409,
    title: 'Code used up',
    visitor: 'This access code or invite link has been used as many times as it may be. Your place in line, if you have one, is kept.',
    api: 'The access code or invite link has no uses left',
  },
  ERR_ACCESS_EXPIRED: {
    status: 410,
    title: 'Code expired',
    visitor: 'This access code or invite link has expired. Your place in line, if you have one, is kept.',
    api: 'The access code or invite link has expired',
  },
  ERR_ACCESS_REVOKED: {
    status: 410,
    title: 'Code withdrawn',
    visitor: 'This access code or invite link was withdrawn by the organisers. Your place in line, if you have one, is kept.',
    api: 'The access code or invite link was revoked',
  },
  ERR_TOO_MANY_CODES: {
    status: 429,
    title: 'Too many wrong codes',
    visitor: 'Too many wrong access codes came from your network in the last minute. Please wait a moment and try again.',
    api: 'Too many wrong access codes from this client network this minute; try again after Retry-After',
  },
  ERR_SETTINGS_INVALID: { status: 400, title: 'Bad request', visitor: 'These settings are not valid.', api: 'The settings are not valid' },
  // Proof of work at join (core/pow.ts): each answer refused carries a fresh challenge (error.challenge).
  ERR_POW_INVALID: {
    status: 400,
    title: 'Bad request',
    visitor: 'Please reload the page to join the line.',
    api: 'The Anteroom-Pow answer is not valid; solve error.challenge',
  },
  ERR_POW_EXPIRED: {
    status: 403,
    title: 'Please try again',
    visitor: 'Please reload the page to join the line.',
    api: 'The challenge has expired; solve error.challenge',
  },
  ERR_POW_INSUFFICIENT: {
    status: 403,
    title: 'Please try again',
    visitor: 'Please reload the page to join the line.',
    api: 'The answer does not have enough leading zero bits; solve error.challenge',
  },
  // The human check (core/human-check.ts): siteverify did not answer, and the room holds newcomers until it does.
  ERR_HUMAN_CHECK_UNAVAILABLE: {
    status: 503,
    title: 'Please try again',
    visitor: 'We could not check your answer just now. Please try again in a moment.',
    api: 'The human check could not be verified right now; try again',
    retryAfterSeconds: 5,
  },
  // --- the admin API ----------------------------------------------------------------------------
  ERR_UNAUTHORIZED: { status: 401, title: 'Sign in', visitor: 'Please sign in.', api: 'Admin credentials are required' },
  ERR_CSRF: {
    status: 403,
    title: 'Refused',
    visitor: 'Reload the page and try again.',
    api: 'A change from the admin UI needs its X-CSRF-Token header',
  },
  ERR_TOO_MANY_ATTEMPTS: {
    status: 429,
    title: 'Too many attempts',
    visitor: 'Too many failed sign-ins: please wait and try again.',
    api: 'Too many failed sign-ins: try again later',
  },
  ERR_STALE: {
    status: 412,
    title: 'Changed meanwhile',
    visitor: 'Someone else changed this first.',
    api: 'Someone else changed this room first; here are the current settings',
  },
  ERR_IF_MATCH_REQUIRED: {
    status: 428,
    title: 'Bad request',
    visitor: 'Reload the page and try again.',
    api: 'Send If-Match with the ETag you read, so that changes never overwrite each other',
  },
  // Page templates (core/page-template.ts, admin/templates.ts): a refused one names its field, and for
  // its source the line (error.line).
  ERR_TEMPLATE_INVALID: {
    status: 400,
    title: 'Bad request',
    visitor: 'This page template is not valid.',
    api: 'The page template is not valid',
  },
  ERR_TEMPLATE_IN_USE: {
    status: 409,
    title: 'In use',
    visitor: 'This page template is in use.',
    api: 'Rooms use this page template (error.rooms): choose another for them first',
  },
  // --- the booking origin -----------------------------------------------------------------------
  ERR_SEATS_TAKEN: { status: 409, title: 'Seats taken', visitor: 'Some of these seats are taken.', api: 'Some of these seats are taken' },
  ERR_VISITOR_LIMIT: {
    status: 409,
    title: 'Seat limit',
    visitor: 'You hold as many seats as you may.',
    api: 'Too many seats for one visitor',
  },
  ERR_UNKNOWN_SEATS: { status: 400, title: 'Bad request', visitor: 'Some of these seats do not exist.', api: 'No such seats' },
  ERR_ITEMS_SHORT: {
    status: 409,
    title: 'Not enough left',
    visitor: 'There are not enough of these left.',
    api: 'Some items have fewer left than asked for',
  },
  ERR_UNKNOWN_ITEMS: { status: 400, title: 'Bad request', visitor: 'Some of these items do not exist.', api: 'No such items' },
  ERR_IDEMPOTENCY_KEY: {
    status: 400,
    title: 'Bad request',
    visitor: 'Please try again.',
    api: 'An Idempotency-Key header of 8-200 letters, digits or _.:- is required',
  },
  ERR_IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'Bad request',
    visitor: 'Please try again.',
    api: 'This Idempotency-Key was used for another checkout',
  },
  ERR_IN_PROGRESS: {
    status: 409,
    title: 'Still working',
    visitor: 'Your checkout is still being processed. Please wait a moment.',
    api: 'This checkout is still being processed; try again',
    retryAfterSeconds: 1,
  },
  ERR_HOLD_LOST: { status: 409, title: 'Hold lost', visitor: 'Your hold has ended.', api: 'The hold has expired or ended' },
  ERR_HOLD_NOT_ACTIVE: { status: 409, title: 'Hold ended', visitor: 'This hold has already ended.', api: 'The hold is not active' },
  ERR_PAYMENT_DECLINED: { status: 402, title: 'Payment declined', visitor: 'The card was declined.', api: 'The card was declined' },
  ERR_DB_BUSY: {
    status: 503,
    title: 'We are busy right now',
    visitor: 'The seats are busy. Please try again.',
    api: 'The seats are busy; please try again',
    retryAfterSeconds: 1,
  },
  /** The PostgreSQL server is out of reach (stopped, restarting, the connection cut); see src/adapters/postgres/unavailable.ts. */
  ERR_DB_UNAVAILABLE: {
    status: 503,
    title: 'We are busy right now',
    visitor: 'The booking system cannot be reached right now. Please try again in a moment.',
    api: 'The booking database is unavailable; try again',
    retryAfterSeconds: 1,
  },
  /** A claim for an event with the ordered lane could not be appended to it (Redis away); nothing was claimed. */
  ERR_LANE_UNAVAILABLE: {
    status: 503,
    title: 'We are busy right now',
    visitor: 'The booking system cannot take your claim right now. Please try again in a moment.',
    api: 'The event’s claim lane is unavailable; nothing was claimed; try again',
    retryAfterSeconds: 1,
  },
  // --- admission checks at an origin (src/booking/verify.ts) -------------------------------------
  ERR_ADMISSION_MISSING: unauthorized('No Anteroom-Admission header: this service is only reachable through the waiting room'),
  ERR_ADMISSION_INVALID: unauthorized('The admission token is malformed'),
  ERR_ADMISSION_EXPIRED: unauthorized('The admission has expired'),
  ERR_ADMISSION_CLAIM: unauthorized('A claim of the admission token is wrong'),
  ERR_ADMISSION_ALG: unauthorized('The admission token uses an algorithm that is not accepted'),
  ERR_ADMISSION_KEY: unauthorized('The admission token was signed with an unknown key'),
  ERR_ADMISSION_SIGNATURE: unauthorized('The admission token signature is not valid'),
  ERR_ADMISSION_WRONG_ROOM: unauthorized('The admission is for another room'),
  ERR_ADMISSION_OPEN: unauthorized('This service accepts only admissions from the line; please try again in a minute'),
  ERR_ADMISSION_BYPASS: unauthorized('This service does not accept requests that bypassed the line'),
  ERR_ADMISSION_KEYS_UNAVAILABLE: {
    status: 503,
    title: 'We are busy right now',
    visitor: AGAIN,
    api: 'The waiting room keys could not be fetched',
  },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERRORS

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code)
}

export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERRORS[code]
}

export interface AnteroomErrorOptions {
  /** Which field or input was wrong, when there is one. */
  field?: string
  cause?: unknown
  /**
   * Whether the message is written for clients. By default it is below status 500 (it names what was
   * wrong with the request) and is not from 500 on, where clients get the registry's text instead.
   */
  expose?: boolean
  /** More members of the JSON `error` object (the current settings of a stale write, the seats taken, ...). */
  extra?: Readonly<Record<string, unknown>>
  /** Sent as Retry-After (the registry's value otherwise). */
  retryAfterSeconds?: number
}

/** An error with a code from ERRORS, so callers switch on err.code instead of matching messages. */
export class AnteroomError extends Error {
  readonly code: ErrorCode
  /** Which field or input was wrong, when there is one. */
  readonly field?: string
  readonly expose: boolean
  readonly extra: Readonly<Record<string, unknown>>
  readonly retryAfterSeconds?: number

  constructor(code: ErrorCode, message: string, options: AnteroomErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AnteroomError'
    this.code = code
    this.field = options.field
    this.expose = options.expose ?? ERRORS[code].status < 500
    this.extra = options.extra ?? {}
    this.retryAfterSeconds = options.retryAfterSeconds
  }

  get status(): number {
    return ERRORS[this.code].status
  }
}

export function isAnteroomError(err: unknown, code?: ErrorCode): err is AnteroomError {
  return err instanceof AnteroomError && (code === undefined || err.code === code)
}

/** What a client is told about an error: the same for every app, as a page or as JSON. */
export interface Problem {
  status: number
  code: ErrorCode
  title: string
  /** For the visitor's page. */
  detail: string
  /** The JSON `message`. */
  message: string
  field?: string
  extra: Readonly<Record<string, unknown>>
  headers: Readonly<Record<string, string>>
  /** Whether nobody expected it (a 500): the apps log these. */
  unexpected: boolean
}

/** An error as clients see it; anything that is not an AnteroomError is ERR_INTERNAL, told nothing. */
export function problemOf(err: unknown): Problem {
  const known = err instanceof AnteroomError ? err : undefined
  const code = known?.code ?? 'ERR_INTERNAL'
  const spec: ErrorSpec = ERRORS[code]
  const retry = known?.retryAfterSeconds ?? spec.retryAfterSeconds
  const headers = { ...spec.headers, ...(retry === undefined ? {} : { 'retry-after': String(retry) }) }
  return {
    status: spec.status,
    code,
    title: spec.title,
    detail: known?.expose ? known.message : spec.visitor,
    message: known?.expose ? known.message : spec.api,
    field: known?.field,
    extra: known?.extra ?? {},
    headers,
    unexpected: spec.status === 500,
  }
}

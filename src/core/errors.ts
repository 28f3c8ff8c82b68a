// Errors that carry a code, so callers switch on err.code instead of matching messages.

export type ErrorCode =
  | 'ERR_CONFIG'
  | 'ERR_SETTINGS_INVALID'
  | 'ERR_STORE_UNAVAILABLE'
  | 'ERR_ORIGIN_TIMEOUT'
  | 'ERR_ORIGIN_UNREACHABLE'
  | 'ERR_BAD_REQUEST'
  | 'ERR_BAD_PATH'
  | 'ERR_METHOD_NOT_ALLOWED'
  | 'ERR_BODY_TOO_LARGE'
  | 'ERR_NOT_FOUND'
  | 'ERR_HOST_NOT_SERVED'
  | 'ERR_DB_BUSY'
  | 'ERR_PAYMENT_DECLINED'
  | 'ERR_UNAUTHORIZED'
  | 'ERR_TOKEN_INVALID'

export class AnteroomError extends Error {
  readonly code: ErrorCode
  /** Which field or input was wrong, when there is one. */
  readonly field?: string

  constructor(code: ErrorCode, message: string, options?: { field?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AnteroomError'
    this.code = code
    this.field = options?.field
  }
}

export function isAnteroomError(err: unknown, code?: ErrorCode): err is AnteroomError {
  return err instanceof AnteroomError && (code === undefined || err.code === code)
}

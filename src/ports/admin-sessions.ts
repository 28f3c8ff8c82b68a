// Admin sign-in state that holds on every edge.
// - Sign-out: a signed session cookie stays valid until it expires, so signing out records the
//   session here and every edge refuses it from then on.
// - Failed sign-ins: counted per key (a client address, an account name) so that every edge sees
//   the same count and the same lockout (admin/throttle.ts holds the policy).

/** Failed sign-ins counted under one key since it was last cleared or forgotten. */
export interface SignInFailures {
  /** How many in a row. */
  count: number
  /** When the last one happened (ms on the clock of the edge that recorded it). */
  lastAt: number
}

/** A key's failures are forgotten this long after its last one (15 minutes past the longest lockout). */
export const SIGN_IN_FORGET_MS = 30 * 60_000

export interface AdminSessions {
  /** Ends a session everywhere; it is remembered for `ttlMs` (until its cookie would have expired anyway). */
  revoke(sessionId: string, ttlMs: number): Promise<void>
  /** Throws ERR_STORE_UNAVAILABLE when the store does not answer: a sign-in is then refused, not assumed. */
  isRevoked(sessionId: string): Promise<boolean>
  /**
   * Counts one failed sign-in under each key at `nowMs` and answers the counts after it, in the
   * order of `keys`. Each key is forgotten SIGN_IN_FORGET_MS after its last failure.
   */
  recordSignInFailure(keys: readonly string[], nowMs: number): Promise<SignInFailures[]>
  /** The failures counted under each key (null: none), in the order of `keys`. */
  signInFailures(keys: readonly string[], nowMs: number): Promise<(SignInFailures | null)[]>
  /** Forgets the failures of these keys (after a successful sign-in). */
  clearSignInFailures(keys: readonly string[]): Promise<void>
}

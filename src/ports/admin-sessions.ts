// Admin sign-out that holds on every edge: a signed session cookie stays valid until it expires,
// so signing out records the session here and every edge refuses it from then on.

export interface AdminSessions {
  /** Ends a session everywhere; it is remembered for `ttlMs` (until its cookie would have expired anyway). */
  revoke(sessionId: string, ttlMs: number): Promise<void>
  /** Throws ERR_STORE_UNAVAILABLE when the store does not answer: a sign-in is then refused, not assumed. */
  isRevoked(sessionId: string): Promise<boolean>
}

// A clock the edge reads for token expiry. Tests inject a manual one (test/support/clock.ts); production leaves it out
// and the store's own clock (Redis TIME) decides admission.

export interface Clock {
  now(): number
}

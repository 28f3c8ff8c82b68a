// The Redis key layout (docs/redis-keys.md). A room's keys share the hash tag {room}, so a room
// lives in one Redis Cluster slot and its scripts can touch all of them.

export function roomKeys(room: string) {
  const p = `anteroom:{${room}}`
  return {
    line: `${p}:q`,
    sweep: `${p}:sweep`,
    /** Prefix of the seen buckets: `${seenPrefix}${seenBucketOf(visitor)}`. */
    seenPrefix: `${p}:seen:`,
    active: `${p}:act`,
    ended: `${p}:ended`,
    admissions: `${p}:adm`,
    stats: `${p}:stat`,
    lastArrival: `${p}:last`,
    history: `${p}:hist`,
  }
}

/** How many seen buckets a room has; must match BUCKETS in lua/poll-7.lua. */
export const SEEN_BUCKETS = 16384

/** The seen bucket of a visitor: the same function as bucketOf in lua/poll-7.lua. */
export function seenBucketOf(visitor: string): number {
  let h = 0
  for (let i = 0; i < visitor.length; i++) h = (h * 31 + visitor.charCodeAt(i)) % SEEN_BUCKETS
  return h
}

/** One hash of every room's settings, field = room id, value = {"rev": n, "settings": {...}}. */
export const SETTINGS_KEY = 'anteroom:settings'

/** The admin audit log: a list of JSON entries, newest first. */
export const AUDIT_KEY = 'anteroom:audit'

/** An admin session ended by signing out (admin-sessions.ts); expires with the session's cookie. */
export const adminSessionKey = (sessionId: string) => `anteroom:admin-ended:${sessionId}`

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
    finished: `${p}:fin`,
    admissions: `${p}:adm`,
    stats: `${p}:stat`,
    lastArrival: `${p}:last`,
    used: `${p}:used`,
    pace: `${p}:pace`,
    life: `${p}:life`,
    drawn: `${p}:drawn`,
    history: `${p}:hist`,
    /** Prefix of the bot defence's minute hashes: `${joins}${minute}` = network → new places (join-1.lua). */
    joins: `${p}:joins:`,
    refused: `${p}:refused`,
    /** Prefix of the analytics' hour hashes: `${analytics}${hour}` = minute of the hour → sample (analytics-5.lua). */
    analytics: `${p}:an:`,
  }
}

// The seen buckets of a room, `${seenPrefix}${seenBucketOf(visitor)}`: the rule's (core/admission.ts).
export { SEEN_BUCKETS, seenBucketOf } from '../../core/admission.js'

/**
 * A room's access codes and invite links (access-store.ts, access-redeem-7.lua), under the room's hash
 * tag: the grants' terms, uses and revocations, code digests, each visitor's redemptions, the lanes'
 * last arrivals, the order of creation, and the prefix of the wrong tries' minute hashes.
 */
export function accessKeys(room: string) {
  const p = `anteroom:{${room}}:acc:`
  return {
    grants: `${p}g`,
    used: `${p}u`,
    revoked: `${p}r`,
    codes: `${p}c`,
    redeemed: `${p}v`,
    last: `${p}last`,
    /** Prefix: `${failures}${minute}` = network → wrong codes in that minute. */
    failures: `${p}f:`,
    /** Grant id → its number in the order of creation; `made` counts them. */
    order: `${p}o`,
    made: `${p}n`,
  }
}

/** One hash of every room's settings, field = room id, value = {"rev": n, "settings": {...}}. */
export const SETTINGS_KEY = 'anteroom:settings'

/** One hash of the page templates (template-store.ts): <name> = {"rev": n, "template": {...}}, rev:<name> = n. */
export const TEMPLATES_KEY = 'anteroom:templates'

/**
 * The admin audit log (audit-log.ts). Its keys share the hash tag {audit}: one append or read
 * touches several of them in one MULTI or pipeline, which a Redis Cluster allows within one slot.
 */
export const AUDIT_KEYS = {
  /** Sorted set: changes of settings and mode, score = their time (ms), kept 90 days. */
  changes: 'anteroom:{audit}:changes',
  /** List: every other entry, newest first, capped at 1,000. */
  actions: 'anteroom:{audit}:actions',
  /** Counter: the order of appends, so entries with the same time keep their order. */
  seq: 'anteroom:{audit}:seq',
} as const

/** An admin session ended by signing out (admin-sessions.ts); expires with the session's cookie. */
export const adminSessionKey = (sessionId: string) => `anteroom:admin-ended:${sessionId}`

/**
 * Failed admin sign-ins under one throttle key (`addr:<address>` or `name:<account>`). All share
 * the hash tag {admin-signin}, so one MULTI can count a failure against an address and an account.
 */
export const signInFailureKey = (key: string) => `anteroom:{admin-signin}:${key}`

/**
 * The claim gate of one event (claim-gate.ts, lua/gate-*.lua). Its keys share the hash tag {gate:<event>},
 * so one script touches all of them in one Cluster slot.
 */
export function gateKeys(event: string): [left: string, holds: string, units: string, meta: string] {
  const p = `anteroom:{gate:${event}}`
  return [`${p}:left`, `${p}:holds`, `${p}:units`, `${p}:meta`]
}

/**
 * An event's ordered lane (claim-lane.ts, lua/lane-*.lua). Its keys share the hash tag {lane:<event>}, so
 * a Cluster spreads events over its masters and one script touches all of an event's keys.
 */
export function laneKeys(event: string) {
  const p = `anteroom:{lane:${event}}`
  return {
    /** Stream: the lane's claims and notes, in order; one consumer group. */
    claims: `${p}:claims`,
    /** Prefix of the answers: `${answers}${entry id}` = a hash, claim id -> the allocator's answer (JSON). */
    answers: `${p}:e:`,
    /** String: the token of the allocator holding the event's lease. */
    lease: `${p}:lease`,
    /** Channel: the answers of each batch, published as a JSON list. */
    done: `${p}:done`,
  }
}

/** The channel pattern that every event's published answers match (laneKeys(event).done). */
export const LANE_DONE_PATTERN = 'anteroom:{lane:*}:done'

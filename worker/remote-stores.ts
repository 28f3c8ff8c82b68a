// The store ports as seen from the Worker: every call is a message (port, method, arguments)
// handed to a Dispatch, which runs it against real Redis stores somewhere that may hold a
// connection: a StoreRelay Durable Object (store-relay.ts), or a client made for this call alone.
import { AnteroomError, type ErrorCode } from '../src/core/errors.js'
import type { AccessStore } from '../src/ports/access-store.js'
import type { AdminSessions } from '../src/ports/admin-sessions.js'
import type { AnalyticsStore } from '../src/ports/analytics-store.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { ClaimGate } from '../src/ports/claim-gate.js'
import type { DefenceStore } from '../src/ports/defence-store.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import type { SettingsStore } from '../src/ports/settings-store.js'
import type { Stores } from '../src/ports/stores.js'
import type { TemplateStore } from '../src/ports/template-store.js'

/** The methods that may cross; nothing else is called on the far side. */
export const REMOTE_METHODS = {
  queue: [
    'poll',
    'renew',
    'endSession',
    'finishSession',
    'watch',
    'allowAgain',
    'draw',
    'endAllSessions',
    'stats',
    'recordSample',
    'history',
    'ping',
  ],
  settings: ['list', 'get', 'seed', 'replace'],
  audit: ['append', 'list'],
  adminSessions: ['revoke', 'isRevoked', 'recordSignInFailure', 'signInFailures', 'clearSignInFailures'],
  defence: ['countJoin', 'addRefusals'],
  gate: ['claim', 'release', 'sold', 'reconcile', 'counts'],
  analytics: ['record', 'minutes'],
  access: ['create', 'list', 'get', 'revoke', 'redeem'],
  templates: ['list', 'get', 'revisions', 'put', 'remove'],
} as const

export type Port = keyof typeof REMOTE_METHODS

export interface Call {
  port: Port
  method: string
  args: unknown[]
}

/** Errors do not keep their code across an RPC boundary, so results travel as values. */
export type Outcome = { ok: true; value: unknown } | { ok: false; code: ErrorCode; message: string }

/** Runs a call against real stores; the far side of a Dispatch. */
export async function runCall(stores: Stores, call: Call): Promise<Outcome> {
  // Own keys only: a port named "constructor" or "__proto__" must not reach Object.prototype.
  const allowed: readonly string[] | undefined = Object.hasOwn(REMOTE_METHODS, call.port) ? REMOTE_METHODS[call.port] : undefined
  if (allowed === undefined || typeof call.method !== 'string' || !allowed.includes(call.method)) {
    return { ok: false, code: 'ERR_BAD_REQUEST', message: `${String(call.port)}.${call.method} cannot be called remotely` }
  }
  const target = stores[call.port] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
  try {
    return { ok: true, value: await target[call.method]!.apply(target, call.args) }
  } catch (err) {
    if (err instanceof AnteroomError) return { ok: false, code: err.code, message: err.message }
    return { ok: false, code: 'ERR_STORE_UNAVAILABLE', message: 'The store failed' }
  }
}

/**
 * Sends a call to whichever place serves `route`, and answers its outcome. Calls with the same
 * route land in the same place, so polls of one room can share one Redis command.
 */
export type Dispatch = (route: string, call: Call) => Promise<Outcome>

export interface RemoteOptions {
  /** Polls of a room spread over this many routes, by visitor. */
  pollShards: number
}

/** A small stable hash, to spread a room's visitors over its poll shards. */
function shardOf(visitor: string, shards: number): number {
  let h = 0
  for (let i = 0; i < visitor.length; i++) h = (Math.imul(h, 31) + visitor.charCodeAt(i)) | 0
  return (h >>> 0) % shards
}

export function remoteStores(dispatch: Dispatch, options: RemoteOptions): Stores {
  const send = async (route: string, port: Port, method: string, args: unknown[]): Promise<never> => {
    let outcome: Outcome
    try {
      outcome = await dispatch(route, { port, method, args })
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'The store relay did not answer', { cause })
    }
    if (!outcome.ok) throw new AnteroomError(outcome.code, outcome.message)
    return outcome.value as never
  }
  const room = (id: string) => `room:${id}`
  const queue: QueueStore = {
    poll: (input) => send(`${room(input.room)}:${shardOf(input.visitor, options.pollShards)}`, 'queue', 'poll', [input]),
    renew: (input) => send(room(input.room), 'queue', 'renew', [input]),
    endSession: (id, visitor, now) => send(room(id), 'queue', 'endSession', [id, visitor, now]),
    finishSession: (input) => send(room(input.room), 'queue', 'finishSession', [input]),
    watch: (id, since, limit, look) => send(room(id), 'queue', 'watch', [id, since, limit, look]),
    allowAgain: (id, visitor) => send(room(id), 'queue', 'allowAgain', [id, visitor]),
    draw: (id, offset, limit) => send(room(id), 'queue', 'draw', [id, offset, limit]),
    endAllSessions: (id, now) => send(room(id), 'queue', 'endAllSessions', [id, now]),
    stats: (id, now) => send(room(id), 'queue', 'stats', [id, now]),
    recordSample: (id, now) => send(room(id), 'queue', 'recordSample', [id, now]),
    history: (id) => send(room(id), 'queue', 'history', [id]),
    ping: async () => {
      try {
        return await send('control', 'queue', 'ping', [])
      } catch {
        return false
      }
    },
    close: async () => {},
  }
  const settings: SettingsStore = {
    list: () => send('control', 'settings', 'list', []),
    get: (id) => send('control', 'settings', 'get', [id]),
    seed: (rooms) => send('control', 'settings', 'seed', [rooms]),
    replace: (s, rev) => send('control', 'settings', 'replace', [s, rev]),
  }
  const audit: AuditLog = {
    append: (entry) => send('control', 'audit', 'append', [entry]),
    list: (limit, query) => send('control', 'audit', 'list', [limit, query]),
  }
  const adminSessions: AdminSessions = {
    revoke: (id, ttlMs) => send('control', 'adminSessions', 'revoke', [id, ttlMs]),
    isRevoked: (id) => send('control', 'adminSessions', 'isRevoked', [id]),
    recordSignInFailure: (keys, nowMs) => send('control', 'adminSessions', 'recordSignInFailure', [keys, nowMs]),
    signInFailures: (keys, nowMs) => send('control', 'adminSessions', 'signInFailures', [keys, nowMs]),
    clearSignInFailures: (keys) => send('control', 'adminSessions', 'clearSignInFailures', [keys]),
  }
  // A room's relay, as its other calls: one round trip for a join, one for an edge's second of refusals.
  const defence: DefenceStore = {
    countJoin: (input) => send(room(input.room), 'defence', 'countJoin', [input]),
    addRefusals: (id, counts, now) => send(room(id), 'defence', 'addRefusals', [id, counts, now]),
  }
  // An event's relay, apart from the rooms': the edge reads its counts once a second per isolate (the
  // origin, which writes the gate, runs on Node; its calls are here so that the port is whole).
  const event = (id: string) => `gate:${id}`
  const gate: ClaimGate = {
    claim: (input) => send(event(input.event), 'gate', 'claim', [input]),
    release: (id, hold, now) => send(event(id), 'gate', 'release', [id, hold, now]),
    sold: (id, hold, units, now) => send(event(id), 'gate', 'sold', [id, hold, units, now]),
    reconcile: (id, snapshot, graceMs, now) => send(event(id), 'gate', 'reconcile', [id, snapshot, graceMs, now]),
    counts: (id, now) => send(event(id), 'gate', 'counts', [id, now]),
  }
  // A room's relay, as its other calls: an isolate's record a minute, and a report's read.
  const analytics: AnalyticsStore = {
    record: (input) => send(room(input.room), 'analytics', 'record', [input]),
    minutes: (id, from, to) => send(room(id), 'analytics', 'minutes', [id, from, to]),
  }
  // A room's relay, as its other calls: a redemption (a code's first use at an edge), and the admin's.
  const access: AccessStore = {
    create: (id, grants) => send(room(id), 'access', 'create', [id, grants]),
    list: (id, offset, limit) => send(room(id), 'access', 'list', [id, offset, limit]),
    get: (id, grant) => send(room(id), 'access', 'get', [id, grant]),
    revoke: (id, grant, at) => send(room(id), 'access', 'revoke', [id, grant, at]),
    redeem: (input) => send(room(input.room), 'access', 'redeem', [input]),
  }
  // Templates with the settings: an isolate asks for their revisions once a second, and reads one when it moved.
  const templates: TemplateStore = {
    list: () => send('control', 'templates', 'list', []),
    get: (name) => send('control', 'templates', 'get', [name]),
    revisions: (names) => send('control', 'templates', 'revisions', [names]),
    put: (template, rev) => send('control', 'templates', 'put', [template, rev]),
    remove: (name, rev) => send('control', 'templates', 'remove', [name, rev]),
  }
  return { queue, settings, audit, adminSessions, defence, gate, analytics, access, templates }
}

// The admin API's access codes and invite links (core/access.ts), under /_anteroom/api/rooms/:id/access:
// list a room's grants with their uses, make codes (each shown once, in the answer) or an invite link
// (which the edge can sign again from its terms), show a link again, revoke one. Every making and
// every revocation is in the audit log, never with a code in it. Bad input is a 400 that names its
// field. routes.ts mounts these behind the API's credentials and CSRF check.
import type { Context, Hono } from 'hono'
import {
  type AccessGrant,
  formatCode,
  GRANT_ID,
  type GrantTerms,
  grantState,
  hasSeparateLane,
  type Lane,
  laneRoomId,
  MAX_GRANT_DAYS,
  newAccessCode,
  newGrantId,
} from '../src/core/access.js'
import { type ObjectNode, readBody } from '../src/core/body-schema.js'
import { AnteroomError, isAnteroomError } from '../src/core/errors.js'
import { ISO_TIME, type RoomSettings } from '../src/core/settings.js'
import type { AccessDeps } from '../src/http/access.js'
import { GRANT_PAGE_MAX } from '../src/ports/access-store.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import type { SettingsStore } from '../src/ports/settings-store.js'

/** Codes one request makes at most. */
export const MAX_CODES = 500
/** Uses one code or link may have at most. */
export const MAX_USES = 1_000_000
/** A grant's label: up to 80 characters, printable ones (no control character of ASCII or Latin-1). */
export const GRANT_LABEL = /^[ -~\u00a0-\uffff]{0,80}$/
export const LANE_NAME = /^(priority|separate)$/

const expiresAt = {
  type: 'string',
  pattern: ISO_TIME,
  wrong: 'must be an ISO 8601 time with a time zone, like 2026-12-01T10:00:00+01:00',
  description: `When it stops working: after now, at most ${MAX_GRANT_DAYS} days ahead.`,
} as const
const maxUses = (what: string) =>
  ({
    type: 'integer',
    minimum: 1,
    maximum: MAX_USES,
    wrong: `must be a whole number from 1 to ${MAX_USES.toLocaleString('en')}`,
    description: `How many visitors ${what} may place.`,
  }) as const
const lane = {
  type: 'string',
  pattern: LANE_NAME,
  wrong: 'must be priority or separate',
  description: 'priority: before the public line, at the room’s cap and rate; separate: the room’s separate lane, at its own.',
} as const
const label = {
  type: 'string',
  pattern: GRANT_LABEL,
  absent: [null, ''],
  wrong: 'must be at most 80 characters, none of them a control character',
  description: 'What it is for, for the admins (never shown to visitors).',
} as const

/** POST /api/rooms/:id/access/codes. */
export const ACCESS_CODES_BODY: ObjectNode = {
  type: 'object',
  unknown: 'is not a member of this body',
  wrong: 'The body must be a JSON object',
  required: ['count', 'maxUses', 'expiresAt', 'lane'],
  properties: {
    count: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_CODES,
      wrong: `must be a whole number from 1 to ${MAX_CODES}`,
      description: 'How many codes to make, each with its own uses.',
    },
    maxUses: maxUses('each code'),
    expiresAt,
    lane,
    label,
  },
}

/** POST /api/rooms/:id/access/links. */
export const ACCESS_LINK_BODY: ObjectNode = {
  type: 'object',
  unknown: 'is not a member of this body',
  wrong: 'The body must be a JSON object',
  required: ['maxUses', 'expiresAt', 'lane'],
  properties: { maxUses: maxUses('the link'), expiresAt, lane, label },
}

/** A grant as the API shows it: its terms, uses and revocation, what is left and its state. */
export function grantView(g: AccessGrant, now: number) {
  return { ...g, remaining: Math.max(0, g.maxUses - g.used), state: grantState(g, now) }
}

type Env = { Variables: { who: string; viaCookie: boolean } }

export interface AccessRouteDeps {
  access: AccessDeps
  settings: SettingsStore
  queue: Pick<QueueStore, 'stats'>
  audit: AuditLog
  now(): number
  /** The store's clock in tests (a manual one); undefined: the store's own. */
  storeNow(): number | undefined
  /** A JSON object body (routes/common.ts readJson): ERR_BODY, ERR_BODY_TOO_LARGE otherwise. */
  readJson(c: Context): Promise<Record<string, unknown>>
}

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_BAD_REQUEST', `${field}: ${message}`, { field })
}

/** The time a body's expiresAt names: after now and at most MAX_GRANT_DAYS ahead. */
function expiry(text: string, now: number): number {
  const at = Date.parse(text)
  if (Number.isNaN(at)) bad('expiresAt', expiresAt.wrong)
  if (at <= now) bad('expiresAt', 'must be after now')
  if (at > now + MAX_GRANT_DAYS * 86_400_000) bad('expiresAt', `must be at most ${MAX_GRANT_DAYS} days ahead`)
  return at
}

/** A query parameter that must be a whole number from `min` to `max`; `fallback` when absent. */
function whole(c: Context, name: string, min: number, max: number, fallback: number): number {
  const text = c.req.query(name)
  if (text === undefined || text === '') return fallback
  if (!/^\d{1,9}$/.test(text) || Number(text) < min || Number(text) > max) bad(name, `must be a whole number from ${min} to ${max}`)
  return Number(text)
}

/** The path of a room's invite link: its first path (or /), with the token as ?code=. */
function linkPath(room: RoomSettings, token: string): string {
  return `${room.paths[0] ?? '/'}?code=${encodeURIComponent(token)}`
}

export function accessRoutes(app: Hono<Env>, deps: AccessRouteDeps): void {
  const { access } = deps

  async function room(c: Context): Promise<RoomSettings> {
    const found = await deps.settings.get(c.req.param('id') ?? '')
    if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'id' })
    return found.settings
  }

  async function grant(c: Context, r: RoomSettings): Promise<AccessGrant> {
    const id = c.req.param('grant') ?? ''
    const found = GRANT_ID.test(id) ? await access.store.get(r.id, id) : undefined
    if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such code or link in this room', { field: 'grant' })
    return found
  }

  /** The terms every new grant of a request shares, checked: the lane must exist in the room. */
  function termsOf(c: Context<Env>, r: RoomSettings, body: { maxUses: number; expiresAt: string; lane: Lane; label?: string | null }) {
    const now = deps.now()
    if (body.lane === 'separate' && !hasSeparateLane(r))
      bad('lane', 'this room has no separate lane: give it one first (laneActiveUsers above 0 in its settings)')
    return {
      lane: body.lane,
      label: body.label ?? '',
      maxUses: body.maxUses,
      expiresAt: expiry(body.expiresAt, now),
      createdAt: now,
      createdBy: c.get('who'),
    }
  }

  async function audit(c: Context<Env>, action: string, room: string, before: unknown, after: unknown): Promise<void> {
    await deps.audit.append({ at: new Date(deps.now()).toISOString(), who: c.get('who'), action, room, before, after })
  }

  app.get('/api/rooms/:id/access', async (c) => {
    const r = await room(c)
    const offset = whole(c, 'offset', 0, 1_000_000_000, 0)
    const limit = whole(c, 'limit', 1, GRANT_PAGE_MAX, 100)
    const page = await access.store.list(r.id, offset, limit)
    // The separate lane's line as the store has it now (null: the room has none, or the store is away).
    let line: { waiting: number; active: number } | null = null
    if (hasSeparateLane(r)) {
      try {
        const s = await deps.queue.stats(laneRoomId(r.id), deps.storeNow())
        line = { waiting: s.waiting, active: s.active }
      } catch (err) {
        if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      }
    }
    const now = deps.now()
    return c.json({
      room: r.id,
      takesCodes: r.accessCodes === 'on',
      lane: { activeUsers: r.laneActiveUsers, usersPerMinute: r.laneUsersPerMinute, line },
      total: page.total,
      offset,
      grants: page.grants.map((g) => grantView(g, now)),
    })
  })

  app.post('/api/rooms/:id/access/codes', async (c) => {
    const r = await room(c)
    const body = readBody<{ count: number; maxUses: number; expiresAt: string; lane: Lane; label?: string | null }>(
      ACCESS_CODES_BODY,
      await deps.readJson(c),
      'ERR_BAD_REQUEST',
    )
    const shared = termsOf(c, r, body)
    const codes = Array.from({ length: body.count }, () => newAccessCode())
    const made = codes.map((code) => {
      const terms: GrantTerms = { id: newGrantId(), kind: 'code', ...shared, hint: code.slice(-4) }
      return { terms, digest: access.tokens.codeDigest(r.id, code) }
    })
    await access.store.create(r.id, made)
    // The audit keeps what was made, never a code: a code is shown once, here.
    await audit(c, 'access.create', r.id, null, {
      kind: 'code',
      count: body.count,
      lane: shared.lane,
      maxUses: shared.maxUses,
      expiresAt: new Date(shared.expiresAt).toISOString(),
      label: shared.label,
      grants: made.map((g) => g.terms.id),
    })
    const now = deps.now()
    return c.json(
      {
        grants: made.map((g) => grantView({ ...g.terms, used: 0, revokedAt: null }, now)),
        codes: codes.map(formatCode),
      },
      201,
    )
  })

  app.post('/api/rooms/:id/access/links', async (c) => {
    const r = await room(c)
    const body = readBody<{ maxUses: number; expiresAt: string; lane: Lane; label?: string | null }>(
      ACCESS_LINK_BODY,
      await deps.readJson(c),
      'ERR_BAD_REQUEST',
    )
    const terms: GrantTerms = { id: newGrantId(), kind: 'link', ...termsOf(c, r, body), hint: '' }
    await access.store.create(r.id, [{ terms }])
    await audit(c, 'access.create', r.id, null, {
      kind: 'link',
      count: 1,
      lane: terms.lane,
      maxUses: terms.maxUses,
      expiresAt: new Date(terms.expiresAt).toISOString(),
      label: terms.label,
      grants: [terms.id],
    })
    const token = access.tokens.link({ room: r.id, grant: terms.id, lane: terms.lane, maxUses: terms.maxUses, expiresAt: terms.expiresAt })
    return c.json({ grant: grantView({ ...terms, used: 0, revokedAt: null }, deps.now()), token, link: linkPath(r, token) }, 201)
  })

  // A link is signed from its terms: the edge can make it again. A code cannot be shown again.
  app.get('/api/rooms/:id/access/:grant/link', async (c) => {
    const r = await room(c)
    const g = await grant(c, r)
    if (g.kind !== 'link')
      throw new AnteroomError('ERR_NOT_FOUND', 'An access code is shown once, when it is made; only invite links can be shown again', {
        field: 'grant',
      })
    const token = access.tokens.link({ room: r.id, grant: g.id, lane: g.lane, maxUses: g.maxUses, expiresAt: g.expiresAt })
    return c.json({ grant: grantView(g, deps.now()), token, link: linkPath(r, token) })
  })

  app.post('/api/rooms/:id/access/:grant/revoke', async (c) => {
    const r = await room(c)
    const before = await grant(c, r)
    const after = (await access.store.revoke(r.id, before.id, deps.now())) as AccessGrant
    await audit(
      c,
      'access.revoke',
      r.id,
      { grant: before.id, kind: before.kind, lane: before.lane, label: before.label, used: before.used, maxUses: before.maxUses },
      { revokedAt: new Date(after.revokedAt ?? deps.now()).toISOString() },
    )
    return c.json({ grant: grantView(after, deps.now()) })
  })
}

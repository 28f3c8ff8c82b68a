// The admin API of a room's bypass rules and human check (core/bypass.ts, core/human-check.ts), under
// /_anteroom/api/rooms/:id/bypass: what the Bypass & checks view shows (the rules, the human check's
// settings and provider, the secrets and crawlers a rule may name, and this edge's counts), and a rule
// added, replaced or removed. A rule is part of the room's settings (`bypass`), so a change is written
// compare-and-set on the room's revision (If-Match when sent; otherwise on the settings as they are
// now, again if another change lands between), reaches every edge within a second, and is audited
// (bypass.add, bypass.update, bypass.remove: kept as changes). Bad input is a 400 naming its field: an
// invalid block, a path that is not canonical or lies outside the room, an unknown crawler or secret.
// The human check's two settings are changed with PATCH /rooms/:id, as any setting. routes.ts mounts these.
import type { Context, Hono } from 'hono'
import { BYPASS_KINDS, type BypassRule, checkRulePaths, checkRuleSecret, parseBypassRule } from '../src/core/bypass.js'
import { CRAWLERS } from '../src/core/crawlers.js'
import { AnteroomError } from '../src/core/errors.js'
import { parseRoomSettings, type RoomSettings } from '../src/core/settings.js'
import type { Guards } from '../src/http/guards.js'
import type { AuditLog } from '../src/ports/audit-log.js'
import type { SettingsStore, VersionedRoom } from '../src/ports/settings-store.js'
import type { RoomDirectory } from '../src/rooms/directory.js'
import { ETAG } from './inputs.js'

export interface BypassAdminDeps {
  settings: SettingsStore
  audit: AuditLog
  rooms: RoomDirectory
  guards: Guards
  now: () => number
  readJson: (c: Context) => Promise<Record<string, unknown>>
}

/** The admin API's variables (routes/common.ts Env): who is signed in, and how. */
type Env = { Variables: { who: string; viaCookie: boolean } }

const etag = (rev: number) => `"rev-${rev}"`
/** Tries of a change without If-Match when other changes keep landing between the read and the write. */
const TRIES = 4

function stale(current: VersionedRoom | undefined): AnteroomError {
  return new AnteroomError('ERR_STALE', 'Someone else changed this room first; here are the current settings', {
    extra: { current: current?.settings, etag: current ? etag(current.rev) : undefined },
  })
}

async function roomOf(deps: BypassAdminDeps, c: Context): Promise<VersionedRoom> {
  const found = await deps.settings.get(c.req.param('id') ?? '')
  if (found === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such room', { field: 'id' })
  return found
}

/** What the view shows of a room. */
function overview(deps: BypassAdminDeps, room: VersionedRoom) {
  const s = room.settings
  const provider = deps.guards.humanCheck?.widget
  return {
    room: s.id,
    etag: etag(room.rev),
    rules: s.bypass,
    humanCheck: {
      mode: s.humanCheck,
      onError: s.humanCheckOnError,
      provider: provider === undefined ? null : { siteKey: provider.siteKey, scriptUrl: provider.scriptUrl },
    },
    kinds: BYPASS_KINDS,
    secrets: deps.guards.secretNames,
    crawlers: CRAWLERS.map((c) => ({ name: c.name, label: c.label, domains: c.domains })),
    crawlerChecks: deps.guards.crawlers !== undefined,
    // This edge's counts since it started (on a Worker, this isolate's); Prometheus adds up every edge's.
    counts: deps.guards.meters.counts(s.id, s.bypass),
  }
}

/** A rule as the body gives it: checked on its own (fields named as in the body), against the room and this deployment. */
function ruleOf(deps: BypassAdminDeps, body: Record<string, unknown>, room: RoomSettings): BypassRule {
  const rule = parseBypassRule(body)
  checkRulePaths(rule, room.paths, '')
  checkRuleSecret(rule, new Set(deps.guards.secretNames), '')
  return rule
}

/**
 * Writes `change` of the room's rules: on the revision If-Match names (412 if another is current), or
 * on the current one, again while others land between. Audited; this edge reloads at once.
 */
async function changeRules(
  deps: BypassAdminDeps,
  c: Context<Env>,
  action: 'bypass.add' | 'bypass.update' | 'bypass.remove',
  change: (room: RoomSettings) => { rules: BypassRule[]; before: BypassRule | null; after: BypassRule | null },
): Promise<{ etag: string; before: BypassRule | null; after: BypassRule | null }> {
  const ifMatch = c.req.header('if-match')
  for (let attempt = 1; ; attempt++) {
    const current = await roomOf(deps, c)
    if (ifMatch !== undefined && Number(ETAG.exec(ifMatch)?.[1] ?? -1) !== current.rev) {
      c.header('etag', etag(current.rev))
      throw stale(current)
    }
    const { rules, before, after } = change(current.settings)
    // The room as a whole, as any change of its settings is checked (the rule itself was, against this deployment).
    const next = parseRoomSettings({ ...current.settings, bypass: rules })
    const written = await deps.settings.replace(next, current.rev)
    if (!written.ok) {
      if (ifMatch === undefined && attempt < TRIES) continue
      throw stale(written.current)
    }
    await deps.audit.append({ at: new Date(deps.now()).toISOString(), who: c.get('who'), action, room: next.id, before, after })
    await deps.rooms.reload()
    c.header('etag', etag(written.rev))
    return { etag: etag(written.rev), before, after }
  }
}

function ruleIndex(rules: readonly BypassRule[], id: string): number {
  const i = rules.findIndex((r) => r.id === id)
  if (i < 0) throw new AnteroomError('ERR_NOT_FOUND', `This room has no bypass rule ${JSON.stringify(id.slice(0, 40))}`, { field: 'rule' })
  return i
}

export function bypassRoutes(app: Hono<Env>, deps: BypassAdminDeps): void {
  app.get('/api/rooms/:id/bypass', async (c) => {
    const room = await roomOf(deps, c)
    c.header('etag', etag(room.rev))
    return c.json(overview(deps, room))
  })

  app.post('/api/rooms/:id/bypass/rules', async (c) => {
    const body = await deps.readJson(c)
    const done = await changeRules(deps, c, 'bypass.add', (room) => {
      const rule = ruleOf(deps, body, room)
      if (room.bypass.some((r) => r.id === rule.id))
        throw new AnteroomError('ERR_SETTINGS_INVALID', `id: this room already has a rule ${rule.id}`, { field: 'id' })
      return { rules: [...room.bypass, rule], before: null, after: rule }
    })
    return c.json({ rule: done.after, etag: done.etag }, 201)
  })

  app.put('/api/rooms/:id/bypass/rules/:rule', async (c) => {
    const body = await deps.readJson(c)
    const id = c.req.param('rule')
    const done = await changeRules(deps, c, 'bypass.update', (room) => {
      const i = ruleIndex(room.bypass, id)
      // The id names the rule in the path; the body may repeat it, not change it.
      if (body.id !== undefined && body.id !== id) throw new AnteroomError('ERR_SETTINGS_INVALID', 'id: cannot be changed', { field: 'id' })
      const rule = ruleOf(deps, { ...body, id }, room)
      const rules = [...room.bypass]
      rules[i] = rule
      return { rules, before: room.bypass[i] ?? null, after: rule }
    })
    return c.json({ rule: done.after, etag: done.etag })
  })

  app.delete('/api/rooms/:id/bypass/rules/:rule', async (c) => {
    const id = c.req.param('rule')
    const done = await changeRules(deps, c, 'bypass.remove', (room) => {
      const i = ruleIndex(room.bypass, id)
      return { rules: room.bypass.filter((_, j) => j !== i), before: room.bypass[i] ?? null, after: null }
    })
    return c.json({ removed: done.before, etag: done.etag })
  })
}

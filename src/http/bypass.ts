// Bypass rules at the edge (core/bypass.ts): after the room is matched and before the line, whether a
// rule lets this request skip it. A room without rules costs one property read; a room with rules
// costs, per request, a look at the client address (a few integer operations for IPv4), and only
// when the room has such rules a header's MAC, a path prefix or a crawler check (a User-Agent that
// names a crawler, then DNS, cached). No store call either way. A bypassed request is forwarded with
// an admission of its own: short (60 s), marked with the rule (`bypass`), never set as a cookie (a
// pass by network, secret or path must not travel to another client), not counted in the line.
import type { Context } from 'hono'
import {
  BYPASS_HEADER,
  BYPASS_SECRET_DOMAIN,
  type BypassRule,
  type CompiledBypass,
  cidrRule,
  compileBypass,
  headerRule,
  pathRule,
} from '../core/bypass.js'
import type { CrawlerVerdict } from '../core/crawlers.js'
import type { CounterCell } from '../core/metrics.js'
import { newVisitorId } from '../core/queue-token.js'
import type { RoomSettings } from '../core/settings.js'
import type { EdgeContext } from './edge-context.js'
import type { Guards } from './guards.js'
import { forward } from './proxy.js'
import type { Incoming } from './request.js'

/** How long a bypass admission lasts, s; it is signed again once half has gone. */
export const BYPASS_ADMISSION_SECONDS = 60

interface CompiledRoom {
  rules: CompiledBypass
  /** Each rule's count (anteroom_bypasses_total), by rule id. */
  cells: Map<string, CounterCell>
}

/** Each room's rules, compiled once per settings object (the directory makes a new one when settings change). */
const compiledRooms = new WeakMap<RoomSettings, WeakMap<Guards, CompiledRoom>>()

function compiledFor(guards: Guards, room: RoomSettings): CompiledRoom {
  let byGuards = compiledRooms.get(room)
  if (byGuards === undefined) compiledRooms.set(room, (byGuards = new WeakMap()))
  let compiled = byGuards.get(guards)
  if (compiled === undefined) {
    const rules = compileBypass(room.bypass, guards.secretMac)
    const cells = new Map(room.bypass.map((r) => [r.id, guards.meters.bypass(room.id, r.id, r.kind)]))
    byGuards.set(guards, (compiled = { rules, cells }))
  }
  return compiled
}

/** Whether the room has any bypass rule: the one check every request of a room without makes. */
export function hasBypass(room: RoomSettings): boolean {
  return room.bypass.length > 0
}

/**
 * The rule that lets this request past the line, if any: the client's network, the secret header, the
 * path, then a crawler (the only step that may wait, on DNS, and only for a User-Agent that names one).
 */
export function bypassRule(edge: EdgeContext, room: RoomSettings, req: Incoming): BypassRule | undefined | Promise<BypassRule | undefined> {
  const guards = edge.deps.guards
  if (guards === undefined) return undefined
  const { rules } = compiledFor(guards, room)
  const byNetwork = cidrRule(rules, req.client)
  if (byNetwork !== undefined) return byNetwork
  if (rules.header.length > 0) {
    const given = req.context.req.header(BYPASS_HEADER)
    if (given !== undefined && given !== '') {
      // Compared as MACs: equal lengths whatever was sent, and every rule compared (core/bypass.ts).
      const rule = headerRule(rules, guards.mac.sign(`${BYPASS_SECRET_DOMAIN}${given}`))
      if (rule !== undefined) return rule
    }
  }
  const byPath = pathRule(rules, req.pathKey)
  if (byPath !== undefined) return byPath
  if (rules.crawlerHint === undefined || guards.crawlers === undefined || req.client === undefined) return undefined
  const agent = req.context.req.header('user-agent')
  // One expression for the room's crawlers: a browser's request is tested once, and goes on.
  if (agent === undefined || !rules.crawlerHint.test(agent)) return undefined
  const hinted = rules.crawlerSpecs.filter((c) => c.userAgent.test(agent))
  const pick = (verdict: CrawlerVerdict): BypassRule | undefined => {
    if (verdict.outcome !== 'verified' || !hinted.some((c) => c.name === verdict.crawler)) return undefined
    return rules.crawler.find((r) => r.crawlers.has(verdict.crawler))?.rule
  }
  const verdict = guards.crawlers.check(req.client)
  return verdict instanceof Promise ? verdict.then(pick) : pick(verdict)
}

/**
 * A request a rule lets past: counted, logged (never with the header's value), and forwarded with a
 * bypass admission, one per room, rule and client address, signed again once half its life has gone.
 */
export async function serveBypassed(edge: EdgeContext, c: Context, req: Incoming, room: RoomSettings, rule: BypassRule): Promise<Response> {
  const guards = edge.deps.guards as Guards
  const cell = compiledFor(guards, room).cells.get(rule.id)
  if (cell !== undefined) cell.value++
  const { token, visitor } = await bypassAdmission(edge, guards, room, rule, req.client)
  edge.log('bypass', { room: room.id, rule: rule.id, kind: rule.kind, requestId: edge.requestId(c) })
  return forward(edge, c, req, room, { visitor, token, cookies: [] })
}

async function bypassAdmission(
  edge: EdgeContext,
  guards: Guards,
  room: RoomSettings,
  rule: BypassRule,
  client: string | undefined,
): Promise<{ token: string; visitor: string }> {
  const now = edge.now()
  const key = `${room.id}\n${rule.id}\n${client ?? ''}`
  const kept = guards.bypassTokens.get(key)
  if (kept !== undefined && kept.renewAt > now) return kept
  // The visitor id is the client's under this rule, the same across tokens, and says nothing of the address.
  const visitor = kept?.visitor ?? guards.mac.sign(`bypass-visitor|${key}`).slice(0, 16)
  const exp = Math.floor(now / 1000) + BYPASS_ADMISSION_SECONDS
  const token = await edge.deps.admissionTokens.sign(
    { sub: visitor, jti: newVisitorId(), room: room.id, arr: now, exp, bypass: rule.id },
    now,
  )
  const entry = { token, visitor, renewAt: now + (BYPASS_ADMISSION_SECONDS * 1000) / 2 }
  guards.bypassTokens.set(key, entry)
  return entry
}

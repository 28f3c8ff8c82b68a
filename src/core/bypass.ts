// Bypass rules (the room setting `bypass`): requests that skip the line. On a ticket sale a way past
// the line is the most valuable thing the edge can give, so no rule trusts a value the client wrote
// alone:
//   cidr     the runtime's client address (the socket on Node, CF-Connecting-IP on a Worker, which
//            Cloudflare sets), never X-Forwarded-For or any other header; IPv4-mapped IPv6 counts as IPv4
//   header   Anteroom-Bypass carrying a secret of at least 32 characters, configured by name
//            (ANTEROOM_BYPASS_SECRETS, never in the settings), compared as MACs in constant time; like
//            every anteroom-* header it never reaches the origin
//   path     the canonical path (core/path.ts), case-insensitive as rooms are, by whole segments, and
//            only inside the room's own paths: a rule cannot reach another room's
//   crawler  a search crawler whose User-Agent is only the hint that starts a reverse-and-forward DNS
//            check of the address (core/crawlers.ts)
// This module checks rules (errors name the field) and compiles a room's rules once per settings
// object into what a request is matched against; src/http/bypass.ts applies them.
import { CidrMatcher, parseCidr } from './cidr.js'
import { safeEqual } from './compare.js'
import { CRAWLER_NAMES, CRAWLERS, type CrawlerSpec } from './crawlers.js'
import { AnteroomError } from './errors.js'
import { canonicalPath } from './path.js'

export const BYPASS_KINDS = ['cidr', 'header', 'path', 'crawler'] as const
export type BypassKind = (typeof BYPASS_KINDS)[number]

/** A rule's id: it names the rule in the admission token's `bypass` claim, the metrics and the log. */
export const BYPASS_RULE_ID = /^[a-z0-9][a-z0-9-]{0,31}$/
/** A secret's name in ANTEROOM_BYPASS_SECRETS. */
export const BYPASS_SECRET_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/
/** The shortest secret a header rule may use. */
export const MIN_BYPASS_SECRET = 32
/** The request header a header rule reads. Like every anteroom-* header, it never reaches the origin (forward-headers.ts). */
export const BYPASS_HEADER = 'anteroom-bypass'
/** The MAC domain a secret and a header value are compared in. */
export const BYPASS_SECRET_DOMAIN = 'bypass-secret|'

export const BYPASS_LIMITS = { rules: 32, networks: 64, paths: 16 } as const

export type BypassRule =
  | { id: string; kind: 'cidr'; networks: string[] }
  | { id: string; kind: 'header'; secret: string }
  | { id: string; kind: 'path'; paths: string[] }
  | { id: string; kind: 'crawler'; crawlers: string[] }

/** The members of each kind of rule, besides id and kind. */
const MEMBERS: Record<BypassKind, string> = { cidr: 'networks', header: 'secret', path: 'paths', crawler: 'crawlers' }

function fail(field: string, message: string): never {
  throw new AnteroomError('ERR_SETTINGS_INVALID', `${field}: ${message}`, { field })
}

function stringList(given: unknown, field: string, max: number, what: string): string[] {
  if (!Array.isArray(given) || given.length === 0 || given.length > max) fail(field, `must be a list of 1 to ${max} ${what}`)
  return given.map((item, i) => {
    if (typeof item !== 'string' || item.length === 0 || item.length > 255) fail(`${field}[${i}]`, `must be one of ${what}`)
    return item
  })
}

/**
 * One rule, checked and as stored. `where` prefixes field names in errors: "bypass[2]." in a room's
 * settings, "" for a rule on its own (the admin API's rule routes).
 */
export function parseBypassRule(given: unknown, where = ''): BypassRule {
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    fail(where.replace(/\.$/, '') || 'rule', 'must be an object { id, kind, ... }')
  const raw = given as Record<string, unknown>
  const id = raw.id
  if (typeof id !== 'string' || !BYPASS_RULE_ID.test(id)) fail(`${where}id`, 'must be 1-32 lower-case letters, digits or dashes')
  const kind = raw.kind
  if (typeof kind !== 'string' || !(BYPASS_KINDS as readonly string[]).includes(kind))
    fail(`${where}kind`, `must be one of ${BYPASS_KINDS.join(', ')}`)
  const k = kind as BypassKind
  for (const key of Object.keys(raw)) {
    if (key !== 'id' && key !== 'kind' && key !== MEMBERS[k])
      fail(`${where}${key}`, `is not part of a ${k} rule (it has id, kind and ${MEMBERS[k]})`)
  }
  const field = `${where}${MEMBERS[k]}`
  switch (k) {
    case 'cidr': {
      const networks = stringList(raw.networks, field, BYPASS_LIMITS.networks, 'IP blocks like 192.0.2.0/24 or 2001:db8::/32')
      return {
        id,
        kind: 'cidr',
        networks: networks.map((text, i) => {
          const parsed = parseCidr(text)
          if (!parsed.ok) fail(`${field}[${i}]`, parsed.problem)
          return parsed.text
        }),
      }
    }
    case 'header': {
      const secret = raw.secret
      if (typeof secret !== 'string' || !BYPASS_SECRET_NAME.test(secret))
        fail(
          field,
          'must name a secret of ANTEROOM_BYPASS_SECRETS (1-32 lower-case letters, digits or dashes); the secret itself is never a setting',
        )
      return { id, kind: 'header', secret }
    }
    case 'path': {
      const paths = stringList(raw.paths, field, BYPASS_LIMITS.paths, 'paths like /tickets/static')
      return {
        id,
        kind: 'path',
        paths: paths.map((path, i) => {
          if (!path.startsWith('/')) fail(`${field}[${i}]`, 'must start with /')
          const canonical = canonicalPath(path)
          if (!canonical.ok) fail(`${field}[${i}]`, `must be a plain path like /tickets/static: ${canonical.problem}`)
          if (canonical.path !== path) fail(`${field}[${i}]`, `must be written in canonical form: ${canonical.path}`)
          if (path === '/') fail(`${field}[${i}]`, 'must not be / (every path): that is a room in pass-through mode')
          return path
        }),
      }
    }
    case 'crawler': {
      const crawlers = stringList(raw.crawlers, field, CRAWLERS.length, `the known crawlers (${CRAWLER_NAMES.join(', ')})`)
      crawlers.forEach((name, i) => {
        if (!CRAWLER_NAMES.includes(name)) fail(`${field}[${i}]`, `is not a known crawler: one of ${CRAWLER_NAMES.join(', ')}`)
      })
      return { id, kind: 'crawler', crawlers: [...new Set(crawlers)] }
    }
  }
}

/** A room's rules (the `bypass` setting), checked; ids are unique within the room. */
export function parseBypassRules(given: unknown, field: string): BypassRule[] {
  const value = given ?? []
  if (!Array.isArray(value) || value.length > BYPASS_LIMITS.rules) fail(field, `must be a list of at most ${BYPASS_LIMITS.rules} rules`)
  const ids = new Set<string>()
  return value.map((item, i) => {
    const rule = parseBypassRule(item, `${field}[${i}].`)
    if (ids.has(rule.id)) fail(`${field}[${i}].id`, `"${rule.id}" is used twice`)
    ids.add(rule.id)
    return Object.freeze(rule)
  })
}

/** Whether a path key lies under a prefix by whole segments (as rooms match: core/rooms.ts). */
export function underPrefix(prefix: string, key: string): boolean {
  if (!key.startsWith(prefix)) return false
  return prefix.endsWith('/') || key.length === prefix.length || key[prefix.length] === '/'
}

/**
 * A rule across settings: a path rule lies inside the room's own paths (any path, in a room on every
 * path), so that it can never widen the bypass to another room's paths.
 */
export function checkBypassPaths(rules: readonly BypassRule[], roomPaths: readonly string[], field: string): void {
  for (const [i, rule] of rules.entries()) checkRulePaths(rule, roomPaths, `${field}[${i}].`)
}

/** One rule's paths inside the room's (checkBypassPaths); `where` prefixes the field. */
export function checkRulePaths(rule: BypassRule, roomPaths: readonly string[], where: string): void {
  if (rule.kind !== 'path' || roomPaths.length === 0) return
  const prefixes = roomPaths.map((p) => p.toLowerCase())
  rule.paths.forEach((path, j) => {
    if (!prefixes.some((p) => underPrefix(p, path.toLowerCase())))
      fail(`${where}paths[${j}]`, `must lie inside the room's paths (${roomPaths.join(', ')})`)
  })
}

/** A rule against the deployment's config: a header rule's secret must be one ANTEROOM_BYPASS_SECRETS names. */
export function checkRuleSecret(rule: BypassRule, names: ReadonlySet<string>, where: string): void {
  if (rule.kind !== 'header' || names.has(rule.secret)) return
  const known = names.size === 0 ? 'none is configured' : `configured: ${[...names].sort().join(', ')}`
  fail(`${where}secret`, `is not a secret of ANTEROOM_BYPASS_SECRETS (${known})`)
}

// --- compiled, once per settings object ---------------------------------------------------------

export interface CompiledBypass {
  /** Whether the room has any rule: a room without is not looked at again. */
  any: boolean
  cidr: { rule: BypassRule; matcher: CidrMatcher }[]
  /** Each header rule with its secret's MAC (BYPASS_SECRET_DOMAIN); undefined when this edge has no such secret. */
  header: { rule: BypassRule; mac: string | undefined }[]
  /** Each path rule's prefixes, in lower case. */
  path: { rule: BypassRule; prefixes: string[] }[]
  crawler: { rule: BypassRule; crawlers: ReadonlySet<string> }[]
  /** The crawlers any crawler rule names: only their User-Agents start a check. */
  crawlerSpecs: CrawlerSpec[]
  /** Any of their User-Agents, in one expression: a request of such a room is tested once. */
  crawlerHint: RegExp | undefined
}

/**
 * A room's rules, ready to match. `secretMac` gives the MAC of a named secret (undefined when this
 * edge does not have it: that rule then matches nothing).
 */
export function compileBypass(rules: readonly BypassRule[], secretMac: (name: string) => string | undefined): CompiledBypass {
  const out: CompiledBypass = {
    any: rules.length > 0,
    cidr: [],
    header: [],
    path: [],
    crawler: [],
    crawlerSpecs: [],
    crawlerHint: undefined,
  }
  const named = new Set<string>()
  for (const rule of rules) {
    switch (rule.kind) {
      case 'cidr':
        out.cidr.push({
          rule,
          matcher: new CidrMatcher(rule.networks.map((n) => (parseCidr(n) as Extract<ReturnType<typeof parseCidr>, { ok: true }>).cidr)),
        })
        break
      case 'header':
        out.header.push({ rule, mac: secretMac(rule.secret) })
        break
      case 'path':
        out.path.push({ rule, prefixes: rule.paths.map((p) => p.toLowerCase()) })
        break
      case 'crawler':
        out.crawler.push({ rule, crawlers: new Set(rule.crawlers) })
        for (const c of rule.crawlers) named.add(c)
        break
    }
  }
  out.crawlerSpecs = CRAWLERS.filter((c) => named.has(c.name))
  if (out.crawlerSpecs.length > 0) out.crawlerHint = new RegExp(out.crawlerSpecs.map((c) => c.userAgent.source).join('|'), 'i')
  return out
}

/** The path rule whose prefixes hold the canonical path key, if any. */
export function pathRule(compiled: CompiledBypass, pathKey: string): BypassRule | undefined {
  for (const { rule, prefixes } of compiled.path) for (const p of prefixes) if (underPrefix(p, pathKey)) return rule
  return undefined
}

/** The cidr rule whose blocks hold the client address, if any. */
export function cidrRule(compiled: CompiledBypass, client: string | undefined): BypassRule | undefined {
  for (const { rule, matcher } of compiled.cidr) if (matcher.matches(client)) return rule
  return undefined
}

/**
 * The header rule whose secret the request's Anteroom-Bypass value is, given as its MAC (so that every
 * comparison is of two MACs of one length, whatever was sent): each rule is compared, found or not.
 */
export function headerRule(compiled: CompiledBypass, givenMac: string): BypassRule | undefined {
  let found: BypassRule | undefined
  for (const { rule, mac } of compiled.header) if (mac !== undefined && safeEqual(givenMac, mac) && found === undefined) found = rule
  return found
}

// The config of the bypass rules and the human check (core/bypass.ts, core/human-check.ts): the header
// rules' secrets by name, where crawler checks ask DNS, and the human check's provider. Read with the
// rest of the config (src/config/index.ts), and checked against the rooms there and in the admin API:
// a rule naming a secret this deployment lacks, or a human check with no provider, is refused by name.
import { BYPASS_SECRET_NAME, checkRuleSecret, MIN_BYPASS_SECRET } from '../core/bypass.js'
import { AnteroomError, type ErrorCode } from '../core/errors.js'
import type { RoomSettings } from '../core/settings.js'

/** Cloudflare Turnstile's endpoints: the defaults of ANTEROOM_HUMAN_CHECK_URL and ANTEROOM_HUMAN_CHECK_SCRIPT_URL. */
export const TURNSTILE = {
  siteverify: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  script: 'https://challenges.cloudflare.com/turnstile/v0/api.js',
} as const
/** Cloudflare's DNS over HTTPS (JSON): where a Worker asks, unless ANTEROOM_DOH_URL says otherwise. */
export const DEFAULT_DOH_URL = 'https://cloudflare-dns.com/dns-query'

export interface HumanCheckConfig {
  /** The siteverify endpoint (Turnstile-compatible). */
  url: string
  secret: string
  siteKey: string
  /** The widget's script, allowed by the widget page's CSP (its origin, for script-src and frame-src). */
  scriptUrl: string
  /** How long siteverify may take before the room's humanCheckOnError applies. */
  timeoutMs: number
}

export interface GuardConfig {
  /** ANTEROOM_BYPASS_SECRETS: the header rules' secrets, by name. */
  bypassSecrets: Readonly<Record<string, string>>
  /** ANTEROOM_DNS_SERVER: the DNS server Node asks about crawlers (host or host:port); unset: the system's. */
  dnsServer: string | undefined
  /** ANTEROOM_DOH_URL: the DNS-over-HTTPS (JSON) endpoint a Worker asks about crawlers. */
  dohUrl: string
  /** The human check's provider; undefined when ANTEROOM_HUMAN_CHECK_SECRET and _SITE_KEY are unset. */
  humanCheck: HumanCheckConfig | undefined
}

function bad(field: string, message: string): never {
  throw new AnteroomError('ERR_CONFIG', `${field}: ${message}`, { field })
}

function httpUrl(value: string | undefined, field: string, fallback: string): string {
  if (value === undefined || value === '') return fallback
  let url: URL
  try {
    url = new URL(value)
  } catch {
    bad(field, 'must be a URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') bad(field, 'must start with https:// (or http:// on a trusted network)')
  return value
}

/** `name:secret,name:secret`: names as rules write them, secrets of at least MIN_BYPASS_SECRET characters. */
function bypassSecrets(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (value === undefined || value === '') return out
  for (const [i, pair] of value.split(',').entries()) {
    const at = pair.indexOf(':')
    const name = pair.slice(0, at).trim()
    const secret = pair.slice(at + 1).trim()
    const field = `ANTEROOM_BYPASS_SECRETS[${i}]`
    if (at < 1 || !BYPASS_SECRET_NAME.test(name)) bad(field, 'must be name:secret, the name 1-32 lower-case letters, digits or dashes')
    if (secret.length < MIN_BYPASS_SECRET) bad(field, `the secret of ${name} must be at least ${MIN_BYPASS_SECRET} characters`)
    if (Object.hasOwn(out, name)) bad(field, `${name} is named twice`)
    out[name] = secret
  }
  return out
}

/** host, host:port, [v6] or [v6]:port. */
function dnsServer(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  if (!/^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(value))
    bad('ANTEROOM_DNS_SERVER', 'must be host or host:port (an IPv6 address in brackets)')
  return value
}

function humanCheck(pick: (env: string, key: string) => string | undefined): HumanCheckConfig | undefined {
  const secret = pick('ANTEROOM_HUMAN_CHECK_SECRET', 'humanCheckSecret')
  const siteKey = pick('ANTEROOM_HUMAN_CHECK_SITE_KEY', 'humanCheckSiteKey')
  if ((secret ?? '') === '' && (siteKey ?? '') === '') return undefined
  if (secret === undefined || secret === '') bad('ANTEROOM_HUMAN_CHECK_SECRET', 'must be set with ANTEROOM_HUMAN_CHECK_SITE_KEY')
  if (siteKey === undefined || siteKey === '') bad('ANTEROOM_HUMAN_CHECK_SITE_KEY', 'must be set with ANTEROOM_HUMAN_CHECK_SECRET')
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(siteKey)) bad('ANTEROOM_HUMAN_CHECK_SITE_KEY', 'must be 1-128 letters, digits or _.-')
  const timeoutText = pick('ANTEROOM_HUMAN_CHECK_TIMEOUT_MS', 'humanCheckTimeoutMs')
  const timeoutMs = timeoutText === undefined || timeoutText === '' ? 3000 : Number(timeoutText)
  if (!Number.isInteger(timeoutMs) || timeoutMs < 50 || timeoutMs > 30_000)
    bad('ANTEROOM_HUMAN_CHECK_TIMEOUT_MS', 'must be a whole number of milliseconds from 50 to 30000')
  return {
    url: httpUrl(pick('ANTEROOM_HUMAN_CHECK_URL', 'humanCheckUrl'), 'ANTEROOM_HUMAN_CHECK_URL', TURNSTILE.siteverify),
    secret,
    siteKey,
    scriptUrl: httpUrl(pick('ANTEROOM_HUMAN_CHECK_SCRIPT_URL', 'humanCheckScriptUrl'), 'ANTEROOM_HUMAN_CHECK_SCRIPT_URL', TURNSTILE.script),
    timeoutMs,
  }
}

/** The guards' config; `pick` reads a setting from the environment or the config file (as loadConfig's). */
export function loadGuards(pick: (env: string, key: string) => string | undefined, rooms: readonly RoomSettings[]): GuardConfig {
  const guards: GuardConfig = {
    bypassSecrets: Object.freeze(bypassSecrets(pick('ANTEROOM_BYPASS_SECRETS', 'bypassSecrets'))),
    dnsServer: dnsServer(pick('ANTEROOM_DNS_SERVER', 'dnsServer')),
    dohUrl: httpUrl(pick('ANTEROOM_DOH_URL', 'dohUrl'), 'ANTEROOM_DOH_URL', DEFAULT_DOH_URL),
    humanCheck: humanCheck(pick),
  }
  for (const [i, room] of rooms.entries()) checkRoomGuards(room, guards, `rooms[${i}].`, 'ERR_CONFIG')
  return guards
}

/**
 * A room's settings against this deployment: each header rule names a configured secret, and a room
 * with a human check has a provider. Throws `code` (ERR_SETTINGS_INVALID from the admin API) naming the
 * field. With `before` (a change), only what the change brings is checked: a rule or a check that was
 * there already stays changeable around, even once its secret or provider has left the config.
 */
export function checkRoomGuards(
  room: RoomSettings,
  guards: Pick<GuardConfig, 'bypassSecrets' | 'humanCheck'>,
  where = '',
  code: ErrorCode = 'ERR_SETTINGS_INVALID',
  before?: RoomSettings,
): void {
  const kept = new Set((before?.bypass ?? []).map((r) => JSON.stringify(r)))
  const names = new Set(Object.keys(guards.bypassSecrets))
  try {
    // Each rule under its own index, so that the error names it.
    room.bypass.forEach((rule, i) => {
      if (!kept.has(JSON.stringify(rule))) checkRuleSecret(rule, names, `${where}bypass[${i}].`)
    })
  } catch (err) {
    if (err instanceof AnteroomError && code !== err.code) throw new AnteroomError(code, err.message, { field: err.field })
    throw err
  }
  if (room.humanCheck !== 'off' && guards.humanCheck === undefined && before?.humanCheck !== room.humanCheck) {
    const field = `${where}humanCheck`
    throw new AnteroomError(
      code,
      `${field}: a human check needs a provider (ANTEROOM_HUMAN_CHECK_SECRET and ANTEROOM_HUMAN_CHECK_SITE_KEY), and this edge has none`,
      { field },
    )
  }
}

/** The guards' secrets, for the log to cut out: the bypass secrets and the human check's. */
export function guardSecrets(guards: GuardConfig): string[] {
  return [...Object.values(guards.bypassSecrets), ...(guards.humanCheck === undefined ? [] : [guards.humanCheck.secret])]
}

// Room settings: ONE schema, ROOM_SETTINGS, and everything that follows from it:
//   - the RoomSettings type (derived, so it cannot drift from the schema),
//   - parseRoomSettings: the validation that config (src/config) and the admin API both use, with
//     error messages that name the bad field,
//   - AdmissionLimits and admissionLimits(room): what the admission rule (core/admission.ts and
//     poll-12.lua, which gets it as one JSON argument decoded by name) reads of a room,
//   - the admin form: the edge serves SETTINGS_SCHEMA at GET /_anteroom/api/settings-schema and
//     admin/ui/settings.js builds the form (labels, inputs, ranges, help) from it.
// A new setting is one entry below. If the admission rule reads it, flag it `admissionLimit: true`:
// it then reaches the rule under its own name with no other edit here (docs/architecture.md, "Where a
// change goes").
import { type BypassRule, checkBypassPaths, parseBypassRules } from './bypass.js'
import { AnteroomError } from './errors.js'
import { LOCALE_TAGS, LOCALES } from './locales.js'
import { canonicalPath } from './path.js'

export const ROOM_MODES = ['fifo', 'paused', 'passthrough', 'closed'] as const
export type RoomMode = (typeof ROOM_MODES)[number]
export const STORE_ERROR_POLICIES = ['closed', 'open'] as const
export type StoreErrorPolicy = (typeof STORE_ERROR_POLICIES)[number]
export const ORIGIN_COMMANDS = ['off', 'end-session'] as const
export type OriginCommands = (typeof ORIGIN_COMMANDS)[number]
/** Whether a room takes access codes and invite links (core/access.ts). */
export const ACCESS_CODE_MODES = ['off', 'on'] as const

export const ROOM_ID = /^[a-z0-9][a-z0-9-]{0,31}$/

const LOCALE_HELP =
  'The page’s language for visitors whose browser asks for none we have; a visitor’s ?lang= and their browser’s languages come first.'

/** The sections of the admin form, in order; `columns` is how many fields share a row. */
export const SETTING_GROUPS = {
  admission: { legend: 'Admission', columns: 2 },
  stock: { legend: 'What the room sells', columns: 1 },
  timing: { legend: 'Timing, in seconds', columns: 3 },
  page: { legend: 'Queue page', columns: 1 },
  where: { legend: 'Where the room applies', columns: 2 },
  schedule: { legend: 'Scheduled sale', columns: 1 },
  defence: { legend: 'Bot defence', columns: 3 },
  access: { legend: 'Access codes and lanes', columns: 3 },
} as const
export type SettingGroup = keyof typeof SETTING_GROUPS

interface SettingBase {
  /** The form's label; also how save messages, conflicts and the audit log name the setting. */
  label: string
  /** The line under the field (after the range, for a number). May be empty. */
  help: string
  /** The form section it appears in; null: not in the form (the id names the room). */
  group: SettingGroup | null
  /** The admission rule reads it as it is: it is part of AdmissionLimits, under this name. */
  admissionLimit?: true
}

/** A whole number in [min, max]. No default: the setting is required. */
export interface IntegerSetting extends SettingBase {
  type: 'integer'
  min: number
  max: number
  unit?: 'seconds'
  /** A number, or a multiple of a setting listed before this one. */
  default?: number | { times: number; of: string }
}

/** One of a fixed list of strings; `choices` gives each its label and help in the form. */
export interface ChoiceSetting extends SettingBase {
  type: 'choice'
  values: readonly string[]
  choices: Readonly<Record<string, { label: string; help: string }>>
  default: string
}

export interface TextSetting extends SettingBase {
  type: 'text'
  maxLength: number
  /** Lines of the form's box: 1 is a one-line input. */
  lines: number
  default: string
}

/** A list of host names or path prefixes; empty by default. */
export interface ListSetting extends SettingBase {
  type: 'list'
  item: 'host' | 'path'
  maxItems: number
  maxLength: number
}

/** The room id: required, ROOM_ID, never changed once the room exists. */
export interface IdSetting extends SettingBase {
  type: 'id'
}

/**
 * When a scheduled sale's pre-queue and sale open (and, optionally, when it closes): ISO 8601 times
 * with a time zone (`2026-12-01T10:00:00+01:00`), kept as written so the admin sees the zone the
 * manager chose. Absent (null): the room is not scheduled.
 */
export interface ScheduleSetting extends SettingBase {
  type: 'schedule'
  /** Longest pre-queue, ms: drawn arrivals lie within DRAW_SPAN_US before the opening (core/draw.ts). */
  maxPrequeueMs: number
}

/**
 * The id of something outside the room, such as the event the origin sells behind it, or null
 * (none: the default). `pattern` is the form an id must have (a RegExp source, anchored), `format`
 * says it in words for the error.
 */
export interface RefSetting extends SettingBase {
  type: 'ref'
  pattern: string
  format: string
  maxLength: number
}

/** A room's schedule as the settings hold it. */
export interface Schedule {
  prequeueAt: string
  opensAt: string
  closesAt?: string
}

/** A room's bypass rules (core/bypass.ts): a list of rule objects, edited in the admin's Bypass & checks view. */
export interface BypassSetting extends SettingBase {
  type: 'bypass'
  maxItems: number
}

export type SettingSpec =
  | IntegerSetting
  | ChoiceSetting
  | TextSetting
  | ListSetting
  | IdSetting
  | ScheduleSetting
  | RefSetting
  | BypassSetting

/**
 * Every room setting, in the order of the admin form (and of a room's JSON). The key is the
 * setting's name in config, the admin API and RoomSettings.
 */
export const ROOM_SETTINGS = {
  id: {
    type: 'id',
    label: 'Room id',
    help: 'Lower-case letters, digits and dashes; it names the room’s keys and cookies.',
    group: null,
  },
  newUsersPerMinute: {
    type: 'integer',
    label: 'Admit per minute',
    help: '',
    group: 'admission',
    min: 1,
    max: 6_000_000,
    admissionLimit: true,
  },
  totalActiveUsers: {
    type: 'integer',
    label: 'Max active at once',
    help: '',
    group: 'admission',
    min: 1,
    max: 10_000_000,
    admissionLimit: true,
  },
  // The rule reads mode, sessionDurationSeconds and abandonAfterSeconds too, converted (admissionLimits).
  mode: {
    type: 'choice',
    label: 'Mode',
    help: 'How the room lets people in.',
    group: 'admission',
    values: ROOM_MODES,
    choices: {
      fifo: { label: 'Line (FIFO)', help: 'First come, first served, at the limits above' },
      paused: { label: 'Paused', help: 'The line stays; nobody new gets in' },
      passthrough: { label: 'Pass-through', help: 'No line: everyone gets in at once' },
      closed: { label: 'Closed', help: 'Nobody gets in; the page says closed' },
    },
    default: 'fifo',
  },
  onStoreError: {
    type: 'choice',
    label: 'If the store fails',
    help: 'What visitors get while the store (Redis) does not answer.',
    group: 'admission',
    values: STORE_ERROR_POLICIES,
    choices: {
      closed: { label: 'Hold everyone', help: 'Visitors wait until the store is back' },
      open: { label: 'Let everyone in', help: 'Visitors go straight through' },
    },
    default: 'closed',
  },
  // The edge reads it when the origin answers (src/http/origin-command.ts); the rule does not.
  originCommands: {
    type: 'choice',
    label: 'Origin commands',
    help: 'Whether the origin’s Anteroom-Command response header may end a visitor’s session (the header never reaches visitors).',
    group: 'admission',
    values: ORIGIN_COMMANDS,
    choices: {
      off: { label: 'Ignore them', help: 'Sessions last until they expire or an admin ends them' },
      'end-session': {
        label: 'Allow end-session',
        help: 'The origin ends a session when it is done (e.g. after a purchase); the slot frees at once',
      },
    },
    default: 'off',
  },
  // Checked at the edge before the store is asked (core/pow.ts); the admission rule never sees it.
  powDifficulty: {
    type: 'integer',
    label: 'Proof of work',
    help: 'Work asked of each new visitor’s browser: 0 off, 18 about a second, +1 doubles it',
    group: 'admission',
    min: 0,
    max: 24,
    default: 0,
  },
  // The edge reads the event's stock (ClaimGate counts) with its once-a-second reload
  // (src/rooms/stock.ts); when nothing is free it passes the rule a paused room (core/stock.ts).
  event: {
    type: 'ref',
    label: 'Event',
    help: 'The event the origin sells behind this room, by its id (e.g. demo). While nothing of it is free, nobody new is let in and the page says sold out (or that everything is held). Empty: not linked.',
    group: 'stock',
    pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
    format: '1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
    maxLength: 64,
  },
  sessionDurationSeconds: {
    type: 'integer',
    label: 'Session',
    help: '',
    group: 'timing',
    min: 10,
    max: 7 * 24 * 3600,
    unit: 'seconds',
    default: 600,
  },
  refreshSeconds: {
    type: 'integer',
    label: 'Refresh',
    help: '',
    group: 'timing',
    min: 2,
    max: 600,
    unit: 'seconds',
    default: 20,
    // After a store loss the rule waits two refreshes before admitting, so that everybody polling is back.
    admissionLimit: true,
  },
  abandonAfterSeconds: {
    type: 'integer',
    label: 'Drop after',
    help: '≥ 2 × refresh',
    group: 'timing',
    min: 5,
    max: 24 * 3600,
    unit: 'seconds',
    default: { times: 3, of: 'refreshSeconds' },
  },
  schedule: {
    type: 'schedule',
    label: 'Schedule',
    help: 'Optional. Before the pre-queue opens nobody gets a place; everyone who comes during it is put in a random order (a draw anyone can check) when the sale opens; later arrivals queue behind them. ISO times with a time zone.',
    group: 'schedule',
    maxPrequeueMs: 7 * 24 * 3600_000,
  },
  title: {
    type: 'text',
    label: 'Title',
    help: '',
    group: 'page',
    maxLength: 2000,
    lines: 1,
    default: 'You are in line',
  },
  message: {
    type: 'text',
    label: 'Message',
    help: '',
    group: 'page',
    maxLength: 2000,
    lines: 2,
    default: 'Thanks for waiting. We let people in in the order they arrived.',
  },
  // The page's language when the visitor asks for none we have (src/http/i18n.ts, core/locales.ts).
  locale: {
    type: 'choice',
    label: 'Language',
    help: LOCALE_HELP,
    group: 'page',
    values: LOCALE_TAGS,
    choices: Object.fromEntries(LOCALE_TAGS.map((tag) => [tag, { label: `${LOCALES[tag].name} (${tag})`, help: LOCALE_HELP }])),
    default: 'en',
  },
  // The room's own page body (src/http/page-templates.ts): a template by name, from the Page tab.
  template: {
    type: 'ref',
    label: 'Page template',
    help: 'A page template by its name (the Page tab); empty: the built-in page.',
    group: 'page',
    pattern: '^[a-z0-9][a-z0-9-]{0,63}$',
    format: '1-64 lower-case letters, digits or dashes',
    maxLength: 64,
  },
  hosts: {
    type: 'list',
    label: 'Hosts',
    help: 'One per line or comma-separated; empty: any host',
    group: 'where',
    item: 'host',
    maxItems: 64,
    maxLength: 255,
  },
  paths: {
    type: 'list',
    label: 'Path prefixes',
    help: 'Each starts with /; empty: every path',
    group: 'where',
    item: 'path',
    maxItems: 64,
    maxLength: 255,
  },
  // Who skips the line (core/bypass.ts, src/http/bypass.ts): the edge reads them before the line. Not in
  // the settings form: the admin's Bypass & checks view edits them (admin/bypass.ts).
  bypass: {
    type: 'bypass',
    label: 'Bypass rules',
    help: 'Requests that skip the line: by client network (cidr), a secret header (header, naming a secret of ANTEROOM_BYPASS_SECRETS), a path inside the room (path), or a search crawler verified by reverse and forward DNS (crawler). Each is forwarded with a short admission marked bypass.',
    group: null,
    maxItems: 32,
  },
  // A human check before a place (core/human-check.ts, src/http/human-check.ts): the edge reads these.
  humanCheck: {
    type: 'choice',
    label: 'Human check',
    help: 'A Turnstile-compatible check before a place (ANTEROOM_HUMAN_CHECK_*); who fails it waits in a shadow lane and never gets in',
    group: 'defence',
    values: ['off', 'turnstile'],
    choices: {
      off: { label: 'Off', help: 'No check' },
      turnstile: { label: 'Turnstile', help: 'Each newcomer passes the widget first' },
    },
    default: 'off',
  },
  humanCheckOnError: {
    type: 'choice',
    label: 'If the check cannot be made',
    help: 'While siteverify does not answer',
    group: 'defence',
    values: ['closed', 'open'],
    choices: {
      closed: { label: 'Hold newcomers', help: 'No place until it answers; they are asked to try again' },
      open: { label: 'Let them join', help: 'They join the line unchecked' },
    },
    default: 'closed',
  },
  // The cap on new places per client network (src/http/join-cap.ts): the edge reads these, not the rule.
  joinsPerNetworkPerMinute: {
    type: 'integer',
    label: 'New places per network / min',
    help: '0: no cap. Beyond it, joins get 429 until the minute is over',
    group: 'defence',
    min: 0,
    max: 1_000_000,
    default: 0,
  },
  networkPrefixIPv4: {
    type: 'integer',
    label: 'IPv4 network (prefix bits)',
    help: '24: a.b.c.0/24 counts as one network',
    group: 'defence',
    min: 8,
    max: 32,
    default: 24,
  },
  networkPrefixIPv6: {
    type: 'integer',
    label: 'IPv6 network (prefix bits)',
    help: '56: one subscriber’s usual allocation',
    group: 'defence',
    min: 16,
    max: 128,
    default: 56,
  },
  // Access codes and invite links (core/access.ts, src/http/access.ts): the edge reads these. A separate
  // lane is a line of its own in the store, with these two as its limits; the rule sees them there.
  accessCodes: {
    type: 'choice',
    label: 'Access codes',
    help: 'Whether visitors may use an access code or an invite link (?code=) to join a lane; the queue page then offers a box for one.',
    group: 'access',
    values: ACCESS_CODE_MODES,
    choices: {
      off: { label: 'Off', help: 'The edge leaves ?code= to the origin' },
      on: { label: 'On', help: 'Codes and invite links made in the Access view work' },
    },
    default: 'off',
  },
  laneActiveUsers: {
    type: 'integer',
    label: 'Separate lane: max active',
    help: '0: no separate lane. Its code holders are admitted at these limits, apart from the public line',
    group: 'access',
    min: 0,
    max: 10_000_000,
    default: 0,
  },
  laneUsersPerMinute: {
    type: 'integer',
    label: 'Separate lane: rate per minute',
    help: '',
    group: 'access',
    min: 1,
    max: 6_000_000,
    default: 60,
  },
} as const satisfies Record<string, SettingSpec>

type Schema = typeof ROOM_SETTINGS
export type SettingName = keyof Schema

type ValueOf<S> = S extends { type: 'integer' }
  ? number
  : S extends { type: 'choice'; values: readonly (infer V)[] }
    ? V
    : S extends { type: 'list' }
      ? string[]
      : S extends { type: 'schedule' }
        ? Schedule | null
        : S extends { type: 'ref' }
          ? string | null
          : S extends { type: 'bypass' }
            ? BypassRule[]
            : string

/** One room's settings, as parseRoomSettings returns them: one property per entry of ROOM_SETTINGS. */
export type RoomSettings = { -readonly [K in SettingName]: ValueOf<Schema[K]> }

/** What the admin UI gets from GET /_anteroom/api/settings-schema (plain JSON). */
export const SETTINGS_SCHEMA = {
  groups: Object.entries(SETTING_GROUPS).map(([name, g]) => ({ name, ...g })),
  settings: Object.entries(ROOM_SETTINGS).map(([name, s]) => ({ name, ...s }) as { name: SettingName } & SettingSpec),
}

// --- what the admission rule reads ------------------------------------------------------------

/** Settings flagged `admissionLimit: true`: the rule reads them as they are, under their own names. */
export type AdmissionSettingName = { [K in SettingName]: Schema[K] extends { admissionLimit: true } ? K : never }[SettingName]

export const ADMISSION_SETTINGS = (Object.keys(ROOM_SETTINGS) as SettingName[]).filter(
  (name) => (ROOM_SETTINGS[name] as SettingSpec).admissionLimit === true,
) as AdmissionSettingName[]

type Simplify<T> = { [K in keyof T]: T[K] } & {}

/**
 * What the admission rule needs of a room: the flagged settings as they are, plus mode (closed is
 * paused to the rule) and the two durations in milliseconds.
 */
export type AdmissionLimits = Simplify<
  {
    mode: 'fifo' | 'paused' | 'passthrough'
    abandonAfterMs: number
    sessionMs: number
    /**
     * A scheduled room: from `prequeueAtMs` a joiner takes the drawn place the edge brings, and
     * nobody is admitted before `opensAtMs`. Absent (or 0): not scheduled.
     */
    prequeueAtMs?: number
    opensAtMs?: number
  } & Pick<RoomSettings, AdmissionSettingName>
>

export function admissionLimits(room: RoomSettings): AdmissionLimits {
  const asIs: Record<string, unknown> = {}
  for (const name of ADMISSION_SETTINGS) asIs[name] = room[name]
  return {
    mode: room.mode === 'closed' ? 'paused' : room.mode,
    ...(asIs as Pick<RoomSettings, AdmissionSettingName>),
    abandonAfterMs: room.abandonAfterSeconds * 1000,
    sessionMs: room.sessionDurationSeconds * 1000,
    ...(room.schedule === null ? {} : { prequeueAtMs: Date.parse(room.schedule.prequeueAt), opensAtMs: Date.parse(room.schedule.opensAt) }),
  }
}

/**
 * Once a scheduled room's pre-queue has begun, its draw depends on prequeueAt and opensAt (the seed,
 * and every drawn place: core/draw.ts): they can no longer change, nor can the schedule be removed
 * until the sale has opened. closesAt can. Throws ERR_SETTINGS_INVALID naming the field.
 */
export function checkScheduleChange(before: RoomSettings, after: RoomSettings, now: number): void {
  const b = before.schedule
  if (b === null || schedulePhase(before, now) !== 'prequeue') return
  const a = after.schedule
  for (const key of ['prequeueAt', 'opensAt'] as const) {
    if (a === null || Date.parse(a[key]) !== Date.parse(b[key])) {
      fail(`schedule.${key}`, 'cannot change once the pre-queue has begun: the draw depends on it')
    }
  }
}

/** Where a scheduled room is at `now` (ms); an unscheduled room is always 'open'. */
export type SchedulePhase = 'scheduled' | 'prequeue' | 'open' | 'over'

export function schedulePhase(room: Pick<RoomSettings, 'schedule'>, now: number): SchedulePhase {
  const s = room.schedule
  if (s === null) return 'open'
  if (now < Date.parse(s.prequeueAt)) return 'scheduled'
  if (now < Date.parse(s.opensAt)) return 'prequeue'
  if (s.closesAt !== undefined && now >= Date.parse(s.closesAt)) return 'over'
  return 'open'
}

type DefaultedAdmissionName = {
  [K in AdmissionSettingName]: Schema[K] extends { default: number | string } ? K : never
}[AdmissionSettingName]

/**
 * The defaults of the flagged settings that have a constant one. Code that writes AdmissionLimits
 * by hand (tests, benches) spreads this first, so that a new rule setting with a default needs no
 * edit there.
 */
export const ADMISSION_DEFAULTS = Object.fromEntries(
  ADMISSION_SETTINGS.flatMap((name) => {
    const d = (ROOM_SETTINGS[name] as { default?: unknown }).default
    return typeof d === 'number' || typeof d === 'string' ? [[name, d]] : []
  }),
) as Pick<RoomSettings, DefaultedAdmissionName>

// --- validation -------------------------------------------------------------------------------

function fail(field: string, message: string): never {
  throw new AnteroomError('ERR_SETTINGS_INVALID', `${field}: ${message}`, { field })
}

function integer(spec: IntegerSetting, given: unknown, earlier: Record<string, unknown>, field: string): number {
  const d = spec.default
  const value = given ?? (typeof d === 'object' ? d.times * (earlier[d.of] as number) : d)
  if (typeof value !== 'number' || !Number.isInteger(value)) fail(field, 'must be a whole number')
  if (value < spec.min || value > spec.max) fail(field, `must be between ${spec.min} and ${spec.max}, got ${value}`)
  return value
}

/** A room's host, in any case (stored in lower case, without a final dot). */
export const HOST_NAME = /^[A-Za-z0-9.:-]+$/

/** Checks one entry of a list and returns it as stored. */
const LIST_ITEMS: Record<ListSetting['item'], (item: string, field: string) => string> = {
  host(item, field) {
    if (!HOST_NAME.test(item)) fail(field, 'must be a host name')
    return item.toLowerCase().replace(/\.$/, '')
  },
  path(item, field) {
    if (!item.startsWith('/')) fail(field, 'must start with /')
    // Rooms are matched on canonical paths (core/path.ts), so a room's own path must be one.
    const canonical = canonicalPath(item)
    if (!canonical.ok) fail(field, `must be a plain path like /tickets: ${canonical.problem}`)
    if (canonical.path !== item) fail(field, `must be written in canonical form: ${canonical.path}`)
    return item
  },
}

function list(spec: ListSetting, given: unknown, field: string): string[] {
  const value = given ?? []
  if (!Array.isArray(value) || value.length > spec.maxItems) fail(field, `must be a list of at most ${spec.maxItems} strings`)
  return value.map((item, i) => {
    if (typeof item !== 'string' || item.length === 0 || item.length > spec.maxLength) {
      fail(`${field}[${i}]`, `must be a non-empty string of at most ${spec.maxLength} characters`)
    }
    return LIST_ITEMS[spec.item](item, `${field}[${i}]`)
  })
}

function parseSetting(spec: SettingSpec, given: unknown, earlier: Record<string, unknown>, field: string): unknown {
  switch (spec.type) {
    case 'id':
      if (typeof given !== 'string' || !ROOM_ID.test(given)) fail(field, 'must be 1-32 lower-case letters, digits or dashes')
      return given
    case 'integer':
      return integer(spec, given, earlier, field)
    case 'choice': {
      const value = given ?? spec.default
      if (typeof value !== 'string' || !spec.values.includes(value)) fail(field, `must be one of ${spec.values.join(', ')}`)
      return value
    }
    case 'text': {
      const value = given ?? spec.default
      if (typeof value !== 'string' || value.length > spec.maxLength)
        fail(field, `must be a string of at most ${spec.maxLength} characters`)
      return value
    }
    case 'list':
      return list(spec, given, field)
    case 'schedule':
      return schedule(spec, given, field)
    case 'bypass':
      return parseBypassRules(given, field)
    case 'ref':
      if (given === undefined || given === null) return null
      if (typeof given !== 'string' || given.length > spec.maxLength || !new RegExp(spec.pattern).test(given))
        fail(field, `must be null (none) or an id of ${spec.format}`)
      return given
  }
}

/** An ISO 8601 date and time with seconds optional, fractions allowed, and a zone (Z or ±hh:mm). */
export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/

function schedule(spec: ScheduleSetting, given: unknown, field: string): Schedule | null {
  if (given === undefined || given === null) return null
  if (typeof given !== 'object' || Array.isArray(given)) fail(field, 'must be an object { prequeueAt, opensAt, closesAt? } or null')
  const raw = given as Record<string, unknown>
  for (const key of Object.keys(raw)) {
    if (key !== 'prequeueAt' && key !== 'opensAt' && key !== 'closesAt') fail(`${field}.${key}`, 'is not part of a schedule')
  }
  const time = (key: 'prequeueAt' | 'opensAt' | 'closesAt'): number => {
    const v = raw[key]
    if (typeof v !== 'string' || !ISO_TIME.test(v) || Number.isNaN(Date.parse(v))) {
      fail(`${field}.${key}`, 'must be an ISO 8601 time with a time zone, like 2026-12-01T10:00:00+01:00')
    }
    return Date.parse(v)
  }
  const prequeueAt = time('prequeueAt')
  const opensAt = time('opensAt')
  if (opensAt <= prequeueAt) fail(`${field}.opensAt`, 'must be after prequeueAt')
  if (opensAt - prequeueAt > spec.maxPrequeueMs)
    fail(`${field}.prequeueAt`, `must be at most ${spec.maxPrequeueMs / 86_400_000} days before opensAt`)
  const out: Schedule = { prequeueAt: raw.prequeueAt as string, opensAt: raw.opensAt as string }
  if (raw.closesAt !== undefined && raw.closesAt !== null) {
    if (time('closesAt') <= opensAt) fail(`${field}.closesAt`, 'must be after opensAt')
    out.closesAt = raw.closesAt as string
  }
  return Object.freeze(out)
}

/**
 * Checks one room's settings against ROOM_SETTINGS, fills in defaults and returns a frozen copy.
 * `where` prefixes field names in errors, e.g. "rooms[0].".
 */
export function parseRoomSettings(input: unknown, where = ''): RoomSettings {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) fail(where.replace(/\.$/, '') || 'room', 'must be an object')
  const raw = input as Record<string, unknown>
  for (const key of Object.keys(raw)) if (!Object.hasOwn(ROOM_SETTINGS, key)) fail(`${where}${key}`, 'is not a known setting')
  const settings: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(ROOM_SETTINGS) as [SettingName, SettingSpec][]) {
    settings[name] = parseSetting(spec, raw[name], settings, `${where}${name}`)
  }
  const room = settings as RoomSettings
  // Rules across settings.
  if (room.abandonAfterSeconds < room.refreshSeconds * 2) {
    fail(
      `${where}abandonAfterSeconds`,
      `must be at least twice refreshSeconds (${room.refreshSeconds * 2}), or polling visitors would be dropped`,
    )
  }
  // A path rule cannot reach past the room's own paths (core/bypass.ts).
  checkBypassPaths(room.bypass, room.paths, `${where}bypass`)
  return Object.freeze(room)
}

// Room settings as JSON Schema (2020-12), converted from ROOM_SETTINGS (core/settings.ts), so that the
// API description never restates a setting: types, ranges, choices, defaults, null refs and the
// schedule object all come from the schema entries. test/openapi-schemas.test.ts checks that these schemas
// accept and refuse what parseRoomSettings does, value by value, for every setting.
import { type JsonSchema, patternOf } from './body-schema.js'
import { BYPASS_LIMITS, BYPASS_RULE_ID, BYPASS_SECRET_NAME } from './bypass.js'
import { MIN_PREFIX } from './cidr.js'
import { CRAWLER_NAMES } from './crawlers.js'
import { HOST_NAME, ISO_TIME, ROOM_ID, ROOM_SETTINGS, type SettingName, type SettingSpec } from './settings.js'

/**
 * Which room settings:
 *   stored:  a room as the admin API answers it, every setting there (parsed, defaults filled in);
 *   room:    a room as config and parseRoomSettings take it (the id and the settings without a default
 *            required; null for a setting with a default means that default);
 *   replace: the body of PUT /rooms/:id, a room whose id the path gives (in the body it may only repeat it);
 *   patch:   the body of PATCH /rooms/:id, any settings, merged over the current ones.
 */
export type SettingsForm = 'stored' | 'room' | 'replace' | 'patch'

/** Whether a setting has a default: without one, a room must give it (docs/architecture.md). */
function hasDefault(spec: SettingSpec): boolean {
  if (spec.type === 'id') return false
  if (spec.type === 'integer') return spec.default !== undefined
  return true
}

/** The default as JSON, when it is a constant (abandonAfterSeconds' is a multiple of another setting). */
function defaultOf(spec: SettingSpec): { default: unknown } | Record<string, never> {
  switch (spec.type) {
    case 'integer':
      return typeof spec.default === 'number' ? { default: spec.default } : {}
    case 'choice':
    case 'text':
      return { default: spec.default }
    case 'list':
    case 'bypass':
      return { default: [] }
    case 'ref':
    case 'schedule':
      return { default: null }
    case 'id':
      return {}
  }
}

/** The words of a setting: its help, how a list item is checked, a default that depends on another setting. */
function descriptionOf(spec: SettingSpec, input: boolean): string {
  const parts = [spec.help]
  if (spec.type === 'integer' && typeof spec.default === 'object') parts.push(`Default: ${spec.default.times} × ${spec.default.of}.`)
  if (spec.type === 'choice') parts.push(spec.values.map((v) => `${v}: ${spec.choices[v]?.label ?? v}.`).join(' '))
  if (spec.type === 'list' && spec.item === 'path') parts.push('Each path in canonical form (as the edge matches paths: README, Security).')
  if (spec.type === 'list' && spec.item === 'host') parts.push('Stored in lower case, without a final dot.')
  if (spec.type === 'schedule')
    parts.push(
      `opensAt after prequeueAt, by at most ${spec.maxPrequeueMs / 86_400_000} days; closesAt after opensAt. prequeueAt and opensAt cannot change once the pre-queue has begun.`,
    )
  if (input && hasDefault(spec) && spec.type !== 'ref' && spec.type !== 'schedule') parts.push('null: the default.')
  // Each part a sentence: a help text may end without a stop (the form shows it alone).
  return parts
    .filter((p) => p !== '')
    .map((p) => (/[.!?)]$/.test(p) ? p : `${p}.`))
    .join(' ')
}

function scheduleObject(spec: Extract<SettingSpec, { type: 'schedule' }>, input: boolean): JsonSchema {
  const time = {
    type: 'string',
    pattern: patternOf(ISO_TIME),
    description: 'An ISO 8601 time with a time zone, like 2026-12-01T10:00:00+01:00.',
  }
  return {
    type: 'object',
    properties: {
      prequeueAt: time,
      opensAt: time,
      // Given as null, it is left out of the stored schedule.
      closesAt: input ? { ...time, type: ['string', 'null'] } : time,
    },
    required: ['prequeueAt', 'opensAt'],
    additionalProperties: false,
    description: `At most ${spec.maxPrequeueMs / 86_400_000} days of pre-queue.`,
  }
}

/**
 * A bypass rule (core/bypass.ts) as JSON Schema: its shape, ids, and the crawlers known. What only the
 * code can check is said in words: a block's bits past its prefix, a path's canonical form and place
 * inside the room's paths, a secret's name among those configured.
 */
export function bypassRuleSchema(): JsonSchema {
  const id = { type: 'string', pattern: patternOf(BYPASS_RULE_ID) }
  const rule = (kind: string, member: string, schema: JsonSchema, description: string): JsonSchema => ({
    type: 'object',
    properties: { id, kind: { const: kind }, [member]: schema },
    required: ['id', 'kind', member],
    additionalProperties: false,
    description,
  })
  const list = (max: number, item: JsonSchema): JsonSchema => ({ type: 'array', minItems: 1, maxItems: max, items: item })
  return {
    oneOf: [
      rule(
        'cidr',
        'networks',
        list(BYPASS_LIMITS.networks, { type: 'string', minLength: 1, maxLength: 255, pattern: '^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$' }),
        `Client networks (the runtime's address, never a header): IPv4 blocks of at least /${MIN_PREFIX.v4}, IPv6 of at least /${MIN_PREFIX.v6}, no bits set past the prefix.`,
      ),
      rule(
        'header',
        'secret',
        { type: 'string', pattern: patternOf(BYPASS_SECRET_NAME) },
        'A secret of ANTEROOM_BYPASS_SECRETS, by name, sent as Anteroom-Bypass.',
      ),
      rule(
        'path',
        'paths',
        list(BYPASS_LIMITS.paths, { type: 'string', minLength: 2, maxLength: 255, pattern: '^/' }),
        'Path prefixes in canonical form, inside the room’s paths, matched by whole segments and case-insensitively.',
      ),
      rule(
        'crawler',
        'crawlers',
        list(CRAWLER_NAMES.length, { enum: [...CRAWLER_NAMES] }),
        'Search crawlers, verified by reverse and forward DNS.',
      ),
    ],
  }
}

/** The JSON Schema of one setting, in a form (above). */
export function settingJsonSchema(spec: SettingSpec, form: SettingsForm): JsonSchema {
  const input = form !== 'stored'
  // Config and the API read null as "the default" wherever there is one (parseRoomSettings: given ?? default).
  const orNull = (type: string) => (input && hasDefault(spec) ? [type, 'null'] : type)
  const description = descriptionOf(spec, input)
  const base = { title: spec.label, ...(description === '' ? {} : { description }), ...(input ? defaultOf(spec) : {}) }
  switch (spec.type) {
    case 'id':
      return { ...base, type: 'string', pattern: patternOf(ROOM_ID) }
    case 'integer':
      return { ...base, type: orNull('integer'), minimum: spec.min, maximum: spec.max }
    case 'choice':
      return { ...base, type: orNull('string'), enum: [...spec.values, ...(input ? [null] : [])] }
    case 'text':
      return { ...base, type: orNull('string'), maxLength: spec.maxLength }
    case 'list': {
      const item = { type: 'string', minLength: 1, maxLength: spec.maxLength, pattern: spec.item === 'host' ? patternOf(HOST_NAME) : '^/' }
      return { ...base, type: orNull('array'), maxItems: spec.maxItems, items: item }
    }
    case 'ref':
      return { ...base, type: ['string', 'null'], maxLength: spec.maxLength, pattern: spec.pattern }
    case 'schedule':
      return { ...base, anyOf: [{ type: 'null' }, scheduleObject(spec, input)] }
    case 'bypass':
      return { ...base, type: orNull('array'), maxItems: spec.maxItems, items: bypassRuleSchema() }
  }
}

/** Room settings in a form (above), every setting from ROOM_SETTINGS. */
export function settingsJsonSchema(form: SettingsForm): JsonSchema {
  const entries = Object.entries(ROOM_SETTINGS) as [SettingName, SettingSpec][]
  const required =
    form === 'stored'
      ? entries.map(([name]) => name)
      : form === 'patch'
        ? []
        : entries.filter(([name, spec]) => !hasDefault(spec) && !(form === 'replace' && name === 'id')).map(([name]) => name)
  return {
    type: 'object',
    properties: Object.fromEntries(entries.map(([name, spec]) => [name, settingJsonSchema(spec, form)])),
    ...(required.length === 0 ? {} : { required }),
    additionalProperties: false,
    description: {
      stored: "A room's settings, every one of them (src/core/settings.ts, ROOM_SETTINGS).",
      room: 'A room as config (ANTEROOM_ROOMS) and the admin API take it. A rule across settings is checked too: abandonAfterSeconds at least twice refreshSeconds.',
      replace:
        'Every setting of the room, defaults for those left out; `id`, if given, must be the room’s. A rule across settings is checked too: abandonAfterSeconds at least twice refreshSeconds.',
      patch:
        'The settings to change, merged over the current ones; `id`, if given, must be the room’s. The merged settings are checked as a whole (abandonAfterSeconds at least twice refreshSeconds).',
    }[form],
  }
}

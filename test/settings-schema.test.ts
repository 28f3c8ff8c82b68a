// One schema (ROOM_SETTINGS in src/core/settings.ts) drives the room settings everywhere: config and
// the admin API validate every setting from it and name the bad one, the edge serves it to the admin
// form, and the admission limits carry every setting flagged for the rule. Each check walks the
// schema, so a new setting is covered here without a new test. (test/admin-settings-form.browser.test.ts
// checks that the form is built from the served schema.)
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { isAnteroomError } from '../src/core/errors.js'
import {
  ADMISSION_DEFAULTS,
  ADMISSION_SETTINGS,
  admissionLimits,
  type IntegerSetting,
  parseRoomSettings,
  ROOM_SETTINGS,
  SETTING_GROUPS,
  SETTINGS_SCHEMA,
  type SettingSpec,
} from '../src/core/settings.js'
import type { Edge } from '../src/entry/build.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'

const specs = Object.entries(ROOM_SETTINGS) as [string, SettingSpec][]
const integers = specs.filter((e): e is [string, IntegerSetting] => e[1].type === 'integer')
/** A valid room with every required setting at its minimum (abandonAfterSeconds ≥ 2 × refreshSeconds holds at any value). */
const minimal = () => {
  const room: Record<string, unknown> = { id: 'room' }
  for (const [name, spec] of integers) if (spec.default === undefined) room[name] = spec.min
  return room
}
const wide = () => ({
  ...minimal(),
  refreshSeconds: ROOM_SETTINGS.refreshSeconds.min,
  abandonAfterSeconds: ROOM_SETTINGS.abandonAfterSeconds.max,
})

/** For each setting, values it must refuse and the message (after "name: ") that says why. */
function badValues(name: string, spec: SettingSpec): [unknown, string][] {
  switch (spec.type) {
    case 'integer': {
      const range = (v: number) => `must be between ${spec.min} and ${spec.max}, got ${v}`
      return [
        [spec.min - 1, range(spec.min - 1)],
        [spec.max + 1, range(spec.max + 1)],
        [spec.min + 0.5, 'must be a whole number'],
        [String(spec.min), 'must be a whole number'],
      ]
    }
    case 'choice':
      return [
        ['no-such-choice', `must be one of ${spec.values.join(', ')}`],
        [1, `must be one of ${spec.values.join(', ')}`],
      ]
    case 'text':
      return [
        ['x'.repeat(spec.maxLength + 1), `must be a string of at most ${spec.maxLength} characters`],
        [5, `must be a string of at most ${spec.maxLength} characters`],
      ]
    case 'list':
      return [
        ['not a list', `must be a list of at most ${spec.maxItems} strings`],
        [Array(spec.maxItems + 1).fill(spec.item === 'path' ? '/a' : 'a.example'), `must be a list of at most ${spec.maxItems} strings`],
      ]
    case 'schedule':
      return [
        ['tomorrow', 'must be an object { prequeueAt, opensAt, closesAt? } or null'],
        [['2026-12-01T10:00:00Z'], 'must be an object { prequeueAt, opensAt, closesAt? } or null'],
      ]
    case 'ref': {
      const why = `must be null (none) or an id of ${spec.format}`
      return [
        ['has space', why],
        ['', why],
        ['x'.repeat(spec.maxLength + 1), why],
        ['{tag}', why],
        [7, why],
      ]
    }
    case 'bypass': {
      // A bad rule names its own member (bypass[0].networks[0]: test/bypass-rules.test.ts); here, the list.
      const rule = { id: 'office', kind: 'cidr', networks: ['192.0.2.0/24'] }
      return [
        ['not a list', `must be a list of at most ${spec.maxItems} rules`],
        [Array(spec.maxItems + 1).fill(rule), `must be a list of at most ${spec.maxItems} rules`],
      ]
    }
    case 'id':
      return [
        ['Not An Id', 'must be 1-32 lower-case letters, digits or dashes'],
        [name.length, 'must be 1-32 lower-case letters, digits or dashes'],
      ]
  }
}

/** The message and field of what `run` throws. */
function thrown(run: () => unknown): { message: string; field: string | undefined } {
  try {
    run()
  } catch (err) {
    if (isAnteroomError(err)) return { message: err.message, field: err.field }
    throw err
  }
  throw new Error('nothing was thrown')
}

describe('the settings schema', () => {
  it('is well formed: every setting has a label and a known group; defaults and choices are complete', () => {
    for (const [name, spec] of specs) {
      expect(spec.label, name).not.toBe('')
      expect(spec.group === null || Object.hasOwn(SETTING_GROUPS, spec.group), name).toBe(true)
      if (spec.type === 'choice') {
        expect(Object.keys(spec.choices).sort(), name).toEqual([...spec.values].sort())
        expect(spec.values, name).toContain(spec.default)
      }
      if (spec.type === 'integer' && typeof spec.default === 'object') {
        // A default made from another setting is made from one parsed before it.
        const from = spec.default.of
        expect(Object.keys(ROOM_SETTINGS).indexOf(from), name).toBeLessThan(Object.keys(ROOM_SETTINGS).indexOf(name))
        expect(ROOM_SETTINGS[from as keyof typeof ROOM_SETTINGS].type, name).toBe('integer')
      }
    }
  })

  it('fills every default, which is within its own range', () => {
    const room = parseRoomSettings(minimal()) as unknown as Record<string, unknown>
    expect(Object.keys(room).sort()).toEqual(Object.keys(ROOM_SETTINGS).sort())
    for (const [name, spec] of specs) {
      if (spec.type === 'list' || spec.type === 'bypass') expect(room[name], name).toEqual([])
      else if (spec.type === 'schedule' || spec.type === 'ref') expect(room[name], name).toBeNull()
      else if (spec.type === 'integer' && typeof spec.default === 'object') {
        expect(room[name], name).toBe(spec.default.times * (room[spec.default.of] as number))
      } else if (spec.type !== 'id' && spec.default !== undefined) expect(room[name], name).toBe(spec.default)
    }
  })

  it('refuses a room without a required setting, naming it', () => {
    for (const [name, spec] of specs) {
      if (spec.type === 'id' || (spec.type === 'integer' && spec.default === undefined)) {
        const { [name]: _, ...without } = minimal()
        expect(thrown(() => parseRoomSettings(without)).field, name).toBe(name)
      }
    }
  })

  it('takes every integer setting at its minimum and its maximum', () => {
    for (const [name, spec] of integers) {
      for (const v of [spec.min, spec.max])
        expect(parseRoomSettings({ ...wide(), [name]: v })[name as keyof typeof ROOM_SETTINGS], name).toBe(v)
    }
  })

  it('config refuses every bad value of every setting, naming rooms[0].<setting> and saying why', () => {
    let checked = 0
    for (const [name, spec] of specs) {
      for (const [value, why] of badValues(name, spec)) {
        const rooms = JSON.stringify([{ ...wide(), [name]: value }])
        const err = thrown(() => loadConfig({ ANTEROOM_ROOMS: rooms }))
        expect(err, `${name} = ${JSON.stringify(value).slice(0, 40)}`).toEqual({
          message: `rooms[0].${name}: ${why}`,
          field: `rooms[0].${name}`,
        })
        checked++
      }
    }
    expect(checked).toBeGreaterThanOrEqual(2 * specs.length)
  })

  it('the admission limits hold every setting flagged for the rule, under its own name, plus the converted ones', () => {
    const room = parseRoomSettings({ ...wide(), mode: 'closed' })
    const limits = admissionLimits(room) as Record<string, unknown>
    const flagged = specs.filter(([, s]) => s.admissionLimit === true).map(([name]) => name)
    expect(ADMISSION_SETTINGS).toEqual(flagged)
    expect(Object.keys(limits).sort()).toEqual([...flagged, 'mode', 'abandonAfterMs', 'sessionMs'].sort())
    for (const name of flagged) expect(limits[name], name).toBe(room[name as keyof typeof room])
    expect(limits).toMatchObject({
      mode: 'paused',
      abandonAfterMs: room.abandonAfterSeconds * 1000,
      sessionMs: room.sessionDurationSeconds * 1000,
    })
    // The limits go to Lua as one JSON argument: they must survive it unchanged.
    expect(JSON.parse(JSON.stringify(limits))).toEqual(limits)
    // Hand-written limits (tests, benches) start from these: the flagged settings' constant defaults.
    for (const [name, value] of Object.entries(ADMISSION_DEFAULTS)) {
      expect(flagged, name).toContain(name)
      expect(value, name).toBe((ROOM_SETTINGS[name as keyof typeof ROOM_SETTINGS] as { default?: unknown }).default)
    }
  })

  it('the admin page has no setting written into it: app.js builds the form from the served schema', () => {
    const html = readFileSync('admin/ui/index.html', 'utf8')
    for (const name of Object.keys(ROOM_SETTINGS)) {
      expect(html, name).not.toContain(`f-${name}`)
      expect(html, name).not.toContain(`name="${name}"`)
    }
    expect(html).toContain('id="settings-fields"')
  })
})

describe('the admin API and the settings schema', () => {
  const ALICE = 'alice-token-0123456789abcdefgh'
  let origin: OriginServer
  let edge: Edge
  const id = `schema-${Date.now().toString(36)}`

  beforeAll(async () => {
    origin = await startOrigin()
    edge = await testEdge({
      rooms: [{ ...wide(), id }],
      originUrl: origin.url,
      redisUrl: inject('redisUrl'),
      adminTokens: `alice:${ALICE}`,
    })
  })
  afterAll(async () => {
    await edge?.close()
    await origin?.close()
  })

  async function api(method: string, path: string, o: { body?: unknown; headers?: Record<string, string>; token?: string | null } = {}) {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token !== null) headers.authorization = `Bearer ${o.token ?? ALICE}`
    if (o.body !== undefined) headers['content-type'] = 'application/json'
    const res = await edge.app.request(`http://shop.test/_anteroom/api${path}`, {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    })
    // biome-ignore lint/suspicious/noExplicitAny: responses are read field by field
    return { status: res.status, headers: res.headers, body: (await res.json()) as any }
  }

  it('serves the schema, to admins only: every setting with its type, label, help, range and group', async () => {
    expect((await api('GET', '/settings-schema', { token: null })).status).toBe(401)
    const served = await api('GET', '/settings-schema')
    expect(served.status).toBe(200)
    expect(served.headers.get('cache-control')).toBe('no-store')
    expect(served.body).toEqual(JSON.parse(JSON.stringify(SETTINGS_SCHEMA)))
    expect(served.body.settings.map((s: { name: string }) => s.name)).toEqual(Object.keys(ROOM_SETTINGS))
    expect(served.body.groups.map((g: { name: string }) => g.name)).toEqual(Object.keys(SETTING_GROUPS))
    for (const s of served.body.settings) {
      expect(s, s.name).toMatchObject({ type: expect.any(String), label: expect.any(String), help: expect.any(String) })
      if (s.type === 'integer') expect(s, s.name).toMatchObject({ min: expect.any(Number), max: expect.any(Number) })
    }
  })

  it('refuses every bad value of every setting in a change, naming the setting; nothing changes', async () => {
    const before = await api('GET', `/rooms/${id}`)
    const ifMatch = before.headers.get('etag') as string
    for (const [name, spec] of specs) {
      if (spec.type === 'id') continue // the id cannot be changed at all (admin-api.test.ts)
      for (const [value, why] of badValues(name, spec)) {
        const r = await api('PATCH', `/rooms/${id}`, { body: { [name]: value }, headers: { 'if-match': ifMatch } })
        expect([r.status, r.body.error], `${name} = ${JSON.stringify(value).slice(0, 40)}`).toMatchObject([
          400,
          { code: 'ERR_SETTINGS_INVALID', message: `${name}: ${why}`, field: name },
        ])
      }
    }
    expect(await api('GET', `/rooms/${id}`)).toMatchObject({ status: 200, body: before.body })
  })
})

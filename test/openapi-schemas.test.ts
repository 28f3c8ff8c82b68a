// The schemas the OpenAPI documents make from the code's own (room settings, request bodies) accept and refuse what the code does.
import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'
import { BULK_END_BODY, SIGN_IN_BODY } from '../admin/inputs.js'
import { holdBody } from '../src/booking/claims.js'
import { type BodyNode, checkBody, jsonSchemaOf } from '../src/core/body-schema.js'
import { parseRoomSettings, ROOM_SETTINGS, type SettingSpec } from '../src/core/settings.js'
import { settingsJsonSchema } from '../src/core/settings-json-schema.js'

// --- the schemas made from the code's own agree with it ----------------------------------------------

/** Values of one setting from its entry: in range, just out of range, of the wrong type, an unknown choice. */
function valuesOf(spec: SettingSpec): unknown[] {
  switch (spec.type) {
    case 'id':
      return ['a', 'a'.repeat(32), 'a1-b', '', 'A', 'a'.repeat(33), '-a', 'a_b', 42, null]
    case 'integer':
      return [spec.min, spec.max, spec.min + 1, spec.min - 1, spec.max + 1, spec.min + 0.5, String(spec.min), null, true]
    case 'choice':
      return [...spec.values, 'nope', spec.values[0]?.toUpperCase(), 42, null]
    case 'text':
      return ['', 'x'.repeat(spec.maxLength), 'x'.repeat(spec.maxLength + 1), 42, null, ['x']]
    case 'list': {
      const ok = spec.item === 'host' ? 'Shop.Example.' : '/tickets'
      const long = spec.item === 'host' ? 'a'.repeat(spec.maxLength) : `/${'a'.repeat(spec.maxLength - 1)}`
      const bad = spec.item === 'host' ? 'shop example' : 'tickets'
      return [[], [ok], [long], [`${long}a`], Array(spec.maxItems).fill(ok), Array(spec.maxItems + 1).fill(ok), [''], [bad], [42], ok, null]
    }
    case 'ref':
      return ['demo', 'a'.repeat(spec.maxLength), 'a'.repeat(spec.maxLength + 1), 'bad id!', '', 42, null]
    case 'bypass': {
      // Bits past a prefix, a path's canonical form and ids used twice are the code's alone to refuse.
      const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, kind: 'path', paths: [`/p${i}`] }))
      return [
        null,
        [],
        rules(spec.maxItems),
        rules(spec.maxItems + 1),
        [{ id: 'office', kind: 'cidr', networks: ['192.0.2.0/24', '2001:db8::/32'] }],
        [{ id: 'partner', kind: 'header', secret: 'partner-a' }],
        [{ id: 'search', kind: 'crawler', crawlers: ['googlebot', 'bingbot'] }],
        [{ id: 'search', kind: 'crawler', crawlers: ['askjeeves'] }],
        [{ id: 'office', kind: 'cidr', networks: [] }],
        [{ id: 'office', kind: 'cidr', networks: ['192.0.2.0/24'], extra: 1 }],
        [{ id: 'Office', kind: 'cidr', networks: ['192.0.2.0/24'] }],
        [{ id: 'office', kind: 'teleport' }],
        [{ id: 'static', kind: 'path', paths: ['static'] }],
        [{ id: 'partner', kind: 'header', secret: 'Not A Name' }],
        'office',
        [42],
      ]
    }
    case 'schedule': {
      const [p, o, c] = ['2026-12-01T09:00:00Z', '2026-12-01T10:00:00+01:00', '2026-12-02T10:00:00.5Z']
      // Times out of order are refused by parseRoomSettings alone: a rule across values JSON Schema cannot say.
      return [
        null,
        { prequeueAt: p, opensAt: '2026-12-01T10:00Z' },
        { prequeueAt: p, opensAt: '2026-12-01T12:00:00Z', closesAt: c },
        { prequeueAt: p, opensAt: '2026-12-01T12:00:00Z', closesAt: null },
        { prequeueAt: p },
        { prequeueAt: p, opensAt: o, extra: 1 },
        { prequeueAt: 'tomorrow', opensAt: o },
        { prequeueAt: '2026-12-01T09:00:00', opensAt: o },
        'soon',
        [],
        42,
      ]
    }
  }
}

describe('the schemas made from the code agree with it', () => {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true })
  const room = ajv.compile(settingsJsonSchema('room'))
  const patch = ajv.compile(settingsJsonSchema('patch'))
  const stored = ajv.compile(settingsJsonSchema('stored'))
  const parses = (input: unknown) => {
    try {
      return parseRoomSettings(input)
    } catch {
      return undefined
    }
  }

  it('room settings: every value made from every setting is accepted by both the JSON Schema and parseRoomSettings, or by neither', () => {
    // A room that passes with any in-range value of any one setting: refreshSeconds at its least, so that
    // abandonAfterSeconds at its least is still twice it (a rule across settings, checked by the code alone).
    const base = { id: 'sale', newUsersPerMinute: 60, totalActiveUsers: 10, refreshSeconds: 2 }
    let accepted = 0
    let refused = 0
    for (const [name, spec] of Object.entries(ROOM_SETTINGS) as [string, SettingSpec][]) {
      for (const value of valuesOf(spec)) {
        const input = { ...base, [name]: value }
        const parsed = parses(input)
        const label = `${name} = ${JSON.stringify(value)?.slice(0, 60)}`
        expect(room(input), label).toBe(parsed !== undefined)
        if (name !== 'id') expect(patch({ [name]: value }), `patch ${label}`).toBe(parsed !== undefined)
        if (parsed !== undefined) {
          expect(stored(parsed), `stored ${label}: ${JSON.stringify(stored.errors)}`).toBe(true)
          accepted++
        } else refused++
      }
    }
    expect([accepted, refused].every((n) => n > 40)).toBe(true)
    for (const input of [{ ...base, nope: 1 }, { id: 'sale', totalActiveUsers: 1 }, [], 'sale', null]) {
      expect(room(input), JSON.stringify(input)).toBe(false)
      expect(parses(input), JSON.stringify(input)).toBeUndefined()
    }
  })

  const HOLD = holdBody(4)
  const bodies: [string, BodyNode, unknown[]][] = [
    [
      'the hold',
      HOLD,
      [
        { seats: ['A1'] },
        { seats: ['A1', 'B2', 'C3', 'D4'] },
        { items: [{ item: 'night-12', quantity: 4 }] },
        { seats: ['A1'], items: [] },
        { seats: [], items: [{ item: 'ga', quantity: 1 }] },
        {},
        { seats: [] },
        { items: [] },
        { seats: [], items: [] },
        { seats: 'A1' },
        { seats: [1] },
        { seats: ['A 1'] },
        { seats: ['A1', 'A1'] },
        { seats: ['A1', 'A2', 'A3', 'A4', 'A5'] },
        { seats: ['A1'], extra: true },
        { items: [{ item: 'night-12' }] },
        { items: [{ item: 'night-12', quantity: 0 }] },
        { items: [{ item: 'night-12', quantity: 5 }] },
        { items: [{ item: 'night-12', quantity: 1.5 }] },
        { items: [{ item: 'night 12', quantity: 1 }] },
        { items: [{ item: 'night-12', quantity: 1, price: 0 }] },
        { items: ['night-12'] },
        { items: Array.from({ length: 21 }, (_, i) => ({ item: `x${i}`, quantity: 1 })) },
        null,
        [],
        'seats',
      ],
    ],
    [
      'the sign-in',
      SIGN_IN_BODY,
      [{ token: 'x' }, { name: 'alice', token: 'x' }, { name: '' }, { name: null }, { name: 'a b' }, { name: 7 }, {}],
    ],
    [
      'the bulk end',
      BULK_END_BODY,
      [
        { visitors: ['a'] },
        { visitors: [] },
        { visitors: 'a' },
        {},
        { visitors: ['a', 'b c'] },
        { visitors: [7] },
        { visitors: ['x'.repeat(65)] },
      ],
    ],
  ]
  for (const [name, node, values] of bodies) {
    it(`${name}: the body's JSON Schema and its check accept and refuse the same bodies`, () => {
      const validate = ajv.compile(jsonSchemaOf(node))
      for (const value of values) expect(validate(value), JSON.stringify(value)).toBe(checkBody(node, value) === undefined)
    })
  }

  it("the hold: what JSON Schema cannot say is checked all the same (an item twice, a hold over the visitor's limit)", () => {
    const validate = ajv.compile(jsonSchemaOf(HOLD))
    for (const [value, message] of [
      [
        {
          items: [
            { item: 'a', quantity: 1 },
            { item: 'b', quantity: 1 },
            { item: 'a', quantity: 1 },
          ],
        },
        'items: names a twice',
      ],
      [{ seats: ['A1', 'A2'], items: [{ item: 'ga', quantity: 3 }] }, 'items: at most 4 in one hold, seats and item units together, got 5'],
    ] as const) {
      expect(validate(value)).toBe(true)
      expect(checkBody(HOLD, value)).toEqual({ message, field: 'items' })
    }
  })
})

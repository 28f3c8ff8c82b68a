// decideVisit (src/core/visit.ts): what the edge answers a visitor without an admission, from the
// room, the store's answer and the clock alone. The HTTP behaviour around it is in contract/edge-http.ts.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import type { RoomSettings } from '../src/core/settings.js'
import { asksStore, decideVisit, OPEN_ADMISSION_MS } from '../src/core/visit.js'

const base = loadConfig({
  ANTEROOM_ROOMS: JSON.stringify([
    { id: 'sale', paths: ['/'], totalActiveUsers: 10, newUsersPerMinute: 10, refreshSeconds: 20, abandonAfterSeconds: 60 },
  ]),
}).rooms[0] as RoomSettings
const room = (over: Partial<RoomSettings> = {}): RoomSettings => ({ ...base, ...over })
const NOW = 1_800_000_000_000
const LIFE = { epoch: 1, born: NOW - 60_000, seq: 1 }
const T = { admittedLastMinute: 30, now: NOW, life: LIFE }

describe('decideVisit', () => {
  it('answers a closed room without asking the store: closed, no place, nothing to sign', () => {
    expect(asksStore(room({ mode: 'closed' }))).toBe(false)
    expect(asksStore(room())).toBe(true)
    expect(decideVisit(room({ mode: 'closed' }), { kind: 'not-asked' }, 123, NOW)).toEqual({
      kind: 'wait',
      httpStatus: 200,
      status: { room: 'sale', state: 'closed', position: null, ahead: null, waiting: null, etaSeconds: null, refreshSeconds: 20 },
    })
  })

  it('keeps a queued visitor waiting with their place, the people ahead and the ETA from the rate', () => {
    const verdict = decideVisit(room(), { kind: 'polled', result: { state: 'queued', arrival: 5, position: 4, waiting: 9, ...T } }, 5, NOW)
    expect(verdict).toEqual({
      kind: 'wait',
      httpStatus: 200,
      status: { room: 'sale', state: 'queued', position: 4, ahead: 3, waiting: 9, etaSeconds: 8, refreshSeconds: 20 },
      place: { arrival: 5, expires: NOW + 60_000, maxAgeSeconds: 60 },
    })
  })

  it('gives no ETA while paused, and none before anyone was admitted', () => {
    const paused = decideVisit(room(), { kind: 'polled', result: { state: 'paused', arrival: 5, position: 1, waiting: 1, ...T } }, 5, NOW)
    expect(paused).toMatchObject({ kind: 'wait', status: { state: 'paused', etaSeconds: null } })
    const unmeasured = { state: 'queued', arrival: 5, position: 2, waiting: 2, admittedLastMinute: 0, now: NOW, life: LIFE } as const
    expect(decideVisit(room(), { kind: 'polled', result: unmeasured }, 5, NOW)).toMatchObject({ status: { etaSeconds: null } })
  })

  it('admits on the store clock: the session the store granted', () => {
    const result = {
      state: 'admitted',
      arrival: 7_000,
      sessionExpires: NOW + 600_000,
      admittedLastMinute: 1,
      now: NOW - 5,
      life: LIFE,
    } as const
    expect(decideVisit(room(), { kind: 'polled', result }, 7_000, NOW)).toEqual({
      kind: 'admit',
      status: { room: 'sale', state: 'admitted', position: 0, ahead: 0, waiting: null, etaSeconds: 0, refreshSeconds: 20 },
      session: { arrival: 7_000, expires: NOW + 600_000, now: NOW - 5 },
    })
  })

  it('says busy (503) while the store is away and the room fails closed', () => {
    expect(decideVisit(room({ onStoreError: 'closed' }), { kind: 'unavailable' }, 5, NOW)).toEqual({
      kind: 'wait',
      httpStatus: 503,
      status: { room: 'sale', state: 'busy', position: null, ahead: null, waiting: null, etaSeconds: null, refreshSeconds: 20 },
    })
  })

  it('fails open on the edge clock: a short admission, and the place kept past it, from the ticket or from now', () => {
    const open = room({ onStoreError: 'open' })
    const keep = OPEN_ADMISSION_MS + 60_000
    expect(decideVisit(open, { kind: 'unavailable' }, 42, NOW)).toMatchObject({
      kind: 'open',
      status: { state: 'busy' },
      session: { arrival: 42, expires: NOW + OPEN_ADMISSION_MS, now: NOW },
      place: { arrival: 42, expires: NOW + keep, maxAgeSeconds: keep / 1000 },
    })
    expect(decideVisit(open, { kind: 'unavailable' }, undefined, NOW)).toMatchObject({
      session: { arrival: NOW * 1000 },
      place: { arrival: NOW * 1000 },
    })
  })
})

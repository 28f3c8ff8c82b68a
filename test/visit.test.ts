// decideVisit (src/core/visit.ts): what the edge answers a visitor without an admission, from the
// room, the store's answer and the clock alone. The HTTP behaviour around it is in contract/edge-http.ts.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { nextPollMs } from '../src/core/polling.js'
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
const T = { admittedLastMinute: 30, now: NOW, life: LIFE, drawRank: 0 }

describe('decideVisit', () => {
  it('answers a closed room without asking the store: closed, no place, nothing to sign', () => {
    expect(asksStore(room({ mode: 'closed' }), NOW)).toBe(false)
    expect(asksStore(room(), NOW)).toBe(true)
    expect(decideVisit(room({ mode: 'closed' }), { kind: 'not-asked' }, 123, NOW)).toEqual({
      kind: 'wait',
      httpStatus: 200,
      status: {
        room: 'sale',
        state: 'closed',
        position: null,
        ahead: null,
        waiting: null,
        etaSeconds: null,
        etaRange: null,
        refreshSeconds: 20,
        nextPollSeconds: 20,
      },
    })
  })

  it("keeps a queued visitor waiting with their place, the people ahead and the estimate of their wait (the edge's, from the poll)", () => {
    const asked: unknown[] = []
    const estimate = (poll: unknown) => {
      asked.push(poll)
      return { seconds: 80, low: 60, high: 120 }
    }
    const result = { state: 'queued', arrival: 5, position: 4, waiting: 9, ...T } as const
    const verdict = decideVisit(room(), { kind: 'polled', result }, 5, NOW, estimate)
    expect(verdict).toEqual({
      kind: 'wait',
      httpStatus: 200,
      status: {
        room: 'sale',
        state: 'queued',
        position: 4,
        ahead: 3,
        waiting: 9,
        etaSeconds: 80,
        etaRange: [60, 120],
        refreshSeconds: 20,
        nextPollSeconds: nextPollMs(5, T.now, 20_000) / 1000,
      },
      place: { arrival: 5, expires: NOW + 60_000, maxAgeSeconds: 60 },
    })
    expect(asked).toEqual([result])
  })

  it('gives no ETA while paused or recovering (nobody is let in), nor when nothing can be estimated', () => {
    const estimate = () => ({ seconds: 80, low: 60, high: 120 })
    for (const state of ['paused', 'recovering'] as const) {
      const verdict = decideVisit(
        room(),
        { kind: 'polled', result: { state, arrival: 5, position: 1, waiting: 1, ...T } },
        5,
        NOW,
        estimate,
      )
      expect(verdict).toMatchObject({ kind: 'wait', status: { state, etaSeconds: null, etaRange: null } })
    }
    const queued = {
      state: 'queued',
      arrival: 5,
      position: 2,
      waiting: 2,
      admittedLastMinute: 0,
      now: NOW,
      life: LIFE,
      drawRank: 0,
    } as const
    expect(decideVisit(room(), { kind: 'polled', result: queued }, 5, NOW, () => null)).toMatchObject({
      status: { etaSeconds: null, etaRange: null },
    })
    expect(decideVisit(room(), { kind: 'polled', result: queued }, 5, NOW)).toMatchObject({ status: { etaSeconds: null } })
  })

  it('admits on the store clock: the session the store granted', () => {
    const result = {
      state: 'admitted',
      arrival: 7_000,
      sessionExpires: NOW + 600_000,
      admittedLastMinute: 1,
      now: NOW - 5,
      life: LIFE,
      drawRank: 0,
    } as const
    expect(decideVisit(room(), { kind: 'polled', result }, 7_000, NOW)).toEqual({
      kind: 'admit',
      status: {
        room: 'sale',
        state: 'admitted',
        position: 0,
        ahead: 0,
        waiting: null,
        etaSeconds: 0,
        etaRange: [0, 0],
        refreshSeconds: 20,
        nextPollSeconds: 20,
      },
      session: { arrival: 7_000, expires: NOW + 600_000, now: NOW - 5 },
    })
  })

  it('says busy (503) while the store is away and the room fails closed', () => {
    expect(decideVisit(room({ onStoreError: 'closed' }), { kind: 'unavailable' }, 5, NOW)).toEqual({
      kind: 'wait',
      httpStatus: 503,
      status: {
        room: 'sale',
        state: 'busy',
        position: null,
        ahead: null,
        waiting: null,
        etaSeconds: null,
        etaRange: null,
        refreshSeconds: 20,
        nextPollSeconds: 20,
      },
      // The place is kept through the outage: the token is re-signed with the same arrival.
      place: { arrival: 5, expires: NOW + 60_000, maxAgeSeconds: 60 },
    })
    // A newcomer gets no place until the store answers.
    expect(decideVisit(room({ onStoreError: 'closed' }), { kind: 'unavailable' }, undefined, NOW)).not.toHaveProperty('place')
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

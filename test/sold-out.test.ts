// A room linked to an event (its `event` setting) and the event's stock, on the Node edge: what the
// HTTP contract (test/contract/edge-http.ts, "sold out") cannot see from outside. The counts come with
// the rooms' once-a-second reload and never with a poll; a count the edge cannot get (the gate knows
// nothing, or its call fails) never stops a sale; the setting is validated like the others; and the
// rule (core/stock.ts) as a pure function.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { AnteroomError } from '../src/core/errors.js'
import { parseRoomSettings } from '../src/core/settings.js'
import { pollLimits, stockState, stockStop } from '../src/core/stock.js'
import type { Edge } from '../src/entry/build.js'
import type { ClaimGate, StockSnapshot } from '../src/ports/claim-gate.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freshDb, withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
const seats = (sold: number, of: number): StockSnapshot['units'] =>
  Array.from({ length: of }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < sold ? 1 : 0 }))
const counts = (free: number, held: number, sold = 0) => ({ free, held, sold, reconciledAt: T0, repairs: 0 })

describe('the stock rule (core/stock.ts)', () => {
  const room = (over: Record<string, unknown> = {}) =>
    parseRoomSettings({ id: 'sale', totalActiveUsers: 10, newUsersPerMinute: 60, event: 'gig', ...over })
  const view = (c: ReturnType<typeof counts> | undefined, event = 'gig') => ({ event, counts: c, at: T0 })

  it('says what counts mean: nothing free and some held is all_held, nothing free and none held sold_out', () => {
    expect(stockState(undefined)).toBe('unknown')
    expect(stockState(counts(1, 5))).toBe('available')
    expect(stockState(counts(0, 2))).toBe('all_held')
    expect(stockState(counts(0, 0, 40))).toBe('sold_out')
    // A gate that has let more go than it had still has nothing to sell.
    expect(stockState(counts(-1, 0))).toBe('sold_out')
  })

  it('stops admissions only for a linked, open room whose counts the edge has, with nothing free', () => {
    expect(stockStop(room(), view(counts(0, 0)), T0)).toBe('sold_out')
    expect(stockStop(room(), view(counts(0, 3)), T0)).toBe('all_held')
    expect(stockStop(room(), view(counts(1, 0)), T0)).toBeUndefined()
    expect(stockStop(room(), view(undefined), T0)).toBeUndefined()
    expect(stockStop(room(), undefined, T0)).toBeUndefined()
    expect(stockStop(room({ event: null }), view(counts(0, 0)), T0)).toBeUndefined()
    // Counts of the event the room was linked to before a change are not this room's.
    expect(stockStop(room({ event: 'other' }), view(counts(0, 0)), T0)).toBeUndefined()
    // A closed room, and a scheduled one before it opens, let nobody in anyway and say so themselves.
    expect(stockStop(room({ mode: 'closed' }), view(counts(0, 0)), T0)).toBeUndefined()
    const schedule = { prequeueAt: new Date(T0 - 60_000).toISOString(), opensAt: new Date(T0 + 60_000).toISOString() }
    expect(stockStop(room({ schedule }), view(counts(0, 0)), T0)).toBeUndefined()
    expect(stockStop(room({ schedule }), view(counts(0, 0)), T0 + 60_000)).toBe('sold_out')
    expect(stockStop(room({ mode: 'passthrough' }), view(counts(0, 0)), T0)).toBe('sold_out')
  })

  it('hands the rule a paused room, as an admin pause does, and nothing else changed', () => {
    for (const mode of ['fifo', 'passthrough', 'paused'] as const) {
      const r = room({ mode })
      const limits = pollLimits(r, undefined)
      expect(pollLimits(r, 'sold_out')).toEqual({ ...limits, mode: 'paused' })
      expect(pollLimits(r, 'all_held')).toEqual({ ...limits, mode: 'paused' })
      expect(limits.mode).toBe(mode)
    }
  })
})

describe('the event setting', () => {
  it('takes an event id or null (the default), and names the field when it is neither', () => {
    const base = { id: 'sale', totalActiveUsers: 10, newUsersPerMinute: 60 }
    expect(parseRoomSettings(base).event).toBeNull()
    expect(parseRoomSettings({ ...base, event: null }).event).toBeNull()
    expect(parseRoomSettings({ ...base, event: 'summer-tour_2026.night-1' }).event).toBe('summer-tour_2026.night-1')
    expect(() => loadConfig({ ANTEROOM_ROOMS: JSON.stringify([{ ...base, event: 'a b' }]) })).toThrow(
      'rooms[0].event: must be null (none) or an id of 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit',
    )
    // The demo room of `npm start` sells the bundled origin's demo event.
    expect(loadConfig({}).rooms[0]?.event).toBe('demo')
  })
})

describe('the counts on the Node edge', () => {
  let origin: OriginServer
  const edges: Edge[] = []
  const ADMIN = 'ops-admin-token-0123456789abcdef'
  beforeAll(async () => {
    origin = await startOrigin()
  })
  afterAll(async () => {
    for (const e of edges) await e.close()
    await origin.close()
  })

  async function edgeOn(store: 'embedded' | 'redis', rooms: Record<string, unknown>[]) {
    const clock = new ManualClock(T0)
    const url = inject('redisUrl')
    const logged: [string, Record<string, unknown>][] = []
    const edge = await testEdge({
      rooms,
      originUrl: origin.url,
      clock,
      redisUrl: store === 'redis' ? `${url}/${await freshDb(url)}` : undefined,
      adminTokens: `ops:${ADMIN}`,
      log: (event, fields) => logged.push([event, fields]),
    })
    edges.push(edge)
    const app = withSocketAddress(edge.app)
    /** The edge's next reload (a second later on its clock), started by a request and waited for. */
    const reload = async () => {
      clock.advance(1000)
      await new Visitor().request(app, '/_anteroom/status?room=no-such-room', { json: true })
      await edge.deps.rooms.settled()
    }
    return { edge, app, clock, reload, logged }
  }

  /** Counts the gate's counts calls. */
  function countCalls(gate: ClaimGate) {
    const calls: string[] = []
    const counts = gate.counts.bind(gate)
    gate.counts = (event, now) => {
      calls.push(event)
      return counts(event, now)
    }
    return calls
  }

  for (const store of ['embedded', 'redis'] as const) {
    it(`reads the counts once a reload per event, however many rooms sell it and however many polls come (${store})`, async () => {
      const rooms = [
        { id: 'one', paths: ['/one'], totalActiveUsers: 1, newUsersPerMinute: 60, event: 'gig' },
        { id: 'two', paths: ['/two'], totalActiveUsers: 1, newUsersPerMinute: 60, event: 'gig' },
        { id: 'three', paths: ['/three'], totalActiveUsers: 1, newUsersPerMinute: 60, event: 'other' },
        { id: 'plain', paths: ['/plain'], totalActiveUsers: 1, newUsersPerMinute: 60 },
      ]
      const { edge, app, clock, reload } = await edgeOn(store, rooms)
      await edge.gate.reconcile('gig', { units: seats(1, 1), holds: [] }, 0, clock.now())
      const calls = countCalls(edge.gate)
      const polls = { n: 0 }
      const poll = edge.deps.queue.poll.bind(edge.deps.queue)
      edge.deps.queue.poll = (input) => {
        polls.n++
        return poll(input)
      }
      await reload()
      expect(calls.sort()).toEqual(['gig', 'other'])
      // Within the second, many polls: each one store call, and no counts call.
      const line = Array.from({ length: 20 }, () => new Visitor())
      for (const v of line) expect(await v.status(app, 'one')).toMatchObject({ state: 'sold_out', position: null })
      for (const v of line) expect((await v.status(app, 'three')).state).not.toBe('sold_out')
      expect(calls).toHaveLength(2)
      // The sold-out newcomers of room one cost no poll; the 40 others one each.
      expect(polls.n).toBe(20)
      await reload()
      expect(calls).toHaveLength(4)
    })

    it(`a count the edge cannot get never stops a sale: the gate's call fails, the room admits as before (${store})`, async () => {
      const { edge, app, clock, reload, logged } = await edgeOn(store, [
        { id: 'sale', paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60, event: 'gig' },
      ])
      await edge.gate.reconcile('gig', { units: seats(2, 2), holds: [] }, 0, clock.now())
      await reload()
      expect(await new Visitor().status(app, 'sale')).toMatchObject({ state: 'sold_out' })
      const counts = edge.gate.counts.bind(edge.gate)
      edge.gate.counts = async () => {
        throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'the gate is away')
      }
      await reload()
      expect(await new Visitor().status(app, 'sale')).toMatchObject({ state: 'admitted' })
      const stats = await app.request('http://shop.test/_anteroom/api/rooms/sale/stats', { headers: { authorization: `Bearer ${ADMIN}` } })
      expect(await stats.json()).toMatchObject({ stock: { event: 'gig', state: 'unknown', stopsAdmissions: false, free: null } })
      // The operator is told, once while it lasts.
      await reload()
      expect(logged.filter(([e]) => e === 'stock_unavailable')).toEqual([
        ['stock_unavailable', { event: 'gig', message: 'the gate is away' }],
      ])
      // The gate answers again: the room is sold out again at the next reload.
      edge.gate.counts = counts
      await reload()
      expect(await new Visitor().status(app, 'sale')).toMatchObject({ state: 'sold_out' })
    })
  }
})

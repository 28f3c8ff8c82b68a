// The edge's Prometheus metrics: what it counts itself (visits, their latency, time in queue, refused
// joins, store calls), bumped in place on the hot path with no allocation, and what it reads when
// scraped from its last once-a-second look at each room (the line, the sessions, the store's running
// totals, the wait at the back, the stock). Declared once here for Node and the Worker (core/metrics.ts).

import { safeEqual } from '../core/compare.js'
import { isAnteroomError } from '../core/errors.js'
import { type CounterCell, type HistogramCell, LATENCY_BUCKETS, MetricRegistry, QUEUE_WAIT_BUCKETS } from '../core/metrics.js'
import { ROOM_MODES } from '../core/settings.js'
import { stockState } from '../core/stock.js'
import { REFUSAL_REASONS, type RefusalReason } from '../ports/defence-store.js'
import type { RoomDirectory } from '../rooms/directory.js'

/** What a visit answered (Answer.kind in visit.ts). */
export type VisitOutcome = 'wait' | 'admit' | 'open' | 'challenge'
const VISIT_OUTCOMES: readonly VisitOutcome[] = ['wait', 'admit', 'open', 'challenge']

/** The store calls the edge times and counts failures of. */
export type StoreCall = 'poll' | 'watch' | 'gate_counts' | 'renew' | 'finish' | 'join' | 'redeem'
const STORE_CALLS: readonly StoreCall[] = ['poll', 'watch', 'gate_counts', 'renew', 'finish', 'join', 'redeem']

/** What an access code or invite link came to at this edge (src/http/access.ts). */
export type RedemptionOutcome = 'redeemed' | 'again' | 'invalid' | 'used_up' | 'expired' | 'revoked' | 'throttled' | 'unavailable'
const REDEMPTION_OUTCOMES: readonly RedemptionOutcome[] = [
  'redeemed',
  'again',
  'invalid',
  'used_up',
  'expired',
  'revoked',
  'throttled',
  'unavailable',
]

/** The metrics' clock: ticks of 1/8192 ms (about 122 ns) in 30 bits, small integers that a visit keeps without allocating. */
const TICKS_PER_MS = 8192
const TICK_MASK = 0x3fffffff
/** A visit that is not timed. */
export const UNTIMED = -1

/** The clock now, in ticks; it wraps every 131 s, which durations shorter than that read right across. */
export function ticks(): number {
  return Math.floor(performance.now() * TICKS_PER_MS) & TICK_MASK
}

/** Seconds since `start` (ticks). */
export function secondsSince(start: number): number {
  return ((ticks() - start) & TICK_MASK) / TICKS_PER_MS / 1000
}

/** A room's cells, made once: a visit bumps them in place. */
export class RoomMeter {
  /** Visits since the last timed one. */
  private untimed = 0
  /** Whether the store's last answer to a poll of this room from this edge said the room is recovering. */
  recovering = false

  constructor(
    readonly visits: Readonly<Record<VisitOutcome, CounterCell>>,
    /** From the visit's start to its verdict, seconds: the timed visits only. */
    readonly pollSeconds: HistogramCell,
    /** Visitors this edge admitted from the line: from their arrival to the admission, seconds. */
    readonly queueWait: HistogramCell,
    readonly refused: Readonly<Record<RefusalReason, CounterCell>>,
    private readonly timeEvery: number,
  ) {}

  /**
   * Whether to time this visit: one in `timeEvery`. Counting costs an increment; timing reads the
   * clock, and in V8 each read allocates a number, so not every visit is timed.
   */
  timed(): boolean {
    if (++this.untimed < this.timeEvery) return false
    this.untimed = 0
    return true
  }
}

export interface StoreMeter {
  readonly errors: CounterCell
  readonly seconds: HistogramCell
}

/** The edge's version, in anteroom_build_info. */
export const EDGE_VERSION = '0.1.0'

export class EdgeMeters {
  readonly registry = new MetricRegistry()
  private readonly rooms = new Map<string, RoomMeter>()
  readonly store: Readonly<Record<StoreCall, StoreMeter>>
  private readonly visits = this.registry.counter(
    'anteroom_visits_total',
    'Visits of a protected path or the status endpoint that reached the line, by what this edge answered: wait (queued, paused, closed, sold out...), admit, open (the store was away and the room fails open) or challenge (proof of work first).',
    ['room', 'outcome'],
  )
  private readonly pollSeconds = this.registry.histogram(
    'anteroom_poll_duration_seconds',
    "A visit's time in this edge, from its start to its verdict (the store call included), seconds: one visit in ANTEROOM_METRICS_TIME_EVERY (16) is timed.",
    ['room'],
    LATENCY_BUCKETS,
  )
  private readonly queueWait = this.registry.histogram(
    'anteroom_queue_wait_seconds',
    'Time in queue of the visitors this edge admitted from the line, from their arrival to their admission, seconds.',
    ['room'],
    QUEUE_WAIT_BUCKETS,
  )
  private readonly refused = this.registry.counter(
    'anteroom_joins_refused_total',
    'New places this edge refused, by reason: network (over the cap on joins per network) or pow (no valid proof of work).',
    ['room', 'reason'],
  )

  private readonly redeemed = this.registry.counter(
    'anteroom_access_redemptions_total',
    'Access codes and invite links this edge was given, by outcome: redeemed (a place in a lane), again (the same visitor once more: no use counted), invalid, used_up, expired, revoked, throttled (too many wrong codes from the network this minute), unavailable (the store did not answer).',
    ['room', 'outcome'],
  )
  private readonly redemptionCells = new Map<string, Readonly<Record<RedemptionOutcome, CounterCell>>>()

  /** @param timeEvery one visit in this many is timed (ANTEROOM_METRICS_TIME_EVERY); every visit is counted. */
  constructor(private readonly timeEvery = 16) {
    const errors = this.registry.counter(
      'anteroom_store_errors_total',
      'Store calls of this edge that failed (the store did not answer), by call.',
      ['call'],
    )
    const seconds = this.registry.histogram(
      'anteroom_store_call_duration_seconds',
      "Store calls of this edge, by call, seconds (a poll's: from the visit's start to the store's answer, batching included, for the timed visits).",
      ['call'],
      LATENCY_BUCKETS,
    )
    const store = {} as Record<StoreCall, StoreMeter>
    for (const call of STORE_CALLS) store[call] = { errors: errors.cell(call), seconds: seconds.cell(call) }
    this.store = store
  }

  /** The room's cells (made on first use). */
  room(id: string): RoomMeter {
    let meter = this.rooms.get(id)
    if (meter === undefined) {
      const visits = {} as Record<VisitOutcome, CounterCell>
      for (const outcome of VISIT_OUTCOMES) visits[outcome] = this.visits.cell(id, outcome)
      const refused = {} as Record<RefusalReason, CounterCell>
      for (const reason of REFUSAL_REASONS) refused[reason] = this.refused.cell(id, reason)
      meter = new RoomMeter(visits, this.pollSeconds.cell(id), this.queueWait.cell(id), refused, this.timeEvery)
      this.rooms.set(id, meter)
      this.redemptions(id)
    }
    return meter
  }

  /** The room's redemption cells, by outcome (made with its other cells, or on first use). */
  redemptions(id: string): Readonly<Record<RedemptionOutcome, CounterCell>> {
    let cells = this.redemptionCells.get(id)
    if (cells === undefined) {
      const made = {} as Record<RedemptionOutcome, CounterCell>
      for (const outcome of REDEMPTION_OUTCOMES) made[outcome] = this.redeemed.cell(id, outcome)
      this.redemptionCells.set(id, (cells = made))
    }
    return cells
  }

  /** Times a store call (seconds; undefined: not timed) and counts it if it failed. */
  storeCall(call: StoreCall, seconds: number | undefined, ok: boolean): void {
    const m = this.store[call]
    if (seconds !== undefined) m.seconds.observe(seconds)
    if (!ok) m.errors.value++
  }

  /** The families read when scraped, from the edge's last look at each room (once a second). */
  watch(directory: RoomDirectory): void {
    const r = this.registry
    const rooms = () => directory.rooms()
    const seen = (pick: (s: NonNullable<ReturnType<RoomDirectory['seen']>>) => number) =>
      function* () {
        for (const room of rooms()) {
          const s = directory.seen(room.id)
          if (s !== undefined) yield [[room.id], pick(s)] as const
        }
      }
    r.read(
      'anteroom_room_waiting',
      'Visitors in line, as this edge last saw the store (once a second).',
      'gauge',
      ['room'],
      seen((s) => s.waiting),
    )
    r.read(
      'anteroom_room_active',
      'Admitted visitors whose sessions are active, as this edge last saw the store.',
      'gauge',
      ['room'],
      seen((s) => s.active),
    )
    r.read(
      'anteroom_room_admitted_total',
      "Visitors admitted in the room's life in the store, every edge's (a store that lost the room starts again from 0). Every edge reports the same value: aggregate with max, not sum.",
      'counter',
      ['room'],
      seen((s) => s.admitted),
    )
    r.read(
      'anteroom_room_abandoned_total',
      "Visitors dropped from the line for not polling, in the room's life in the store (every edge reports the same value: aggregate with max).",
      'counter',
      ['room'],
      seen((s) => s.abandoned),
    )
    r.read(
      'anteroom_room_back_of_line_wait_seconds',
      'The estimated wait of a visitor joining the back of the line now, seconds (absent while it cannot be estimated: a paused or closed room).',
      'gauge',
      ['room'],
      function* () {
        for (const room of rooms()) {
          const wait = directory.backOfLine(room)
          if (wait !== null) yield [[room.id], wait] as const
        }
      },
    )
    const meters = this.rooms
    r.read(
      'anteroom_room_recovering',
      "1 while the store's last answer to this edge's polls of the room said it is recovering (the store lost the room and waits for everybody to be back before admitting).",
      'gauge',
      ['room'],
      function* () {
        for (const room of rooms()) yield [[room.id], meters.get(room.id)?.recovering ? 1 : 0] as const
      },
    )
    r.read(
      'anteroom_room_mode',
      "1 for the room's current mode (fifo, paused, passthrough, closed).",
      'gauge',
      ['room', 'mode'],
      function* () {
        for (const room of rooms()) for (const mode of ROOM_MODES) yield [[room.id, mode], room.mode === mode ? 1 : 0] as const
      },
    )
    r.read('anteroom_room_limit_active_users', "The room's cap on active users (totalActiveUsers).", 'gauge', ['room'], function* () {
      for (const room of rooms()) yield [[room.id], room.totalActiveUsers] as const
    })
    r.read('anteroom_room_limit_new_users_per_minute', "The room's admission rate (newUsersPerMinute).", 'gauge', ['room'], function* () {
      for (const room of rooms()) yield [[room.id], room.newUsersPerMinute] as const
    })
    r.read(
      'anteroom_room_stock_units',
      "A linked event's units by state (free, held, sold), as this edge last read the claim gate (absent while unknown).",
      'gauge',
      ['room', 'event', 'state'],
      function* () {
        for (const room of rooms()) {
          const counts = directory.stock(room.id)?.counts
          if (room.event === null || counts === undefined) continue
          yield [[room.id, room.event, 'free'], counts.free] as const
          yield [[room.id, room.event, 'held'], counts.held] as const
          yield [[room.id, room.event, 'sold'], counts.sold] as const
        }
      },
    )
    r.read(
      'anteroom_room_sold_out',
      "1 while a linked event's stock says nothing is free and nothing is held (the room lets nobody new in).",
      'gauge',
      ['room'],
      function* () {
        for (const room of rooms())
          if (room.event !== null) yield [[room.id], stockState(directory.stock(room.id)?.counts) === 'sold_out' ? 1 : 0] as const
      },
    )
    r.read('anteroom_store_up', "1 if this edge's last once-a-second look at the rooms reached the store.", 'gauge', [], function* () {
      yield [[], directory.storeAnswered() ? 1 : 0] as const
    })
    r.read('anteroom_build_info', "The edge's version.", 'gauge', ['version'], function* () {
      yield [[EDGE_VERSION], 1] as const
    })
  }
}

/**
 * A store call, timed and counted as failed if the store did not answer (ERR_STORE_UNAVAILABLE); for
 * the calls off the poll path (a renewal, an origin's end-session, a join counted against its network).
 */
export function meteredCall<T>(meters: EdgeMeters | undefined, call: StoreCall, make: () => Promise<T>): Promise<T> {
  if (meters === undefined) return make()
  const started = performance.now()
  const seconds = () => (performance.now() - started) / 1000
  return make().then(
    (value) => {
      meters.storeCall(call, seconds(), true)
      return value
    },
    (err: unknown) => {
      meters.storeCall(call, seconds(), !isAnteroomError(err, 'ERR_STORE_UNAVAILABLE'))
      throw err
    },
  )
}

/** Whether an Authorization header carries one of the tokens (compared in constant time, each one checked). */
export function bearerIn(authorization: string | undefined, tokens: readonly string[]): boolean {
  if (authorization === undefined || !authorization.startsWith('Bearer ')) return false
  const given = authorization.slice(7)
  let found = false
  for (const token of tokens) if (safeEqual(given, token)) found = true
  return found
}

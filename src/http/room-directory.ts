// The edge's cached view of the rooms. Reads are synchronous on the hot path; the cache reloads
// from the SettingsStore in the background at most every `refreshMs` (1 s), so every edge sees a
// change within about a second, and a slow or absent store never delays a visitor. A reload still
// unfinished three periods after it began is given up on, and the next request starts another.
// The configured rooms are the floor: a room the store lacks (never seeded, or flushed) is served
// from the config and written back, so a protected path never falls open because Redis forgot.
// The same reload watches each room (one store call a room): the sessions an admin or the origin
// ended since the last look, so every edge refuses an ended admission within about a second without
// a store call per request; the room's life in the store, so every edge notices within a second that the store forgot
// (and re-registers the admissions from before); and the active count, for the store to reserve.
// The same look brings what the wait estimates come from (core/eta.ts: the line, the pace, sampled
// session expiries, the running totals): estimate() answers each poll from the last look's forecast,
// worked out once per look, so a queued visitor's poll stays one store call.
// Other once-a-second work of the edge rides on the reload (alsoOnReload: the refused-joins flush),
// so that a Worker's waitUntil of the reload covers it too.
// A room linked to an event (its `event` setting) also gets the event's stock with each reload (one
// ClaimGate counts call per event, however many rooms sell it): stock() answers each visit from it,
// so that a sold-out room stops admissions (core/stock.ts) without a store call per poll. Counts the
// gate does not have, or a call that fails, leave the room as if it were not linked.

import { hasSeparateLane, separateLane } from '../core/access.js'
import type { EdgeHint, LifeMark } from '../core/admission.js'
import {
  admittedBy,
  emptySnapshot,
  estimateWait,
  forecastLine,
  type LineForecast,
  type LineObservation,
  lookFor,
  observeLine,
  type QueuedPoll,
  type WaitEstimate,
} from '../core/eta.js'
import type { RoomSettings } from '../core/settings.js'
import type { StockView } from '../core/stock.js'
import type { ClaimGate } from '../ports/claim-gate.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { SettingsStore } from '../ports/settings-store.js'

/** How long after a failed store call the edge tells the store of it (EdgeHint.outage). */
const OUTAGE_HINT_MS = 5 * 60_000
/** Ended sessions matter while a token issued before the end may still be valid: a session, and a minute. */
const ENDED_GRACE_MS = 60_000
/**
 * Reload periods after which a reload that has not finished is given up on: the next request starts
 * another. A reload that never settles (seen once in CI on the Worker edge; the cause, perhaps a
 * request cancelled with the store calls it made, is not known) would otherwise stop every later
 * one, and with them the stock that stops a sold-out room.
 */
const STUCK_PERIODS = 3

interface Watched {
  ended: Map<string, number>
  since: number
  life: LifeMark | undefined
  active: number
  /** The numbers of the last look that reached the store (the metrics read them). */
  seen: RoomSeen | undefined
}

/** A room as this edge's last look at the store saw it. */
export interface RoomSeen {
  waiting: number
  active: number
  /** Running totals of the room's life in the store (a new life starts them again). */
  admitted: number
  abandoned: number
  /** When, ms on the edge's clock. */
  at: number
}

/** Called with each store call the directory makes: which, how long it took (s), and whether it answered. */
export type StoreCallHook = (call: 'watch' | 'gate_counts', seconds: number, ok: boolean) => void

/** The settings a forecast depends on. */
function forecastKey(room: RoomSettings): string {
  return `${room.totalActiveUsers}|${room.newUsersPerMinute}|${room.sessionDurationSeconds}|${room.refreshSeconds}`
}

export class RoomDirectory {
  private current: readonly RoomSettings[]
  /** When the last reload began: reloads are refreshMs apart from start to start. */
  private reloadedAt = Number.NEGATIVE_INFINITY
  private loading: Promise<void> | undefined
  /** Counts reloads begun: one given up on (STUCK_PERIODS) writes nothing if it ever finishes. */
  private generation = 0
  /** Per room: visitor → when an admin or the origin ended their session (ms), how far that list was read, and the room's life. */
  private readonly watched = new Map<string, Watched>()
  /** The last hint given for each room (hint()). */
  private readonly hints = new Map<string, EdgeHint>()
  /** Per room: the looks at its line so far, and the forecast from the last one (for the settings it was made with). */
  private readonly lines = new Map<string, LineObservation>()
  private readonly forecasts = new Map<
    string,
    { line: LineObservation | undefined; room: RoomSettings; limits: string; forecast: LineForecast }
  >()
  /** The store's clock less this edge's, as the last poll showed it: looks are timed on the store's clock. */
  private storeOffset = 0
  private readonly tasks: (() => Promise<void>)[] = []
  /** When this edge last failed to reach the store (ms), told to the store for OUTAGE_HINT_MS after (hint). */
  private storeFailedAt: number | undefined
  /** Per linked room: its event's stock at the last look (counts undefined: unknown). */
  private stocks = new Map<string, StockView>()
  private readonly queue: Pick<QueueStore, 'watch'> | undefined
  private readonly gate: Pick<ClaimGate, 'counts'> | undefined
  /** The time handed to the gate: the test's clock, or undefined so that the gate uses its own (Redis TIME). */
  private readonly storeNow: () => number | undefined
  private readonly log: (event: string, fields: Record<string, unknown>) => void
  /** Events whose last counts call failed (logged once). */
  private readonly stockFailing = new Set<string>()
  /** When the rooms were last read from the settings store (ms; undefined: never, the config's rooms are served). */
  private loadedAt: number | undefined
  /** Whether the last look at each room reached the store. */
  private lookOk = true
  private readonly onStoreCall: StoreCallHook

  constructor(
    private readonly store: SettingsStore,
    private readonly seeds: readonly RoomSettings[],
    private readonly refreshMs = 1000,
    private readonly now: () => number = Date.now,
    watched: {
      queue?: Pick<QueueStore, 'watch'>
      gate?: Pick<ClaimGate, 'counts'>
      storeNow?: () => number | undefined
      /** Told when an event's counts cannot be read (once until they can again): its rooms then admit as if unlinked. */
      log?: (event: string, fields: Record<string, unknown>) => void
      /** Told of every store call the reload makes (the metrics' store latency and errors). */
      onStoreCall?: StoreCallHook
    } = {},
  ) {
    this.current = seeds
    this.queue = watched.queue
    this.gate = watched.gate
    this.storeNow = watched.storeNow ?? (() => undefined)
    this.log = watched.log ?? (() => {})
    this.onStoreCall = watched.onStoreCall ?? (() => {})
  }

  /** The room as the last look that reached the store saw it; undefined before one did. */
  seen(room: string): RoomSeen | undefined {
    return this.watched.get(room)?.seen
  }

  /** When the rooms were last read from the settings store (ms), or undefined if they never were. */
  lastLoaded(): number | undefined {
    return this.loadedAt
  }

  /** Whether the last reload's looks at the rooms reached the store. */
  storeAnswered(): boolean {
    return this.lookOk
  }

  /**
   * The wait of whoever joins the back of the line now, in whole seconds, from the last look (no store
   * call): 0 with nobody waiting, null while nothing can be estimated (no look yet, a room not in fifo).
   */
  backOfLine(room: RoomSettings): number | null {
    const s = this.lines.get(room.id)?.snapshot
    if (s === undefined) return null
    if (s.waiting === 0) return 0
    if (room.mode !== 'fifo') return null
    const last = s.admittedAt[s.admittedAt.length - 1]
    const admittedLastMinute = last === undefined ? 0 : Math.max(0, last[1] - admittedBy(s.admittedAt, s.at - 60_000))
    const poll = { arrival: s.at * 1000, position: s.waiting, waiting: s.waiting, admittedLastMinute, now: s.at }
    return estimateWait(this.forecastFor(room), poll, false)?.seconds ?? null
  }

  /** A linked room's event stock, as the last reload saw it; undefined for a room that is not linked. */
  stock(room: string): StockView | undefined {
    return this.stocks.get(room)
  }

  /**
   * Whether an admission issued at `issuedAt` (ms) belongs to a session an admin or the origin has
   * ended since: a token issued after the end is a new admission (the visitor was let in again).
   */
  sessionEnded(room: string, visitor: string, issuedAt: number): boolean {
    const at = this.watched.get(room)?.ended.get(visitor)
    return at !== undefined && issuedAt <= at
  }

  /**
   * A session this edge ended itself (the origin's end-session): refused here at once, before the
   * next look at the store brings it (as it does to every other edge).
   */
  noteEnded(room: string, visitor: string, at: number): void {
    const ended = this.watch(room).ended
    ended.set(visitor, Math.max(at, ended.get(visitor) ?? at))
  }

  /** When the room's life in the store began (ms): admissions issued before it need re-registering. */
  lifeBorn(room: string): number | undefined {
    return this.watched.get(room)?.life?.born
  }

  /**
   * What this edge tells the store with each poll: the life it saw, the active count of that life,
   * and when it last could not reach the store (for a few minutes after; core/admission.ts holdLine).
   */
  hint(room: string): EdgeHint {
    const w = this.watched.get(room)
    const outage = this.storeFailedAt !== undefined && this.now() - this.storeFailedAt < OUTAGE_HINT_MS ? this.storeFailedAt : undefined
    // The same object while nothing in it changed, so that a store can keep its text (the Redis store's JSON).
    const last = this.hints.get(room)
    if (
      last !== undefined &&
      last.epoch === w?.life?.epoch &&
      last.seq === w?.life?.seq &&
      last.active === (w?.active ?? 0) &&
      last.outage === outage
    )
      return last
    const hint: EdgeHint = w?.life ? { epoch: w.life.epoch, active: w.active, seq: w.life.seq } : { active: w?.active ?? 0 }
    if (outage !== undefined) hint.outage = outage
    this.hints.set(room, Object.freeze(hint))
    return hint
  }

  /** A store call failed: the store is away (or this edge cannot reach it). */
  noteStoreFailure(): void {
    this.storeFailedAt = this.now()
  }

  /**
   * What a poll answer said of the room's life: the most polls seen in a life is what tells the store,
   * with this edge's next poll, that it went back in time.
   */
  noteLife(room: string, mark: LifeMark): void {
    const w = this.watch(room)
    // The directory's own copy (never the caller's object): a new one for a new life, else the seq moves on.
    if (w.life === undefined || w.life.epoch !== mark.epoch) w.life = { ...mark }
    else if (mark.seq > w.life.seq) w.life.seq = mark.seq
  }

  private watch(room: string): Watched {
    let w = this.watched.get(room)
    if (w === undefined) {
      w = { ended: new Map(), since: Number.NEGATIVE_INFINITY, life: undefined, active: 0, seen: undefined }
      this.watched.set(room, w)
    }
    return w
  }

  /**
   * The wait of a queued visitor of a room, from what their poll answered (its time is on the store's
   * clock) and the last look at the room: no store call. `polls`: the visitor polls every
   * refreshSeconds (their wait ends on a poll); without (the admin's back of the line), whole seconds.
   */
  estimate(room: RoomSettings, poll: QueuedPoll, polls = true): WaitEstimate | null {
    this.storeOffset = poll.now - this.now()
    return estimateWait(this.forecastFor(room, poll.now), poll, polls)
  }

  /** The forecast of a room's line from the last look, worked out once per look and settings (`at`: store ms, without a look). */
  private forecastFor(room: RoomSettings, at = this.now() + this.storeOffset): LineForecast {
    const line = this.lines.get(room.id)
    let cached = this.forecasts.get(room.id)
    // The same settings object has the same limits: the key is only worked out when the room was reloaded.
    if (cached !== undefined && cached.line === line && cached.room !== room && cached.limits === forecastKey(room)) cached.room = room
    if (cached === undefined || cached.line !== line || cached.room !== room) {
      cached = { line, room, limits: forecastKey(room), forecast: forecastLine(line?.snapshot ?? emptySnapshot(at), room) }
      this.forecasts.set(room.id, cached)
    }
    return cached.forecast
  }

  /** Runs `task` with every reload (once a second at most); its failure is its own business. */
  alsoOnReload(task: () => Promise<void>): void {
    this.tasks.push(task)
  }

  /** Loads once; call before serving. */
  async start(): Promise<void> {
    await this.reload()
  }

  rooms(): readonly RoomSettings[] {
    const since = this.now() - this.reloadedAt
    if (since >= this.refreshMs && (this.loading === undefined || since >= STUCK_PERIODS * this.refreshMs)) {
      if (this.loading !== undefined) this.log('reload_stuck', { sinceMs: since })
      const loading = this.reload().finally(() => {
        if (this.loading === loading) this.loading = undefined
      })
      this.loading = loading
    }
    return this.current
  }

  /** Resolves when a reload that rooms() started has finished. */
  async settled(): Promise<void> {
    await this.loading
  }

  /** The reload in progress, if any (a Worker hands it to ctx.waitUntil). */
  pending(): Promise<void> | undefined {
    return this.loading
  }

  get(id: string): RoomSettings | undefined {
    return this.rooms().find((r) => r.id === id)
  }

  async reload(): Promise<void> {
    // Reloads are a period apart from start to start: a slow one (a loaded edge, a busy store) does
    // not push the next one later. The stock, which stops admissions when an event sells out, is read
    // alongside the settings, for the rooms as last loaded (a room newly linked is read from the next
    // reload on); on the first load, after them.
    this.reloadedAt = this.now()
    const generation = ++this.generation
    const stock = this.current.length > 0 ? this.reloadStock(this.current, generation) : undefined
    try {
      const stored = (await this.store.list()).map((r) => r.settings)
      const missing = this.seeds.filter((seed) => !stored.some((r) => r.id === seed.id))
      if (missing.length > 0) await this.store.seed(missing)
      if (generation === this.generation) {
        this.current = [...stored, ...missing]
        this.loadedAt = this.now()
      }
    } catch {
      // Keep serving the last known settings while the store is away.
    }
    await Promise.all([
      ...this.current.map((room) => this.reloadEnded(room, generation)),
      // A room's separate lane is a line of its own (core/access.ts): watched the same way.
      ...this.current.filter(hasSeparateLane).map((room) => this.reloadEnded(separateLane(room), generation)),
      stock ?? this.reloadStock(this.current, generation),
      ...this.tasks.map((task) => task().catch(() => {})),
    ])
  }

  /** The stock of every event a room is linked to: one counts call an event; unknown if it fails. */
  private async reloadStock(rooms: readonly RoomSettings[], generation: number): Promise<void> {
    const gate = this.gate
    const events = [...new Set(rooms.flatMap((r) => (r.event === null ? [] : [r.event])))]
    const at = this.now()
    const counts = new Map(
      await Promise.all(
        events.map(async (event) => {
          if (gate === undefined) return [event, undefined] as const
          const started = performance.now()
          try {
            const counts = await gate.counts(event, this.storeNow())
            this.onStoreCall('gate_counts', (performance.now() - started) / 1000, true)
            this.stockFailing.delete(event)
            return [event, counts] as const
          } catch (err) {
            this.onStoreCall('gate_counts', (performance.now() - started) / 1000, false)
            // Never stop a sale on a missing count: unknown, as if the room were not linked.
            if (!this.stockFailing.has(event))
              this.log('stock_unavailable', { event, message: err instanceof Error ? err.message : 'error' })
            this.stockFailing.add(event)
            return [event, undefined] as const
          }
        }),
      ),
    )
    if (generation !== this.generation) return
    const stocks = new Map<string, StockView>()
    for (const r of rooms) if (r.event !== null) stocks.set(r.id, { event: r.event, counts: counts.get(r.event), at })
    this.stocks = stocks
  }

  /** Watches a room: the sessions ended since the last look (forgetting those no token can outlive), its life, its active count. */
  private async reloadEnded(room: RoomSettings, generation: number): Promise<void> {
    if (this.queue === undefined) return
    const w = this.watch(room.id)
    const started = performance.now()
    try {
      const line = this.lines.get(room.id)
      const seen = await this.queue.watch(room.id, w.since, undefined, lookFor(line))
      this.onStoreCall('watch', (performance.now() - started) / 1000, true)
      this.lookOk = true
      w.seen = { waiting: seen.waiting, active: seen.active, admitted: seen.admitted, abandoned: seen.abandoned, at: this.now() }
      for (const e of seen.ended) {
        w.ended.set(e.visitor, Math.max(e.at, w.ended.get(e.visitor) ?? e.at))
        if (e.at > w.since) w.since = e.at
      }
      if (generation !== this.generation) return
      this.lines.set(room.id, observeLine(line, seen, this.now() + this.storeOffset, room))
      // A store that forgot the room shows no life until its next poll: the edge keeps the life and the
      // active count it saw, which that poll tells the store (hint), so that it can recover and reserve.
      if (seen.life !== null) {
        this.noteLife(room.id, seen.life)
        w.active = seen.active
      }
    } catch {
      // The store is away: keep what is known; admitted visitors keep working meanwhile.
      this.onStoreCall('watch', (performance.now() - started) / 1000, false)
      this.lookOk = false
      this.noteStoreFailure()
    }
    const oldest = this.now() - room.sessionDurationSeconds * 1000 - ENDED_GRACE_MS
    for (const [visitor, at] of w.ended) if (at < oldest) w.ended.delete(visitor)
  }
}

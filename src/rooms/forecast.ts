// The wait estimates (core/eta.ts), from what each look at a room brings (the line, the pace, sampled
// session expiries, the running totals): estimate() answers each poll from the last look's forecast,
// worked out once per look and settings, so a queued visitor's poll stays one store call.
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
import type { RoomWatch, WatchLook } from '../ports/queue-store.js'

/** The settings a forecast depends on. */
function forecastKey(room: RoomSettings): string {
  return `${room.totalActiveUsers}|${room.newUsersPerMinute}|${room.sessionDurationSeconds}|${room.refreshSeconds}`
}

export class RoomForecasts {
  /** Per room: the looks at its line so far, and the forecast from the last one (for the settings it was made with). */
  private readonly lines = new Map<string, LineObservation>()
  private readonly forecasts = new Map<
    string,
    { line: LineObservation | undefined; room: RoomSettings; limits: string; forecast: LineForecast }
  >()
  /** The store's clock less this edge's, as the last poll showed it: looks are timed on the store's clock. */
  private storeOffset = 0

  constructor(private readonly now: () => number) {}

  /** What the next look at a room should bring back for the estimates. */
  lookFor(room: string): WatchLook {
    return lookFor(this.lines.get(room))
  }

  /** A look at the room reached the store: its line observed, on the store's clock. */
  observe(room: RoomSettings, seen: RoomWatch): void {
    this.lines.set(room.id, observeLine(this.lines.get(room.id), seen, this.now() + this.storeOffset, room))
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
}

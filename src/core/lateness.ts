// How late this edge serves its waiting visitors' polls. A visitor loses their place after
// abandonAfter of silence, and silence is measured where polls are served: between the store's answer
// to one poll and the edge's reading of the next. An edge that falls behind (an opening's burst on a
// starved machine) adds its own delay to every visitor's silence, and without this a visitor who kept
// polling on time would lose their place to the edge's lateness, not their own.
//
// Each queue token says when the store answered the poll that signed it (its expiry less abandonAfter),
// and the queue page polls when that answer told it to (core/polling.ts nextPollMs). So each poll shows
// how late it is served: the time now less the time its page was told to poll. One visitor who was
// away looks late too; the whole edge being late shows in most of its polls at once. The edge's
// lateness is the median of the polls it served in the last second, in whole steps, at most
// abandonAfter (a lateness past that is an edge that is down, not late). The edge reads tokens that
// much past their expiry (http/visit.ts), and tells the store (EdgeHint.late), whose sweep then drops
// nobody for a silence that lateness could explain (core/admission.ts). Those who get a bad edge's
// median up can delay the drop of visitors who left by abandonAfter at the most, and move nobody.
import { nextPollMs } from './polling.js'

/** Polls kept to take the median of. */
export const LATE_SAMPLES = 63
/** Only polls served in the last this many ms count. */
export const LATE_WINDOW_MS = 1000
/** Fewer polls than this in the window say nothing (lateness 0): a quiet edge is not a late one. */
export const LATE_MIN_SAMPLES = 5
/** Lateness is counted in whole steps of this many ms, so that what the edge tells the store changes seldom. */
export const LATE_STEP_MS = 250
/** The median is taken again at most this often. */
const RECOMPUTE_MS = 100

/**
 * How late a poll is served, ms: `nowMs` less when its page was told to poll, from its queue token
 * (`arrivalUs`, and `expiresMs`: when the store answered the poll that signed it, plus abandonAfter).
 * About 0 for a page that keeps to the schedule at an edge that keeps up; negative for an early poll.
 */
export function pollLateness(nowMs: number, arrivalUs: number, expiresMs: number, abandonAfterMs: number, refreshMs: number): number {
  const answeredAt = expiresMs - abandonAfterMs
  return nowMs - (answeredAt + nextPollMs(arrivalUs, answeredAt, refreshMs))
}

/** The median of the lateness of the polls served lately (a ring of the last LATE_SAMPLES). */
export class Lateness {
  private readonly at = new Float64Array(LATE_SAMPLES)
  private readonly ms = new Float64Array(LATE_SAMPLES)
  private readonly scratch = new Float64Array(LATE_SAMPLES)
  private next = 0
  private kept = 0
  private computedAt = Number.NEGATIVE_INFINITY
  private value = 0

  /** A poll served at `nowMs` was `lateMs` late. */
  note(nowMs: number, lateMs: number): void {
    this.at[this.next] = nowMs
    this.ms[this.next] = lateMs
    this.next = (this.next + 1) % LATE_SAMPLES
    if (this.kept < LATE_SAMPLES) this.kept++
  }

  /** The edge's lateness now, ms: a whole number of LATE_STEP_MS, 0 when the polls lately say nothing. */
  current(nowMs: number): number {
    if (nowMs - this.computedAt < RECOMPUTE_MS && nowMs >= this.computedAt) return this.value
    this.computedAt = nowMs
    let n = 0
    for (let i = 0; i < this.kept; i++) if (nowMs - (this.at[i] as number) <= LATE_WINDOW_MS) this.scratch[n++] = this.ms[i] as number
    if (n < LATE_MIN_SAMPLES) {
      this.value = 0
      return 0
    }
    const lately = this.scratch.subarray(0, n).sort()
    const median = n % 2 === 1 ? (lately[(n - 1) / 2] as number) : ((lately[n / 2 - 1] as number) + (lately[n / 2] as number)) / 2
    this.value = median > 0 ? Math.floor(median / LATE_STEP_MS) * LATE_STEP_MS : 0
    return this.value
  }
}

/** How often the runtime ticks Stalls (Node: a timer; the Worker has none between requests). */
export const STALL_TICK_MS = 250
/** A stall shorter than this is not one (a busy turn of the event loop). */
export const STALL_MIN_MS = 1000

/** A stall the edge noticed: when it began (its id: one stall, one outage for the store) and how long it was, ms. */
export interface Stall {
  at: number
  ms: number
}

/**
 * How long a stall must be to matter to a room: a visitor polls at most 1.5 refreshes apart, and a
 * stall as long as what is left of abandonAfter after that could make them look silent. Half of it,
 * for the jitter of their timers and of the edge's lateness, and never under STALL_MIN_MS.
 */
export function stallMattersMs(abandonAfterMs: number, refreshMs: number): number {
  return Math.max(STALL_MIN_MS, (abandonAfterMs - 1.5 * refreshMs) / 2)
}

/**
 * Stalls of the edge itself: its event loop held up (a long pause, a starved or throttled CPU). Every
 * poll that waited through one reaches the store that much later at once, and the lateness median,
 * which follows lateness that grows, cannot cover it in time. The runtime ticks this every
 * STALL_TICK_MS; a request served after a silent stretch notices the stall too, before the timer
 * does. The edge tells the store of a stall that matters to a room as an outage (EdgeHint.outage,
 * holdLine in core/admission.ts): the line is held for 1.5 refreshes, nobody dropped or admitted and
 * admissions about to run out kept, until every visitor it held up is seen again.
 */
export class Stalls {
  private lastTick: number | undefined
  private last: Stall | undefined

  /** The runtime's timer. */
  tick(nowMs: number): void {
    this.see(nowMs)
    this.lastTick = nowMs
  }

  /** The latest stall noticed by now, a silent stretch since the last tick included; undefined before any. */
  latest(nowMs: number): Stall | undefined {
    this.see(nowMs)
    return this.last
  }

  private see(nowMs: number): void {
    if (this.lastTick === undefined) return
    const ms = nowMs - this.lastTick - STALL_TICK_MS
    if (ms < STALL_MIN_MS) return
    // The same stall seen again (a request, then the timer) keeps its id and takes its full length.
    if (this.last?.at === this.lastTick) this.last.ms = Math.max(this.last.ms, ms)
    else this.last = { at: this.lastTick, ms }
  }
}

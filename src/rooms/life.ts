// Each room's life in the store as this edge saw it (core/admission.ts LifeMark: when the store began
// the room, and the most polls seen in that life), its active count, and when this edge last failed to
// reach the store: what the edge tells the store with every poll (hint), so that a store that forgot a
// room notices within a second, recovers the line and reserves the sessions it had; and how late this
// edge serves its polls (core/lateness.ts), so that nobody is dropped for the edge's own delay.
import type { EdgeHint, LifeMark } from '../core/admission.js'
import { Lateness, Stalls } from '../core/lateness.js'

/** How long after a failed store call the edge tells the store of it (EdgeHint.outage). */
const OUTAGE_HINT_MS = 5 * 60_000

interface Life {
  mark: LifeMark | undefined
  active: number
}

export class RoomLives {
  private readonly lives = new Map<string, Life>()
  /** The last hint given for each room (hint()). */
  private readonly hints = new Map<string, EdgeHint>()
  /** When this edge last failed to reach the store (ms), told to the store for OUTAGE_HINT_MS after (hint). */
  private storeFailedAt: number | undefined
  /** How late this edge serves its polls, all rooms together (one event loop, or one isolate). */
  private readonly lateness = new Lateness()
  /** Stalls of this edge's event loop, when the runtime ticks them (Node). */
  private readonly stalls = new Stalls()

  constructor(private readonly now: () => number) {}

  /** When the room's life in the store began (ms): admissions issued before it need re-registering. */
  born(room: string): number | undefined {
    return this.lives.get(room)?.mark?.born
  }

  /**
   * What a poll answer (or a look) said of the room's life: the most polls seen in a life is what tells
   * the store, with this edge's next poll, that it went back in time.
   */
  note(room: string, mark: LifeMark): void {
    const life = this.life(room)
    // Its own copy (never the caller's object): a new one for a new life, else the seq moves on.
    if (life.mark === undefined || life.mark.epoch !== mark.epoch) life.mark = { ...mark }
    else if (mark.seq > life.mark.seq) life.mark.seq = mark.seq
  }

  /** A look saw the room's life and its active count. */
  noteLook(room: string, mark: LifeMark, active: number): void {
    this.note(room, mark)
    this.life(room).active = active
  }

  /** A store call failed: the store is away (or this edge cannot reach it). */
  noteStoreFailure(): void {
    this.storeFailedAt = this.now()
  }

  /** A poll served now was this late (core/lateness.ts pollLateness). */
  noteLate(lateMs: number): void {
    this.lateness.note(this.now(), lateMs)
  }

  /** How late this edge serves its polls now, ms (0 while it keeps up). */
  late(): number {
    return this.lateness.current(this.now())
  }

  /** The runtime's timer, every STALL_TICK_MS (Node; core/lateness.ts Stalls). */
  tickStalls(): void {
    this.stalls.tick(this.now())
  }

  /**
   * What this edge tells the store with each poll: the life it saw, the active count of that life,
   * when it last could not reach the store or stalled for at least `stallMs` (for a few minutes after;
   * core/admission.ts holdLine), and how late it serves polls, while it does (lateSlack).
   */
  hint(room: string, stallMs = Number.POSITIVE_INFINITY): EdgeHint {
    const life = this.lives.get(room)
    const mark = life?.mark
    const active = life?.active ?? 0
    const now = this.now()
    const stall = this.stalls.latest(now)
    const stalled = stall !== undefined && stall.ms >= stallMs ? stall.at : undefined
    const away = Math.max(this.storeFailedAt ?? Number.NEGATIVE_INFINITY, stalled ?? Number.NEGATIVE_INFINITY)
    const outage = away > Number.NEGATIVE_INFINITY && now - away < OUTAGE_HINT_MS ? away : undefined
    // The same object while nothing in it changed, so that a store can keep its text (the Redis store's JSON).
    const last = this.hints.get(room)
    const late = this.lateness.current(now)
    if (
      last !== undefined &&
      last.epoch === mark?.epoch &&
      last.seq === mark?.seq &&
      last.active === active &&
      last.outage === outage &&
      (last.late ?? 0) === late
    )
      return last
    const hint: EdgeHint = mark ? { epoch: mark.epoch, active, seq: mark.seq } : { active }
    if (outage !== undefined) hint.outage = outage
    if (late > 0) hint.late = late
    this.hints.set(room, Object.freeze(hint))
    return hint
  }

  private life(room: string): Life {
    let life = this.lives.get(room)
    if (life === undefined) {
      life = { mark: undefined, active: 0 }
      this.lives.set(room, life)
    }
    return life
  }
}

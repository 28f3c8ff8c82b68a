// The look at each room with every reload (one store call a room): the sessions an admin or the origin
// ended since the last look, so that every edge refuses an ended admission within about a second
// without a store call per request; the room's life and active count (life.ts); the line, for the
// wait estimates (forecast.ts); and the numbers the metrics read (seen).
import type { RoomSettings } from '../core/settings.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { StoreCallHook } from './directory.js'
import type { RoomForecasts } from './forecast.js'
import type { RoomLives } from './life.js'

/** Ended sessions matter while a token issued before the end may still be valid: a session, and a minute. */
const ENDED_GRACE_MS = 60_000

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

interface Watched {
  /** Visitor → when an admin or the origin ended their session (ms). */
  ended: Map<string, number>
  /** How far the store's list of ended sessions was read. */
  since: number
  /** The numbers of the last look that reached the store (the metrics read them). */
  seen: RoomSeen | undefined
}

export class RoomWatcher {
  private readonly watched = new Map<string, Watched>()
  /** Whether the last look at each room reached the store. */
  private lookOk = true

  constructor(
    private readonly queue: Pick<QueueStore, 'watch'> | undefined,
    private readonly lives: RoomLives,
    private readonly forecasts: RoomForecasts,
    private readonly now: () => number,
    private readonly onStoreCall: StoreCallHook,
  ) {}

  /** The room as the last look that reached the store saw it; undefined before one did. */
  seen(room: string): RoomSeen | undefined {
    return this.watched.get(room)?.seen
  }

  /** Whether the last reload's looks at the rooms reached the store. */
  storeAnswered(): boolean {
    return this.lookOk
  }

  /**
   * Whether an admission issued at `issuedAt` (ms) belongs to a session an admin or the origin has
   * ended since: a token issued after the end is a new admission (the visitor was let in again).
   */
  sessionEnded(room: string, visitor: string, issuedAt: number): boolean {
    const at = this.watched.get(room)?.ended.get(visitor)
    return at !== undefined && issuedAt <= at
  }

  /** A session this edge ended itself: refused here at once, before the next look brings it. */
  noteEnded(room: string, visitor: string, at: number): void {
    const ended = this.watch(room).ended
    ended.set(visitor, Math.max(at, ended.get(visitor) ?? at))
  }

  /**
   * Looks at a room: the sessions ended since the last look (forgetting those no token can outlive),
   * its life, its active count, its line. What the look brings for the line and the life is kept only
   * if `current()` still holds when it answers (a reload given up on writes nothing).
   */
  async look(room: RoomSettings, current: () => boolean): Promise<void> {
    if (this.queue === undefined) return
    const w = this.watch(room.id)
    const started = performance.now()
    try {
      const seen = await this.queue.watch(room.id, w.since, undefined, this.forecasts.lookFor(room.id))
      this.onStoreCall('watch', (performance.now() - started) / 1000, true)
      this.lookOk = true
      w.seen = { waiting: seen.waiting, active: seen.active, admitted: seen.admitted, abandoned: seen.abandoned, at: this.now() }
      for (const e of seen.ended) {
        w.ended.set(e.visitor, Math.max(e.at, w.ended.get(e.visitor) ?? e.at))
        if (e.at > w.since) w.since = e.at
      }
      if (!current()) return
      this.forecasts.observe(room, seen)
      // A store that forgot the room shows no life until its next poll: the edge keeps the life and the
      // active count it saw, which that poll tells the store (hint), so that it can recover and reserve.
      if (seen.life !== null) this.lives.noteLook(room.id, seen.life, seen.active)
    } catch {
      // The store is away: keep what is known; admitted visitors keep working meanwhile.
      this.onStoreCall('watch', (performance.now() - started) / 1000, false)
      this.lookOk = false
      this.lives.noteStoreFailure()
    }
    const oldest = this.now() - room.sessionDurationSeconds * 1000 - ENDED_GRACE_MS
    for (const [visitor, at] of w.ended) if (at < oldest) w.ended.delete(visitor)
  }

  private watch(room: string): Watched {
    let w = this.watched.get(room)
    if (w === undefined) {
      w = { ended: new Map(), since: Number.NEGATIVE_INFINITY, seen: undefined }
      this.watched.set(room, w)
    }
    return w
  }
}

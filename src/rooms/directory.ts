// The edge's cached view of the rooms, and what rides on its reload. Reads are synchronous on the hot
// path; the cache reloads from the SettingsStore in the background at most every `refreshMs` (1 s), so
// every edge sees a change within about a second, and a slow or absent store never delays a visitor.
// A reload still unfinished three periods after it began is given up on, and the next request starts
// another. The configured rooms are the floor: a room the store lacks (never seeded, or flushed) is
// served from the config and written back, so a protected path never falls open because Redis forgot.
//
// Each reload also does, one file a job:
//   watch.ts     a look at each room: sessions ended since the last look, the numbers the metrics read
//   life.ts      the room's life in the store and its active count, told to the store with every poll
//   forecast.ts  the line each look brings, for the wait estimates
//   stock.ts     the stock of each event a room sells, which stops a sold-out room
// and other once-a-second work of the edge (alsoOnReload: the refused-joins flush), so that a
// Worker's waitUntil of the reload covers it too. RoomDirectory is the one object the edge holds.
import { hasSeparateLane, separateLane } from '../core/access.js'
import type { EdgeHint, LifeMark } from '../core/admission.js'
import type { QueuedPoll, WaitEstimate } from '../core/eta.js'
import type { RoomSettings } from '../core/settings.js'
import type { StockView } from '../core/stock.js'
import type { ClaimGate } from '../ports/claim-gate.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { SettingsStore } from '../ports/settings-store.js'
import { RoomForecasts } from './forecast.js'
import { RoomLives } from './life.js'
import { RoomStocks } from './stock.js'
import { type RoomSeen, RoomWatcher } from './watch.js'

export type { RoomSeen } from './watch.js'

/**
 * Reload periods after which a reload that has not finished is given up on: the next request starts
 * another. A reload that never settles (seen once in CI on the Worker edge; the cause, perhaps a
 * request cancelled with the store calls it made, is not known) would otherwise stop every later
 * one, and with them the stock that stops a sold-out room.
 */
const STUCK_PERIODS = 3

/** Called with each store call the directory makes: which, how long it took (s), and whether it answered. */
export type StoreCallHook = (call: 'watch' | 'gate_counts', seconds: number, ok: boolean) => void

export class RoomDirectory {
  private current: readonly RoomSettings[]
  /** When the last reload began: reloads are refreshMs apart from start to start. */
  private reloadedAt = Number.NEGATIVE_INFINITY
  private loading: Promise<void> | undefined
  /** Counts reloads begun: one given up on (STUCK_PERIODS) writes nothing if it ever finishes. */
  private generation = 0
  private readonly tasks: (() => Promise<void>)[] = []
  /** When the rooms were last read from the settings store (ms; undefined: never, the config's rooms are served). */
  private loadedAt: number | undefined
  private readonly log: (event: string, fields: Record<string, unknown>) => void
  private readonly lives: RoomLives
  private readonly forecasts: RoomForecasts
  private readonly watcher: RoomWatcher
  private readonly stocks: RoomStocks

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
    this.log = watched.log ?? (() => {})
    const onStoreCall = watched.onStoreCall ?? (() => {})
    this.lives = new RoomLives(now)
    this.forecasts = new RoomForecasts(now)
    this.watcher = new RoomWatcher(watched.queue, this.lives, this.forecasts, now, onStoreCall)
    this.stocks = new RoomStocks(watched.gate, now, watched.storeNow ?? (() => undefined), this.log, onStoreCall)
  }

  // --- the rooms --------------------------------------------------------------------------------

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

  get(id: string): RoomSettings | undefined {
    return this.rooms().find((r) => r.id === id)
  }

  /** When the rooms were last read from the settings store (ms), or undefined if they never were. */
  lastLoaded(): number | undefined {
    return this.loadedAt
  }

  /** Resolves when a reload that rooms() started has finished. */
  async settled(): Promise<void> {
    await this.loading
  }

  /** The reload in progress, if any (a Worker hands it to ctx.waitUntil). */
  pending(): Promise<void> | undefined {
    return this.loading
  }

  /** Runs `task` with every reload (once a second at most); its failure is its own business. */
  alsoOnReload(task: () => Promise<void>): void {
    this.tasks.push(task)
  }

  async reload(): Promise<void> {
    // Reloads are a period apart from start to start: a slow one (a loaded edge, a busy store) does
    // not push the next one later. The stock, which stops admissions when an event sells out, is read
    // alongside the settings, for the rooms as last loaded (a room newly linked is read from the next
    // reload on); on the first load, after them.
    this.reloadedAt = this.now()
    const generation = ++this.generation
    const current = () => generation === this.generation
    const stock = this.current.length > 0 ? this.stocks.reload(this.current, current) : undefined
    try {
      const stored = (await this.store.list()).map((r) => r.settings)
      const missing = this.seeds.filter((seed) => !stored.some((r) => r.id === seed.id))
      if (missing.length > 0) await this.store.seed(missing)
      if (current()) {
        this.current = [...stored, ...missing]
        this.loadedAt = this.now()
      }
    } catch {
      // Keep serving the last known settings while the store is away.
    }
    await Promise.all([
      ...this.current.map((room) => this.watcher.look(room, current)),
      // A room's separate lane is a line of its own (core/access.ts): watched the same way.
      ...this.current.filter(hasSeparateLane).map((room) => this.watcher.look(separateLane(room), current)),
      stock ?? this.stocks.reload(this.current, current),
      ...this.tasks.map((task) => task().catch(() => {})),
    ])
  }

  // --- what the reload keeps (one file a job) ---------------------------------------------------

  /** The room as the last look that reached the store saw it; undefined before one did (watch.ts). */
  seen(room: string): RoomSeen | undefined {
    return this.watcher.seen(room)
  }

  /** Whether the last reload's looks at the rooms reached the store (watch.ts). */
  storeAnswered(): boolean {
    return this.watcher.storeAnswered()
  }

  /** Whether an admission issued at `issuedAt` (ms) belongs to a session ended since (watch.ts). */
  sessionEnded(room: string, visitor: string, issuedAt: number): boolean {
    return this.watcher.sessionEnded(room, visitor, issuedAt)
  }

  /** A session this edge ended itself (the origin's end-session): refused here at once (watch.ts). */
  noteEnded(room: string, visitor: string, at: number): void {
    this.watcher.noteEnded(room, visitor, at)
  }

  /** When the room's life in the store began (ms): admissions issued before it need re-registering (life.ts). */
  lifeBorn(room: string): number | undefined {
    return this.lives.born(room)
  }

  /** What a poll answer said of the room's life (life.ts). */
  noteLife(room: string, mark: LifeMark): void {
    this.lives.note(room, mark)
  }

  /** What this edge tells the store with each poll (life.ts); a stall of `stallMs` or more is an outage. */
  hint(room: string, stallMs?: number): EdgeHint {
    return this.lives.hint(room, stallMs)
  }

  /** The runtime's timer for noticing stalls of this edge (Node, every STALL_TICK_MS; life.ts). */
  tickStalls(): void {
    this.lives.tickStalls()
  }

  /** A store call failed: the store is away (or this edge cannot reach it) (life.ts). */
  noteStoreFailure(): void {
    this.lives.noteStoreFailure()
  }

  /** A poll served now was this late, ms (life.ts, core/lateness.ts). */
  noteLate(lateMs: number): void {
    this.lives.noteLate(lateMs)
  }

  /** How late this edge serves its polls now, ms (life.ts). */
  late(): number {
    return this.lives.late()
  }

  /** The wait of a queued visitor, from their poll and the last look: no store call (forecast.ts). */
  estimate(room: RoomSettings, poll: QueuedPoll, polls = true): WaitEstimate | null {
    return this.forecasts.estimate(room, poll, polls)
  }

  /** The wait of whoever joins the back of the line now, in whole seconds, or null (forecast.ts). */
  backOfLine(room: RoomSettings): number | null {
    return this.forecasts.backOfLine(room)
  }

  /** A linked room's event stock, as the last reload saw it; undefined for a room that is not linked (stock.ts). */
  stock(room: string): StockView | undefined {
    return this.stocks.get(room)
  }
}

// The edge's cached view of the rooms. Reads are synchronous on the hot path; the cache reloads
// from the SettingsStore in the background at most every `refreshMs` (1 s), so every edge sees a
// change within about a second, and a slow or absent store never delays a visitor.
// The configured rooms are the floor: a room the store lacks (never seeded, or flushed) is served
// from the config and written back, so a protected path never falls open because Redis forgot.
import type { RoomSettings } from '../core/settings.js'
import type { SettingsStore } from '../ports/settings-store.js'

export class RoomDirectory {
  private current: readonly RoomSettings[]
  private loadedAt = Number.NEGATIVE_INFINITY
  private loading: Promise<void> | undefined

  constructor(
    private readonly store: SettingsStore,
    private readonly seeds: readonly RoomSettings[],
    private readonly refreshMs = 1000,
    private readonly now: () => number = Date.now,
  ) {
    this.current = seeds
  }

  /** Loads once; call before serving. */
  async start(): Promise<void> {
    await this.reload()
  }

  rooms(): readonly RoomSettings[] {
    if (this.now() - this.loadedAt >= this.refreshMs && this.loading === undefined) {
      this.loading = this.reload().finally(() => {
        this.loading = undefined
      })
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
    try {
      const stored = (await this.store.list()).map((r) => r.settings)
      const missing = this.seeds.filter((seed) => !stored.some((r) => r.id === seed.id))
      if (missing.length > 0) await this.store.seed(missing)
      this.current = [...stored, ...missing]
    } catch {
      // Keep serving the last known settings while the store is away.
    }
    this.loadedAt = this.now()
  }
}

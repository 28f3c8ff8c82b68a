// The edge's cached view of the rooms. Reads are synchronous on the hot path; the cache reloads
// from the SettingsStore in the background at most every `refreshMs` (1 s), so every edge sees a
// change within about a second, and a slow or absent store never delays a visitor.
import type { RoomSettings } from '../core/settings.js'
import type { SettingsStore } from '../ports/settings-store.js'

export class RoomDirectory {
  private current: readonly RoomSettings[] = []
  private loadedAt = Number.NEGATIVE_INFINITY
  private loading: Promise<void> | undefined

  constructor(
    private readonly store: SettingsStore,
    private readonly refreshMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

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

  get(id: string): RoomSettings | undefined {
    return this.rooms().find((r) => r.id === id)
  }

  async reload(): Promise<void> {
    try {
      this.current = await this.store.list()
    } catch {
      // Keep serving the last known settings while the store is away.
    }
    this.loadedAt = this.now()
  }
}

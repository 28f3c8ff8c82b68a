// SettingsStore in process memory, for a single instance with no Redis.
import type { RoomSettings } from '../../core/settings.js'
import type { ReplaceResult, SettingsStore, VersionedRoom } from '../../ports/settings-store.js'

export class MemorySettingsStore implements SettingsStore {
  private readonly rooms = new Map<string, VersionedRoom>()

  async list(): Promise<VersionedRoom[]> {
    return [...this.rooms.values()].sort((a, b) => a.settings.id.localeCompare(b.settings.id))
  }

  async get(id: string): Promise<VersionedRoom | undefined> {
    return this.rooms.get(id)
  }

  async seed(rooms: RoomSettings[]): Promise<void> {
    for (const settings of rooms) if (!this.rooms.has(settings.id)) this.rooms.set(settings.id, { settings, rev: 1 })
  }

  async replace(settings: RoomSettings, expectedRev: number): Promise<ReplaceResult> {
    const current = this.rooms.get(settings.id)
    if ((current?.rev ?? 0) !== expectedRev) return { ok: false, current }
    const rev = expectedRev + 1
    this.rooms.set(settings.id, { settings, rev })
    return { ok: true, rev }
  }
}

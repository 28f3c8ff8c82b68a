// SettingsStore in process memory, for a single instance with no Redis.
import type { RoomSettings } from '../../core/settings.js'
import type { SettingsStore } from '../../ports/settings-store.js'

export class MemorySettingsStore implements SettingsStore {
  private readonly rooms = new Map<string, RoomSettings>()

  async list(): Promise<RoomSettings[]> {
    return [...this.rooms.values()].sort((a, b) => a.id.localeCompare(b.id))
  }

  async seed(rooms: RoomSettings[]): Promise<void> {
    for (const room of rooms) if (!this.rooms.has(room.id)) this.rooms.set(room.id, room)
  }

  async put(room: RoomSettings): Promise<void> {
    this.rooms.set(room.id, room)
  }
}

// The SettingsStore port: rooms and their settings, kept in the store so that every edge shares them.
import type { RoomSettings } from '../core/settings.js'

export interface SettingsStore {
  list(): Promise<RoomSettings[]>
  /** Writes each room that the store does not have yet; rooms already there keep their live settings. */
  seed(rooms: RoomSettings[]): Promise<void>
  /** Replaces one room's settings. */
  put(room: RoomSettings): Promise<void>
}

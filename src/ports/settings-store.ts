// The SettingsStore port: rooms and their settings, kept in the store so that every edge shares
// them. Each room has a revision; a change names the revision it was based on (compare-and-set).
import type { RoomSettings } from '../core/settings.js'

export interface VersionedRoom {
  settings: RoomSettings
  rev: number
}

export type ReplaceResult = { ok: true; rev: number } | { ok: false; current: VersionedRoom | undefined }

export interface SettingsStore {
  list(): Promise<VersionedRoom[]>
  get(id: string): Promise<VersionedRoom | undefined>
  /** Writes each room that the store does not have yet (revision 1); rooms already there keep their live settings. */
  seed(rooms: RoomSettings[]): Promise<void>
  /** Replaces a room's settings only if its revision is still `expectedRev`. */
  replace(settings: RoomSettings, expectedRev: number): Promise<ReplaceResult>
}

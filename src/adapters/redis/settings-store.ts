// SettingsStore on Redis: one hash, field = room id, value = {"rev": n, "settings": {...}}.
// Changes go through settings-cas-1.lua, a compare-and-set on the revision.
import type { Cluster, Redis } from 'ioredis'
import { parseRoomSettings, type RoomSettings } from '../../core/settings.js'
import type { ReplaceResult, SettingsStore, VersionedRoom } from '../../ports/settings-store.js'
import { SETTINGS_KEY } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'
import { casResult, readVersioned } from './versioned.js'

/** A room's entry; undefined when damaged (settings that do not parse too): the other rooms keep working. */
const decode = (id: string, json: string): VersionedRoom | undefined =>
  readVersioned(json, (stored) => ({ rev: stored.rev, settings: parseRoomSettings(stored.settings, `settings[${id}].`) }))

export class RedisSettingsStore implements SettingsStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  async list(): Promise<VersionedRoom[]> {
    const all = await storeCall(() => this.redis.hgetall(SETTINGS_KEY))
    return Object.entries(all)
      .map(([id, json]) => decode(id, json))
      .filter((r): r is VersionedRoom => r !== undefined)
      .sort((a, b) => a.settings.id.localeCompare(b.settings.id))
  }

  async get(id: string): Promise<VersionedRoom | undefined> {
    const json = await storeCall(() => this.redis.hget(SETTINGS_KEY, id))
    return json === null ? undefined : decode(id, json)
  }

  async seed(rooms: RoomSettings[]): Promise<void> {
    if (rooms.length === 0) return
    const pipeline = this.redis.pipeline()
    for (const room of rooms) pipeline.hsetnx(SETTINGS_KEY, room.id, JSON.stringify({ rev: 1, settings: room }))
    await storeCall(async () => replies(await pipeline.exec()))
  }

  async replace(settings: RoomSettings, expectedRev: number): Promise<ReplaceResult> {
    const reply = (await storeCall(() =>
      runScript(this.redis, this.scripts.settingsCas, [SETTINGS_KEY], [settings.id, expectedRev, JSON.stringify(settings)]),
    )) as [number, number | string]
    return casResult(reply, (json) => decode(settings.id, json))
  }
}

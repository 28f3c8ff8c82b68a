// SettingsStore on Redis: one hash, field = room id, value = {"rev": n, "settings": {...}}.
// Changes go through settings-cas-1.lua, a compare-and-set on the revision.
import type { Cluster, Redis } from 'ioredis'
import { parseRoomSettings, type RoomSettings } from '../../core/settings.js'
import type { ReplaceResult, SettingsStore, VersionedRoom } from '../../ports/settings-store.js'
import { SETTINGS_KEY } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'

function decode(id: string, json: string): VersionedRoom | undefined {
  try {
    const stored = JSON.parse(json) as { rev?: unknown; settings?: unknown }
    if (typeof stored.rev !== 'number') return undefined
    return { rev: stored.rev, settings: parseRoomSettings(stored.settings, `settings[${id}].`) }
  } catch {
    // A damaged entry must not take every room down; the rest keep working.
    return undefined
  }
}

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
    if (reply[0] === 1) return { ok: true, rev: Number(reply[1]) }
    return { ok: false, current: reply[1] === '' ? undefined : decode(settings.id, String(reply[1])) }
  }
}

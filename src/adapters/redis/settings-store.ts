// SettingsStore on Redis: one hash, field = room id, value = the room's settings as JSON.
import type { Cluster, Redis } from 'ioredis'
import { AnteroomError } from '../../core/errors.js'
import { parseRoomSettings, type RoomSettings } from '../../core/settings.js'
import type { SettingsStore } from '../../ports/settings-store.js'
import { SETTINGS_KEY } from './keys.js'

export class RedisSettingsStore implements SettingsStore {
  constructor(private readonly redis: Redis | Cluster) {}

  async list(): Promise<RoomSettings[]> {
    let all: Record<string, string>
    try {
      all = await this.redis.hgetall(SETTINGS_KEY)
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
    }
    const rooms: RoomSettings[] = []
    for (const [id, json] of Object.entries(all)) {
      try {
        rooms.push(parseRoomSettings(JSON.parse(json), `settings[${id}].`))
      } catch {
        // A damaged entry must not take every room down; the rest keep working.
      }
    }
    return rooms.sort((a, b) => a.id.localeCompare(b.id))
  }

  async seed(rooms: RoomSettings[]): Promise<void> {
    if (rooms.length === 0) return
    const pipeline = this.redis.pipeline()
    for (const room of rooms) pipeline.hsetnx(SETTINGS_KEY, room.id, JSON.stringify(room))
    await pipeline.exec()
  }

  async put(room: RoomSettings): Promise<void> {
    await this.redis.hset(SETTINGS_KEY, room.id, JSON.stringify(room))
  }
}

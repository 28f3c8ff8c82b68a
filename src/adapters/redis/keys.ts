// The Redis key layout (docs/redis-keys.md). A room's keys share the hash tag {room}, so a room
// lives in one Redis Cluster slot and its scripts can touch all of them.

export function roomKeys(room: string) {
  const p = `anteroom:{${room}}`
  return {
    line: `${p}:q`,
    seen: `${p}:seen`,
    active: `${p}:act`,
    ended: `${p}:ended`,
    admissions: `${p}:adm`,
    stats: `${p}:stat`,
    lastArrival: `${p}:last`,
  }
}

/** One hash of every room's settings, field = room id, value = JSON. */
export const SETTINGS_KEY = 'anteroom:settings'

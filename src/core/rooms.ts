// Which room, if any, protects a request: by host, then by the longest matching path prefix.
import type { RoomSettings } from './settings.js'

function pathMatches(prefix: string, path: string): boolean {
  if (!path.startsWith(prefix)) return false
  return prefix.endsWith('/') || path.length === prefix.length || path[prefix.length] === '/'
}

/** Returns the room protecting host+path, preferring the most specific match. */
export function matchRoom(rooms: readonly RoomSettings[], host: string, path: string): RoomSettings | undefined {
  const bareHost = host.toLowerCase().replace(/:\d+$/, '')
  let best: RoomSettings | undefined
  let bestScore = -1
  for (const room of rooms) {
    if (room.hosts.length > 0 && !room.hosts.includes(bareHost) && !room.hosts.includes(host.toLowerCase())) continue
    let score = room.hosts.length > 0 ? 1 : 0
    if (room.paths.length > 0) {
      const hit = room.paths.filter((p) => pathMatches(p, path)).sort((a, b) => b.length - a.length)[0]
      if (hit === undefined) continue
      score += 2 + hit.length * 2
    }
    if (score > bestScore) {
      best = room
      bestScore = score
    }
  }
  return best
}

// Which room, if any, protects a request. Matching works on a canonical form of the host and on the
// canonical path's key (core/path.ts), so that spellings an origin treats as the same resource
// (%73hop, /SHOP, //shop, /x/../shop, a trailing dot on the host) can never slip past a room.
import type { RoomSettings } from './settings.js'

/** Lower case, without port and trailing dot. */
export function canonicalHost(host: string): string {
  return host.toLowerCase().replace(/:\d*$/, '').replace(/\.$/, '')
}

function prefixMatches(prefix: string, path: string): boolean {
  if (!path.startsWith(prefix)) return false
  return prefix.endsWith('/') || path.length === prefix.length || path[prefix.length] === '/'
}

/**
 * Whether the edge serves this host at all. Once any room names hosts, only the hosts that rooms
 * name are served: every host reaches the same origin, so an unknown Host must not bypass a room.
 */
export function hostServed(rooms: readonly RoomSettings[], host: string): boolean {
  let named = false
  for (const r of rooms) {
    if (r.hosts.length === 0) continue
    if (r.hosts.includes(host)) return true
    named = true
  }
  return !named
}

/** The room protecting host+path (both canonical), preferring the most specific match. */
export function matchRoom(rooms: readonly RoomSettings[], host: string, path: string): RoomSettings | undefined {
  let best: RoomSettings | undefined
  let bestScore = -1
  for (const room of rooms) {
    if (room.hosts.length > 0 && !room.hosts.includes(host)) continue
    let score = room.hosts.length > 0 ? 1 : 0
    if (room.paths.length > 0) {
      let longest = -1
      for (const p of room.paths) if (prefixMatches(p.toLowerCase(), path) && p.length > longest) longest = p.length
      if (longest < 0) continue
      score += 2 + longest * 2
    }
    if (score > bestScore) {
      best = room
      bestScore = score
    }
  }
  return best
}

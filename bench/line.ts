// A line of waiting visitors for the bench: written straight into Redis as the poll script leaves it
// (the keys from src/adapters/redis/keys.ts, the layout of docs/redis-keys.md), and the queue-token
// cookies of visitors in it.
import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { jsMac } from '../src/adapters/js/mac.js'
import { roomKeys, seenBucketOf } from '../src/adapters/redis/keys.js'
import { QueueTokens } from '../src/core/queue-token.js'
import { queueCookieName } from '../src/http/cookies.js'

/** The queue secret of every edge the bench starts, so that its cookies are theirs. */
export const BENCH_SECRET = 'bench-queue-secret-0123456789abcdefghijklmnopqrstuvwxyz'

export const DAY_MS = 86_400_000

/**
 * A room where every poll takes the queued path: one session already holds its only slot (see
 * holdTheSlot), and nobody is dropped as abandoned within an hour.
 */
export const QUEUE_ROOM = {
  id: 'line',
  paths: ['/'],
  mode: 'fifo',
  totalActiveUsers: 1,
  newUsersPerMinute: 1,
  sessionDurationSeconds: 600,
  refreshSeconds: 20,
  abandonAfterSeconds: 3600,
}

/** n random 16-character visitor ids, [A-Za-z0-9_-] (base64url of 12 random bytes, as the edge makes). */
export function visitorIds(n: number): string[] {
  const bytes = randomBytes(12 * n)
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) out[i] = bytes.toString('base64url', 12 * i, 12 * i + 12)
  return out
}

/** Cookie headers (`anteroom_q_<room>=...`) with queue tokens signed by BENCH_SECRET. */
export async function queueCookies(room: string, visitors: string[], arrivals: number[], expires: number): Promise<string[]> {
  const tokens = new QueueTokens(jsMac(BENCH_SECRET))
  const name = queueCookieName(room)
  const out: string[] = []
  for (let i = 0; i < visitors.length; i++) {
    out.push(`${name}=${await tokens.sign({ room, visitor: visitors[i] as string, arrival: arrivals[i] as number, expires })}`)
  }
  return out
}

/** Puts one far-future session in the room's active set, so the room's only slot is taken. */
export async function holdTheSlot(redis: Redis, room: string): Promise<void> {
  await redis.zadd(roomKeys(room).active, Date.now() + 7 * DAY_MS, 'bench-slot-holder')
}

/**
 * Adds n visitors to a room's line directly, behind those in it, as polls would have left it: `line` visitor -> arrival µs, and each
 * visitor's seen bucket (a small hash visitor -> last poll ms = now) with its entry in `sweep` (when
 * the bucket goes stale: now + abandonAfterSeconds), 1,000 members per command, 50 commands per
 * pipeline. Returns queue-token cookies for `cookies` of those visitors, spread evenly over the line.
 * Only the cookies leave this function: a million ids kept alive in the load generator's heap would
 * slow its garbage collector.
 */
export async function fillLine(
  redis: Redis,
  room: { id: string; abandonAfterSeconds: number },
  n: number,
  cookies: number,
  expires: number,
): Promise<string[]> {
  const k = roomKeys(room.id)
  const before = await redis.zcard(k.line)
  const now = Date.now()
  const visitors = visitorIds(n)
  const arrivals = visitors.map((_, i) => (now - n - 1000 + i) * 1000)
  const CHUNK = 1000
  let pipe = redis.pipeline()
  let queued = 0
  const flush = async () => {
    const results = (await pipe.exec()) ?? []
    for (const [err] of results) if (err) throw err
    pipe = redis.pipeline()
    queued = 0
  }
  const buckets = new Map<number, (string | number)[]>()
  for (let s = 0; s < n; s += CHUNK) {
    const line: (string | number)[] = []
    for (let i = s; i < Math.min(n, s + CHUNK); i++) {
      const v = visitors[i] as string
      line.push(arrivals[i] as number, v)
      const b = seenBucketOf(v)
      let fields = buckets.get(b)
      if (fields === undefined) buckets.set(b, (fields = []))
      fields.push(v, now)
    }
    pipe.call('ZADD', k.line, ...line)
    if (++queued >= 50) await flush()
  }
  for (const [b, fields] of buckets) {
    pipe.call('HSET', `${k.seenPrefix}${b}`, ...fields)
    pipe.call('ZADD', k.sweep, now + room.abandonAfterSeconds * 1000, b)
    if (++queued >= 50) await flush()
  }
  await flush()
  const inLine = await redis.zcard(k.line)
  if (inLine !== before + n) throw new Error(`filling ${room.id}: expected ${before + n} in line, got ${inLine}`)
  const picked = Array.from({ length: cookies }, (_, i) => Math.floor(((i + 0.5) * n) / cookies))
  return queueCookies(
    room.id,
    picked.map((i) => visitors[i] as string),
    picked.map((i) => arrivals[i] as number),
    expires,
  )
}

/** The first poll admits, and a one-hour session is not renewed during the bench. */
export const OPEN_ROOM = {
  id: 'open',
  paths: ['/'],
  mode: 'fifo',
  totalActiveUsers: 10_000_000,
  newUsersPerMinute: 6_000_000,
  sessionDurationSeconds: 3600,
  refreshSeconds: 20,
  abandonAfterSeconds: 3600,
}

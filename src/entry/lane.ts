// The ordered lane's allocators (src/booking/lane/allocator.ts) as a process of their own: `npm run lane`.
// One allocator per event named in ANTEROOM_LANE_EVENTS (comma-separated), on ANTEROOM_DATABASE_URL
// (PostgreSQL) and ANTEROOM_REDIS_URL. Run several for safety: each event's lease lets one act at a time,
// and another takes the event over (with its pending claims) once a stopped one's lease runs out.
// buildAllocators is also what the bundled origin (./booking.ts) runs in its own process.
import { pathToFileURL } from 'node:url'
import { MemoryClaimGate } from '../adapters/memory/claim-gate.js'
import type { Db } from '../adapters/postgres/db.js'
import { PostgresLaneStore } from '../adapters/postgres/lane-store.js'
import { postgresDb } from '../adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../adapters/postgres/seat-store.js'
import { RedisClaimLane } from '../adapters/redis/claim-lane.js'
import { connectRedis, type RedisClient } from '../adapters/redis/connect.js'
import { luaScripts } from '../adapters/redis/scripts.js'
import { Allocator, type AllocatorOptions } from '../booking/lane/allocator.js'
import { jsonLog } from '../core/log.js'

export interface AllocatorsOptions {
  events: readonly string[]
  db: Db
  redis: RedisClient
  /** Anything else an allocator takes (lease, batch size, hooks). */
  more?: Partial<AllocatorOptions>
  log?: (event: string, fields: Record<string, unknown>) => void
}

/** One started allocator per event; stop() stops them all and lets their leases go. */
export async function buildAllocators(o: AllocatorsOptions) {
  const shared = new RedisClaimLane(o.redis, luaScripts())
  const store = new PostgresSeatStore(o.db)
  const batches = new PostgresLaneStore(o.db)
  // Each allocator reads on a connection of its own: a blocking read holds up its connection.
  const lanes = await Promise.all(o.events.map(() => shared.dedicated()))
  const allocators = o.events.map((event, i) =>
    new Allocator({
      event,
      lane: (lanes[i] as Awaited<ReturnType<typeof shared.dedicated>>).lane,
      store,
      batches,
      stock: new MemoryClaimGate(o.more?.clock),
      log: o.log,
      ...o.more,
    }).start(),
  )
  return {
    allocators,
    async stop() {
      await Promise.all(allocators.map((a) => a.stop()))
      for (const l of lanes) l.close()
    },
  }
}

/** The environment a lane process reads; a missing or wrong one is named. */
export function laneEnv(env: NodeJS.ProcessEnv): { databaseUrl: string; redisUrl: string; events: string[] } {
  const need = (name: string) => {
    const v = env[name]?.trim()
    if (!v) throw new TypeError(`${name} is required for the lane's allocators`)
    return v
  }
  const events = need('ANTEROOM_LANE_EVENTS')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  if (events.length === 0) throw new TypeError('ANTEROOM_LANE_EVENTS must name at least one event')
  return { databaseUrl: need('ANTEROOM_DATABASE_URL'), redisUrl: need('ANTEROOM_REDIS_URL'), events }
}

async function main(): Promise<void> {
  const log = jsonLog({ level: 'info', write: (line) => process.stdout.write(line), secrets: [] })
  const env = laneEnv(process.env)
  const db = postgresDb(env.databaseUrl)
  const redis = connectRedis(env.redisUrl, (err) => log('lane_redis_error', { message: err.message }))
  const running = await buildAllocators({ events: env.events, db, redis, log })
  log('lane_allocators', { events: env.events })
  const stop = async () => {
    await running.stop()
    redis.disconnect()
    await db.close()
    process.exit(0)
  }
  process.once('SIGTERM', () => void stop())
  process.once('SIGINT', () => void stop())
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}

// An allocator process for the crash tests (test/lane-crash.test.ts): the lane's allocators as
// src/entry/lane.ts builds them, which stop for good at a batch's transaction when LANE_TEST_STOP says
// so ("before-commit": before it is written, "after-commit": written, not yet answered or acknowledged),
// saying so on stdout ("stopped <where> <claims>"), and wait there to be killed.
import { postgresDb } from '../../src/adapters/postgres/postgres-js.js'
import { connectRedis, whenReady } from '../../src/adapters/redis/connect.js'
import { buildAllocators, laneEnv } from '../../src/entry/lane.js'
import type { LaneClaim } from '../../src/ports/claim-lane.js'

const env = laneEnv(process.env)
const where = process.env.LANE_TEST_STOP
const stopHere = (at: string) => async (claims: LaneClaim[]) => {
  if (at !== where || claims.length === 0) return
  process.stdout.write(`stopped ${at} ${claims.length}\n`)
  await new Promise(() => {})
}
const redis = connectRedis(env.redisUrl)
await whenReady(redis, 5000)
await buildAllocators({
  events: env.events,
  db: postgresDb(env.databaseUrl, { max: 2 }),
  redis,
  more: {
    leaseMs: Number(process.env.LANE_TEST_LEASE_MS ?? 3000),
    batchSize: Number(process.env.LANE_TEST_BATCH ?? 256),
    blockMs: 50,
    hooks: { beforeCommit: stopHere('before-commit'), afterCommit: stopHere('after-commit') },
  },
})
process.stdout.write('started\n')

// Measurement 5: Redis memory per waiting visitor, after 100,000 visitors joined one room through the
// poll script (RedisQueueStore, as an edge calls it).
//   Baseline: none; used_memory before and after, on a Redis holding nothing else.
//   Target: at most 200 bytes per waiting visitor.
import { Redis } from 'ioredis'
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { RedisQueueStore } from '../../src/adapters/redis/queue-store.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import { newVisitorId } from '../../src/core/queue-token.js'
import { admissionLimits, parseRoomSettings } from '../../src/core/settings.js'
import type { EdgeBench } from '../edge.js'
import { fmtInt, log, type Measured, memoryInfo, sleep } from '../lib.js'
import { holdTheSlot, QUEUE_ROOM } from '../line.js'

const TARGET_BYTES = 200
const VISITORS = 100_000
/** Polls sent at once. */
const BATCH = 1000

export async function measureRedisMemory(b: Pick<EdgeBench, 'redis' | 'redisServer'>): Promise<Measured> {
  const redis = b.redis
  log(`memory: ${fmtInt(VISITORS)} visitors join through the poll script`)
  await redis.flushall()
  const room = parseRoomSettings({ ...QUEUE_ROOM, id: 'mem' })
  const limits = admissionLimits(room)
  const store = new RedisQueueStore(new Redis(b.redisServer.url), luaScripts())
  // Load the script and let Lua allocate what it needs, in a scratch room, before the baseline.
  await store.poll({ room: 'scratch', visitor: newVisitorId(), limits })
  await redis.del(...Object.values(roomKeys('scratch')))
  await holdTheSlot(redis, room.id)
  await sleep(200)
  const before = await memoryInfo(redis)
  let queued = 0
  for (let s = 0; s < VISITORS; s += BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(BATCH, VISITORS - s) }, () => store.poll({ room: room.id, visitor: newVisitorId(), limits })),
    )
    queued += batch.filter((r) => r.state === 'queued').length
  }
  await store.close()
  await sleep(300)
  const after = await memoryInfo(redis)
  const keys = roomKeys(room.id)
  const seenKeys = await redis.keys(`${keys.seenPrefix}*`)
  const keyUsage = async (key: string) => Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'))
  let seen = 0
  let seenBytes = 0
  for (const key of seenKeys) {
    seen += await redis.hlen(key)
    seenBytes += await keyUsage(key)
  }
  const inLine = await redis.zcard(keys.line)
  if (queued !== VISITORS || inLine !== VISITORS || seen !== VISITORS) {
    throw new Error(`memory: expected ${VISITORS} queued, got ${queued} queued, ${inLine} in line, ${seen} seen`)
  }
  const lineBytes = await keyUsage(keys.line)
  const encoding = await redis.call('OBJECT', 'ENCODING', keys.line)
  const usedDelta = (after.used_memory as number) - (before.used_memory as number)
  const bytesPerVisitor = usedDelta / VISITORS
  return {
    rows: [
      {
        id: 'redis_bytes_per_waiting_visitor',
        measurement: '5. Redis memory per waiting visitor',
        value: `${bytesPerVisitor.toFixed(0)} B`,
        baseline: '-',
        ratio: '-',
        target: `<= ${TARGET_BYTES} B`,
        met: bytesPerVisitor <= TARGET_BYTES,
      },
    ],
    notes: [
      `memory: used_memory +${fmtInt(usedDelta)} B for ${fmtInt(VISITORS)} visitors; MEMORY USAGE line ${fmtInt(lineBytes)} B ` +
        `(${(lineBytes / VISITORS).toFixed(0)} B/member), seen buckets ${fmtInt(seenBytes)} B in ${seenKeys.length} hashes (${(seenBytes / VISITORS).toFixed(0)} B/visitor), ` +
        `encoding ${String(encoding)}; used_memory_dataset +${fmtInt((after.used_memory_dataset ?? 0) - (before.used_memory_dataset ?? 0))} B`,
    ],
    warnings: [],
    results: {
      memory: {
        visitors: VISITORS,
        usedMemoryDelta: usedDelta,
        bytesPerVisitor,
        lineKeyBytes: lineBytes,
        seenKeyBytes: seenBytes,
        encoding,
        before,
        after,
      },
    },
  }
}

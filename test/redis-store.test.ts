import { Redis } from 'ioredis'
import { afterAll, inject } from 'vitest'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { queueStoreContract } from './contract/queue-store.js'

const clients: Redis[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})

queueStoreContract('redis', async () => {
  const redis = new Redis(inject('redisUrl'))
  clients.push(redis)
  return {
    store: new RedisQueueStore(redis, luaScripts()),
    async forget() {
      // Drop every line key (as a flush or a failover to an empty replica would); keep other files' keys.
      const keys = await redis.keys('anteroom:{c*')
      if (keys.length > 0) await redis.del(...keys)
    },
  }
})

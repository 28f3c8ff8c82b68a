// Real Redis stores for the Worker, on one ioredis client (nodejs_compat). Used by the StoreRelay
// Durable Object, which keeps the client, and by the per-call Dispatch, which does not.
import type { Redis } from 'ioredis'
import { RedisAdminSessions } from '../src/adapters/redis/admin-sessions.js'
import { RedisAuditLog } from '../src/adapters/redis/audit-log.js'
import { connectRedis, whenReady } from '../src/adapters/redis/connect.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { RedisSettingsStore } from '../src/adapters/redis/settings-store.js'
import { LUA } from './bundled.js'
import { type Call, type Dispatch, type Outcome, runCall, type Stores } from './remote-stores.js'

export interface RedisStores extends Stores {
  redis: Redis
}

/** Connection errors go to the Worker's log (the message only: it names host and port, never the password). */
function logRedisError(err: Error): void {
  console.log(JSON.stringify({ event: 'redis_error', message: err.message }))
}

export function redisStores(url: string): RedisStores {
  const redis = connectRedis(url, logRedisError)
  return {
    redis,
    queue: new RedisQueueStore(redis, LUA),
    settings: new RedisSettingsStore(redis, LUA),
    audit: new RedisAuditLog(redis),
    adminSessions: new RedisAdminSessions(redis),
  }
}

/** How long a call waits for a connection before it fails as ERR_STORE_UNAVAILABLE. */
export const CONNECT_WAIT_MS = 2000

/**
 * A client for each call: connect, run, disconnect. It needs no Durable Object, and costs a TCP
 * connection per request (the workerd runtime does not let a socket outlive the request that made it).
 */
export function perCallDispatch(url: string): Dispatch {
  return async (_route: string, call: Call): Promise<Outcome> => {
    const stores = redisStores(url)
    try {
      if (!(await whenReady(stores.redis, CONNECT_WAIT_MS)))
        return { ok: false, code: 'ERR_STORE_UNAVAILABLE', message: 'Redis did not answer' }
      return await runCall(stores, call)
    } finally {
      stores.redis.disconnect()
    }
  }
}

// Real Redis stores for the Worker, on one ioredis client (nodejs_compat). Used by the StoreRelay
// Durable Object, which keeps the client, and by the per-call Dispatch, which does not.
import { type ConnectOptions, connectRedis, type RedisClient, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { redisStores } from '../src/adapters/redis/stores.js'
import type { Stores } from '../src/ports/stores.js'
import { type Call, type Dispatch, type Outcome, runCall } from './remote-stores.js'

export interface RedisStores extends Stores {
  redis: RedisClient
}

/** Connection errors go to the Worker's log (the message only: it names host and port, never the password). */
function logRedisError(err: Error): void {
  console.log(JSON.stringify({ event: 'redis_error', message: err.message }))
}

export function connectStores(url: string, options: ConnectOptions = {}): RedisStores {
  const redis = connectRedis(url, logRedisError, options)
  return { redis, ...redisStores(redis, luaScripts()) }
}

/** How long a call waits for a connection before it fails as ERR_STORE_UNAVAILABLE. */
export const CONNECT_WAIT_MS = 2000

/**
 * A client for each call: connect, run, disconnect. It needs no Durable Object, and costs a TCP
 * connection per request (the workerd runtime does not let a socket outlive the request that made it).
 */
export function perCallDispatch(url: string): Dispatch {
  return async (_route: string, call: Call): Promise<Outcome> => {
    // A client for one call has no use for a watch on the sentinels (watchSentinels, connect.ts).
    const stores = connectStores(url, { watchSentinels: false })
    try {
      if (!(await whenReady(stores.redis, CONNECT_WAIT_MS, true)))
        return { ok: false, code: 'ERR_STORE_UNAVAILABLE', message: 'Redis did not answer' }
      return await runCall(stores, call)
    } finally {
      stores.redis.disconnect()
    }
  }
}

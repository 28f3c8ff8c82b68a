// StoreRelay: a Durable Object that keeps one Redis connection open across requests and runs the
// store calls that Workers send it. Concurrent polls of a room that reach the same object go to Redis
// as one EVALSHA (RedisQueueStore batches them), as on Node.
import { DurableObject } from 'cloudflare:workers'
import { whenReady } from '../src/adapters/redis/connect.js'
import type { WorkerEnv } from './env.js'
import { CONNECT_WAIT_MS, connectStores, type RedisStores } from './redis-stores.js'
import { type Call, type Outcome, runCall } from './remote-stores.js'

const UNAVAILABLE: Outcome = { ok: false, code: 'ERR_STORE_UNAVAILABLE', message: 'Redis did not answer' }

export class StoreRelay extends DurableObject<WorkerEnv> {
  private stores: RedisStores | undefined
  /**
   * Whether this object has been connected before. Only its first connection is waited for; after
   * that, while Redis is away, calls fail at once (the room's onStoreError answers) and the client
   * reconnects in the background, as on Node.
   */
  private wasReady = false

  /** The one RPC method: runs a store call (only the methods listed in REMOTE_METHODS). */
  async call(call: Call): Promise<Outcome> {
    const url = this.env.ANTEROOM_REDIS_URL
    if (!url) return { ok: false, code: 'ERR_CONFIG', message: 'ANTEROOM_REDIS_URL is not set' }
    if (this.stores === undefined || this.stores.redis.status === 'end') this.stores = connectStores(url)
    if (this.stores.redis.status !== 'ready') {
      if (this.wasReady || !(await whenReady(this.stores.redis, CONNECT_WAIT_MS, true))) return UNAVAILABLE
    }
    this.wasReady = true
    return runCall(this.stores, call)
  }
}

// Builds the ioredis client with the failure behaviour we chose: fail fast, never queue commands
// while Redis is away, so a visitor gets the room's onStoreError answer instead of a hang.
import { Redis } from 'ioredis'

export function connectRedis(url: string, onError: (err: Error) => void = () => {}): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    lazyConnect: false,
  })
  // Connection errors surface as ERR_STORE_UNAVAILABLE on the calls that need Redis; here they are only logged.
  redis.on('error', onError)
  return redis
}

/**
 * Resolves true once the client is connected, false after `ms` without a connection, or at the first
 * connection error when `failOnError` is set.
 */
export async function whenReady(redis: Redis, ms: number, failOnError = false): Promise<boolean> {
  if (redis.status === 'ready') return true
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer)
      redis.off('ready', onReady)
      redis.off('error', onError)
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), ms)
    const onReady = () => done(true)
    const onError = () => {
      if (failOnError) done(false)
    }
    redis.on('ready', onReady)
    redis.on('error', onError)
  })
}

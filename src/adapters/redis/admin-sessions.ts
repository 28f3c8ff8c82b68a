// AdminSessions on Redis: one small key per ended session, expiring when its cookie would have;
// one hash per throttle key of failed sign-ins ({n, last}), expiring SIGN_IN_FORGET_MS after the last
// on Redis's clock (the key's time to live; the memory store forgets on the caller's clock instead).
import type { Cluster, Redis } from 'ioredis'
import { type AdminSessions, SIGN_IN_FORGET_MS, type SignInFailures } from '../../ports/admin-sessions.js'
import { adminSessionKey, signInFailureKey } from './keys.js'
import { replies, storeCall } from './store-call.js'

export class RedisAdminSessions implements AdminSessions {
  constructor(private readonly redis: Redis | Cluster) {}

  async revoke(sessionId: string, ttlMs: number): Promise<void> {
    await storeCall(() => this.redis.set(adminSessionKey(sessionId), '1', 'PX', Math.max(1, Math.ceil(ttlMs))))
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    return (await storeCall(() => this.redis.exists(adminSessionKey(sessionId)))) === 1
  }

  async recordSignInFailure(keys: readonly string[], nowMs: number): Promise<SignInFailures[]> {
    if (keys.length === 0) return []
    // One transaction: the count, the time and the expiry move together.
    const multi = this.redis.multi()
    for (const key of keys) {
      const k = signInFailureKey(key)
      multi.hincrby(k, 'n', 1).hset(k, 'last', String(nowMs)).pexpire(k, SIGN_IN_FORGET_MS)
    }
    const values = await storeCall(async () => replies(await multi.exec()))
    return keys.map((_, i) => ({ count: Number(values[i * 3]), lastAt: nowMs }))
  }

  async signInFailures(keys: readonly string[], _nowMs: number): Promise<(SignInFailures | null)[]> {
    if (keys.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const key of keys) pipeline.hmget(signInFailureKey(key), 'n', 'last')
    const values = await storeCall(async () => replies(await pipeline.exec()))
    return keys.map((_, i) => {
      const [n, last] = values[i] as [string | null, string | null]
      if (n === null || last === null) return null
      return { count: Number(n), lastAt: Number(last) }
    })
  }

  async clearSignInFailures(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return
    // One DEL: the keys share a hash tag, so a Cluster takes them together.
    await storeCall(() => this.redis.del(...keys.map(signInFailureKey)))
  }
}

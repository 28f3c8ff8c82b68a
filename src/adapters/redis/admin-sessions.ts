// AdminSessions on Redis: one small key per ended session, expiring when its cookie would have;
// one hash per throttle key of failed sign-ins ({n, last}), expiring SIGN_IN_FORGET_MS after the last
// on Redis's clock (the key's time to live; the memory store forgets on the caller's clock instead).
import type { Cluster, Redis } from 'ioredis'
import { AnteroomError } from '../../core/errors.js'
import { type AdminSessions, SIGN_IN_FORGET_MS, type SignInFailures } from '../../ports/admin-sessions.js'
import { adminSessionKey, signInFailureKey } from './keys.js'

const unavailable = (cause: unknown) => new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })

export class RedisAdminSessions implements AdminSessions {
  constructor(private readonly redis: Redis | Cluster) {}

  async revoke(sessionId: string, ttlMs: number): Promise<void> {
    try {
      await this.redis.set(adminSessionKey(sessionId), '1', 'PX', Math.max(1, Math.ceil(ttlMs)))
    } catch (cause) {
      throw unavailable(cause)
    }
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    try {
      return (await this.redis.exists(adminSessionKey(sessionId))) === 1
    } catch (cause) {
      throw unavailable(cause)
    }
  }

  async recordSignInFailure(keys: readonly string[], nowMs: number): Promise<SignInFailures[]> {
    if (keys.length === 0) return []
    // One transaction: the count, the time and the expiry move together.
    const multi = this.redis.multi()
    for (const key of keys) {
      const k = signInFailureKey(key)
      multi.hincrby(k, 'n', 1).hset(k, 'last', String(nowMs)).pexpire(k, SIGN_IN_FORGET_MS)
    }
    let replies: [Error | null, unknown][] | null
    try {
      replies = await multi.exec()
    } catch (cause) {
      throw unavailable(cause)
    }
    if (replies === null) throw unavailable(new Error('the transaction was discarded'))
    return keys.map((_, i) => {
      const [err, n] = replies[i * 3] as [Error | null, unknown]
      if (err) throw unavailable(err)
      return { count: Number(n), lastAt: nowMs }
    })
  }

  async signInFailures(keys: readonly string[], _nowMs: number): Promise<(SignInFailures | null)[]> {
    if (keys.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const key of keys) pipeline.hmget(signInFailureKey(key), 'n', 'last')
    let replies: [Error | null, unknown][] | null
    try {
      replies = await pipeline.exec()
    } catch (cause) {
      throw unavailable(cause)
    }
    return keys.map((_, i) => {
      const [err, value] = (replies?.[i] ?? [new Error('no reply'), null]) as [Error | null, unknown]
      if (err) throw unavailable(err)
      const [n, last] = value as [string | null, string | null]
      if (n === null || last === null) return null
      return { count: Number(n), lastAt: Number(last) }
    })
  }

  async clearSignInFailures(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return
    try {
      // One DEL: the keys share a hash tag, so a Cluster takes them together.
      await this.redis.del(...keys.map(signInFailureKey))
    } catch (cause) {
      throw unavailable(cause)
    }
  }
}

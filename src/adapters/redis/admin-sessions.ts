// AdminSessions on Redis: one small key per ended session, expiring when its cookie would have.
import type { Cluster, Redis } from 'ioredis'
import { AnteroomError } from '../../core/errors.js'
import type { AdminSessions } from '../../ports/admin-sessions.js'
import { adminSessionKey } from './keys.js'

export class RedisAdminSessions implements AdminSessions {
  constructor(private readonly redis: Redis | Cluster) {}

  async revoke(sessionId: string, ttlMs: number): Promise<void> {
    try {
      await this.redis.set(adminSessionKey(sessionId), '1', 'PX', Math.max(1, Math.ceil(ttlMs)))
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
    }
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    try {
      return (await this.redis.exists(adminSessionKey(sessionId))) === 1
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
    }
  }
}

// AuditLog on Redis: a list of JSON entries, newest first, capped at 1,000.
import type { Cluster, Redis } from 'ioredis'
import { AnteroomError } from '../../core/errors.js'
import type { AuditEntry, AuditLog } from '../../ports/audit-log.js'
import { AUDIT_KEY } from './keys.js'

export class RedisAuditLog implements AuditLog {
  constructor(private readonly redis: Redis | Cluster) {}

  async append(entry: AuditEntry): Promise<void> {
    try {
      await this.redis.pipeline().lpush(AUDIT_KEY, JSON.stringify(entry)).ltrim(AUDIT_KEY, 0, 999).exec()
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
    }
  }

  async list(limit = 100): Promise<AuditEntry[]> {
    try {
      return (await this.redis.lrange(AUDIT_KEY, 0, limit - 1)).map((json) => JSON.parse(json) as AuditEntry)
    } catch (cause) {
      throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
    }
  }
}

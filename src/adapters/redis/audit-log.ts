// AuditLog on Redis: changes of settings and mode in a sorted set by time, kept 90 days; every other
// entry in a list, newest first, capped at 1,000 (keys.ts AUDIT_KEYS, all under the hash tag {audit}).
// Members are `<seq>|<json>`: seq (INCR) keeps the order of appends made in the same millisecond,
// and makes equal entries distinct members of the sorted set.
import type { Cluster, Redis } from 'ioredis'
import {
  ACTION_CAP,
  type AuditEntry,
  type AuditLog,
  type AuditQuery,
  CHANGE_RETENTION_MS,
  entryTime,
  isChange,
} from '../../ports/audit-log.js'
import { AUDIT_KEYS } from './keys.js'
import { replies, storeCall } from './store-call.js'

/** Zero-padded, so that members with the same score sort by seq. */
const member = (seq: number, entry: AuditEntry) => `${String(seq).padStart(16, '0')}|${JSON.stringify(entry)}`

function parse(raw: string): { seq: number; t: number; entry: AuditEntry } {
  const bar = raw.indexOf('|')
  const entry = JSON.parse(raw.slice(bar + 1)) as AuditEntry
  return { seq: Number(raw.slice(0, bar)), t: Date.parse(entry.at), entry }
}

export class RedisAuditLog implements AuditLog {
  constructor(private readonly redis: Redis | Cluster) {}

  async append(entry: AuditEntry): Promise<void> {
    const t = entryTime(entry)
    await storeCall(async () => {
      const seq = await this.redis.incr(AUDIT_KEYS.seq)
      const multi = this.redis.multi()
      if (isChange(entry.action)) multi.zadd(AUDIT_KEYS.changes, t, member(seq, entry))
      else multi.lpush(AUDIT_KEYS.actions, member(seq, entry)).ltrim(AUDIT_KEYS.actions, 0, ACTION_CAP - 1)
      multi.zremrangebyscore(AUDIT_KEYS.changes, '-inf', `(${t - CHANGE_RETENTION_MS}`)
      replies(await multi.exec())
    })
  }

  async list(limit = 100, query: AuditQuery = {}): Promise<AuditEntry[]> {
    const n = Math.max(0, Math.floor(limit))
    if (n === 0) return []
    const min = query.now === undefined ? '-inf' : String(query.now - CHANGE_RETENTION_MS)
    const pipeline = this.redis.pipeline()
    if (query.kind !== 'actions') pipeline.zrevrangebyscore(AUDIT_KEYS.changes, '+inf', min, 'LIMIT', 0, n)
    if (query.kind !== 'changes') pipeline.lrange(AUDIT_KEYS.actions, 0, n - 1)
    const values = (await storeCall(async () => replies(await pipeline.exec()))) as string[][]
    const changes = query.kind !== 'actions' ? (values.shift() ?? []) : []
    const actions = query.kind !== 'changes' ? (values.shift() ?? []) : []
    return [...changes, ...actions]
      .map(parse)
      .sort((a, b) => b.t - a.t || b.seq - a.seq)
      .slice(0, n)
      .map((k) => k.entry)
  }
}

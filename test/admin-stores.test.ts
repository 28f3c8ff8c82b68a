import type { Cluster } from 'ioredis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MemoryAdminSessions } from '../src/adapters/memory/admin-sessions.js'
import { MemoryAuditLog } from '../src/adapters/memory/audit-log.js'
import { RedisAdminSessions } from '../src/adapters/redis/admin-sessions.js'
import { RedisAuditLog } from '../src/adapters/redis/audit-log.js'
import { AUDIT_KEYS, signInFailureKey } from '../src/adapters/redis/keys.js'
import { SIGN_IN_FORGET_MS } from '../src/ports/admin-sessions.js'
import { auditLogContract } from './contract/audit-log.js'
import { signInFailuresContract } from './contract/sign-in-failures.js'
import { startSingleNodeCluster, type TestCluster } from './support/redis-cluster.js'

const clients: (Redis | Cluster)[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})

/** A database of the test Redis of its own (the counter test/support/runtimes.ts also takes from). */
async function freshRedis(): Promise<Redis> {
  const counter = new Redis(inject('redisUrl'))
  const db = await counter.incr('anteroom-test:next-db')
  counter.disconnect()
  if (db >= 900) throw new Error('the test Redis ran out of databases')
  const redis = new Redis(`${inject('redisUrl')}/${db}`)
  clients.push(redis)
  return redis
}

auditLogContract('memory', async () => new MemoryAuditLog())
auditLogContract('redis', async () => new RedisAuditLog(await freshRedis()))
signInFailuresContract('memory', async () => new MemoryAdminSessions())
signInFailuresContract('redis', async () => new RedisAdminSessions(await freshRedis()))

describe('failed sign-ins are forgotten 30 minutes after the last one', () => {
  it('memory: on the clock of the caller', async () => {
    const store = new MemoryAdminSessions()
    await store.recordSignInFailure(['addr:a'], 1_000)
    await store.recordSignInFailure(['addr:a'], 2_000)
    expect(await store.signInFailures(['addr:a'], 2_000 + SIGN_IN_FORGET_MS - 1)).toEqual([{ count: 2, lastAt: 2_000 }])
    expect(await store.signInFailures(['addr:a'], 2_000 + SIGN_IN_FORGET_MS)).toEqual([null])
    expect(await store.recordSignInFailure(['addr:a'], 2_000 + SIGN_IN_FORGET_MS)).toEqual([
      { count: 1, lastAt: 2_000 + SIGN_IN_FORGET_MS },
    ])
  })

  it('redis: each key carries that time to live, renewed by each failure', async () => {
    const redis = await freshRedis()
    const store = new RedisAdminSessions(redis)
    await store.recordSignInFailure(['addr:a', 'name:alice'], 1_000)
    for (const key of ['addr:a', 'name:alice']) {
      const ttl = await redis.pttl(signInFailureKey(key))
      expect(ttl).toBeGreaterThan(SIGN_IN_FORGET_MS - 60_000)
      expect(ttl).toBeLessThanOrEqual(SIGN_IN_FORGET_MS)
    }
    await redis.pexpire(signInFailureKey('addr:a'), 5_000)
    await store.recordSignInFailure(['addr:a'], 2_000)
    expect(await redis.pttl(signInFailureKey('addr:a'))).toBeGreaterThan(SIGN_IN_FORGET_MS - 60_000)
    expect(await redis.hgetall(signInFailureKey('addr:a'))).toEqual({ n: '2', last: '2000' })
  })
})

describe('the audit log on Redis', () => {
  it('keeps its keys under one hash tag, with nothing under the old single list', async () => {
    const redis = await freshRedis()
    const audit = new RedisAuditLog(redis)
    const at = new Date(1_800_000_000_000).toISOString()
    await audit.append({ at, who: 'a', action: 'room.pause', room: 'r', before: null, after: null })
    await audit.append({ at, who: 'a', action: 'session.end', room: 'r', before: null, after: null })
    expect((await redis.keys('anteroom:*')).sort()).toEqual([AUDIT_KEYS.actions, AUDIT_KEYS.changes, AUDIT_KEYS.seq])
    expect(await redis.type(AUDIT_KEYS.changes)).toBe('zset')
    expect(await redis.type(AUDIT_KEYS.actions)).toBe('list')
  })
})

describe('on a Redis Cluster', () => {
  let started: TestCluster
  let cluster: Cluster
  beforeAll(async () => {
    started = await startSingleNodeCluster()
    cluster = started.cluster
  })
  afterAll(async () => {
    await started?.stop()
  })

  auditLogContract('redis cluster', async () => {
    // One cluster for the file: each test starts from an empty log.
    await cluster.del(AUDIT_KEYS.changes, AUDIT_KEYS.actions, AUDIT_KEYS.seq)
    return new RedisAuditLog(cluster)
  })
  signInFailuresContract('redis cluster', async () => new RedisAdminSessions(cluster))
})

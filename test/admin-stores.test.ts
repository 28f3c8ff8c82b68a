// The admin stores' contracts (audit retention, failed sign-ins) against memory, a real Redis (a
// database of its own per suite run) and a real single-node Redis Cluster, where every MULTI and
// pipeline must stay in one hash slot. Time is passed in: nothing sleeps.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MemoryAdminSessions } from '../src/adapters/memory/admin-sessions.js'
import { MemoryAuditLog } from '../src/adapters/memory/audit-log.js'
import { RedisAdminSessions } from '../src/adapters/redis/admin-sessions.js'
import { RedisAuditLog } from '../src/adapters/redis/audit-log.js'
import { AUDIT_KEYS, signInFailureKey } from '../src/adapters/redis/keys.js'
import { SIGN_IN_FORGET_MS } from '../src/ports/admin-sessions.js'
import { auditLogContract } from './contract/audit-log.js'
import { signInFailuresContract } from './contract/sign-in-failures.js'
import { type RedisServer, startRedis } from './support/redis-server.js'

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
  let server: RedisServer
  let cluster: Cluster
  const dir = mkdtempSync(join(tmpdir(), 'anteroom-admin-cluster-'))
  beforeAll(async () => {
    server = await startRedis([
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--dir',
      dir,
      '--cluster-announce-ip',
      '127.0.0.1',
    ])
    const admin = new Redis(server.url)
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383')
    for (let i = 0; i < 100 && !(await admin.call('CLUSTER', 'INFO'))?.toString().includes('cluster_state:ok'); i++) {
      await new Promise((r) => setTimeout(r, 50))
    }
    admin.disconnect()
    cluster = new Cluster([{ host: '127.0.0.1', port: server.port }])
    clients.push(cluster)
  })
  afterAll(async () => {
    cluster?.disconnect()
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  auditLogContract('redis cluster', async () => {
    // One cluster for the file: each test starts from an empty log.
    await cluster.del(AUDIT_KEYS.changes, AUDIT_KEYS.actions, AUDIT_KEYS.seq)
    return new RedisAuditLog(cluster)
  })
  signInFailuresContract('redis cluster', async () => new RedisAdminSessions(cluster))
})

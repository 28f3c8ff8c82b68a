// storeCall (src/adapters/redis/store-call.ts) is the one place a Redis failure becomes
// ERR_STORE_UNAVAILABLE: every method of every Redis store fails with that code when Redis is away.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { connectRedis } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { replies, storeCall } from '../src/adapters/redis/store-call.js'
import { redisStores } from '../src/adapters/redis/stores.js'
import { loadConfig } from '../src/config/index.js'
import { AnteroomError, isAnteroomError } from '../src/core/errors.js'
import { admissionLimits } from '../src/core/settings.js'

describe('storeCall', () => {
  it('passes values through and turns any failure into ERR_STORE_UNAVAILABLE, keeping the cause', async () => {
    expect(await storeCall(async () => 42)).toBe(42)
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:6379')
    const err = await storeCall(() => Promise.reject(cause)).catch((e: unknown) => e)
    expect(isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')).toBe(true)
    expect((err as AnteroomError).cause).toBe(cause)
    const own = new AnteroomError('ERR_SETTINGS_INVALID', 'mode: unknown')
    expect(await storeCall(() => Promise.reject(own)).catch((e: unknown) => e)).toBe(own)
  })

  it('reads the replies of a MULTI or pipeline, and fails on a discarded one or a failed command', () => {
    expect(
      replies([
        [null, 1],
        [null, 'OK'],
      ]),
    ).toEqual([1, 'OK'])
    expect(() => replies(null)).toThrow(/discarded/)
    expect(() =>
      replies([
        [null, 1],
        [new Error('WRONGTYPE'), null],
      ]),
    ).toThrow(/WRONGTYPE/)
  })

  it('is the only place in the Redis adapters that names ERR_STORE_UNAVAILABLE', () => {
    const dir = join(import.meta.dirname, '../src/adapters/redis')
    const naming = readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && readFileSync(join(dir, f), 'utf8').includes("'ERR_STORE_UNAVAILABLE'"))
      .sort()
    expect(naming).toEqual(['store-call.ts'])
  })
})

describe('the Redis stores while Redis is away', () => {
  // Nothing listens on port 1: every command fails at once (no offline queue).
  const redis = connectRedis('redis://127.0.0.1:1')
  const stores = redisStores(redis, luaScripts())
  afterAll(() => redis.disconnect())
  const room = loadConfig({}).rooms[0] as NonNullable<ReturnType<typeof loadConfig>['rooms'][0]>
  const entry = { at: new Date().toISOString(), who: 'admin', action: 'room.pause', room: room.id, before: null, after: null }

  const calls: Record<string, () => Promise<unknown>> = {
    'queue.poll': () => stores.queue.poll({ room: room.id, visitor: 'v1', limits: admissionLimits(room) }),
    'queue.renew': () => stores.queue.renew({ room: room.id, visitor: 'v1', sessionMs: 60_000 }),
    'queue.endSession': () => stores.queue.endSession(room.id, 'v1'),
    'queue.finishSession': () => stores.queue.finishSession({ room: room.id, visitor: 'v1', keepMs: 60_000 }),
    'queue.endAllSessions': () => stores.queue.endAllSessions(room.id),
    'queue.stats': () => stores.queue.stats(room.id),
    'queue.recordSample': () => stores.queue.recordSample(room.id),
    'queue.history': () => stores.queue.history(room.id),
    'settings.list': () => stores.settings.list(),
    'settings.get': () => stores.settings.get(room.id),
    'settings.seed': () => stores.settings.seed([room]),
    'settings.replace': () => stores.settings.replace(room, 1),
    'audit.append': () => stores.audit.append(entry),
    'audit.list': () => stores.audit.list(10),
    'adminSessions.revoke': () => stores.adminSessions.revoke('s1', 1000),
    'adminSessions.isRevoked': () => stores.adminSessions.isRevoked('s1'),
    'adminSessions.recordSignInFailure': () => stores.adminSessions.recordSignInFailure(['addr:192.0.2.1'], Date.now()),
    'adminSessions.signInFailures': () => stores.adminSessions.signInFailures(['addr:192.0.2.1'], Date.now()),
    'adminSessions.clearSignInFailures': () => stores.adminSessions.clearSignInFailures(['addr:192.0.2.1']),
  }

  for (const [name, call] of Object.entries(calls)) {
    it(`${name} fails with ERR_STORE_UNAVAILABLE`, async () => {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isAnteroomError(err, 'ERR_STORE_UNAVAILABLE'), String(err)).toBe(true)
    })
  }

  it('and ping answers false', async () => {
    expect(await stores.queue.ping()).toBe(false)
  })
})

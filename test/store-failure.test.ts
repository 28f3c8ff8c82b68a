// When Redis goes away or forgets: the room's onStoreError decides, admitted visitors keep working,
// and queued visitors get their original places back. Uses its own redis-server, stopped by pid.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type RedisServer, startRedis } from './support/redis-server.js'
import { Visitor } from './support/visitor.js'

let redis: RedisServer
let origin: OriginServer
let edge: Edge
let admin: Redis

const rooms = [
  { id: 'strict', paths: ['/strict'], totalActiveUsers: 1, newUsersPerMinute: 60, onStoreError: 'closed' },
  { id: 'lenient', paths: ['/lenient'], totalActiveUsers: 1, newUsersPerMinute: 60, onStoreError: 'open' },
  { id: 'line', paths: ['/line'], totalActiveUsers: 1, newUsersPerMinute: 60, mode: 'paused' },
]

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  // Waits for ioredis to notice a real server event (reconnect); the assertions never depend on time.
  for (let i = 0; i < 200; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error('condition not reached')
}

beforeAll(async () => {
  redis = await startRedis()
  origin = await startOrigin()
  edge = await testEdge({ rooms, originUrl: origin.url, redisUrl: redis.url })
  admin = new Redis(redis.url)
  admin.on('error', () => {})
})
afterAll(async () => {
  admin.disconnect()
  await edge.close()
  await origin.close()
  await redis.stop()
})

describe('store failure', () => {
  it('stops Redis mid-run: closed shows "you keep your place", open passes through, admitted visitors keep working', async () => {
    const app = edge.app
    const admittedStrict = new Visitor()
    const queuedStrict = new Visitor()
    expect((await admittedStrict.request(app, '/strict/a')).status).toBe(200)
    expect(await queuedStrict.status(app, 'strict')).toMatchObject({ state: 'queued', position: 1 })
    const admittedLenient = new Visitor()
    await admittedLenient.request(app, '/lenient/a')
    const inLine = new Visitor()
    await new Visitor().status(app, 'line')
    expect(await inLine.status(app, 'line')).toMatchObject({ state: 'paused', position: 2 })

    await redis.stop()
    await waitFor(async () => !(await edge.deps.queue.ping()))

    // Closed (the default): the queued visitor is told we are busy and keeps their cookie.
    const tokenBefore = queuedStrict.cookies.get('anteroom_q_strict')
    const busy = await queuedStrict.request(app, '/strict/a')
    expect(busy.status).toBe(503)
    expect(busy.headers.get('retry-after')).toBe('20')
    expect(await busy.text()).toContain('We are busy; you keep your place.')
    expect(queuedStrict.cookies.get('anteroom_q_strict')).toBe(tokenBefore)
    expect(await queuedStrict.status(app, 'strict')).toMatchObject({ state: 'busy' })
    const before = origin.requests.length
    expect((await new Visitor().request(app, '/strict/a')).status).toBe(503)
    expect(origin.requests.length).toBe(before)

    // Open: a new visitor passes through, with a short admission token the origin can verify.
    const through = await new Visitor().request(app, '/lenient/b')
    expect(through.status).toBe(200)
    const seen = (await through.json()) as { url: string; headers: Record<string, string> }
    expect(seen.url).toBe('/lenient/b')
    expect(seen.headers['anteroom-admission']).toBeTruthy()

    // Admitted visitors in both rooms keep working: their tokens are checked without Redis.
    for (const [v, path] of [
      [admittedStrict, '/strict/b'],
      [admittedLenient, '/lenient/c'],
    ] as const) {
      const res = await v.request(app, path)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { url: string }).url).toBe(path)
    }
    expect((await app.request('http://shop.test/_anteroom/health')).status).toBe(503)

    // Redis comes back empty on the same port. A newcomer polls first, yet the visitor who was
    // already in line gets their earlier place back from their token.
    redis = await startRedis([], redis.port)
    await waitFor(() => edge.deps.queue.ping())
    const newcomer = new Visitor()
    expect(await newcomer.status(app, 'line')).toMatchObject({ position: 1, waiting: 1 })
    expect(await inLine.status(app, 'line')).toMatchObject({ position: 1, waiting: 2 })
    expect(await newcomer.status(app, 'line')).toMatchObject({ position: 2, waiting: 2 })
  })

  it('after a flush, queued visitors come back in their original order whatever order they poll in', async () => {
    await waitFor(() => edge.deps.queue.ping())
    const app = edge.app
    const visitors = Array.from({ length: 25 }, () => new Visitor())
    for (const v of visitors) await v.status(app, 'line')
    await admin.flushall()
    const order = [...visitors.keys()].sort(() => Math.random() - 0.5)
    for (const i of order) await visitors[i]?.status(app, 'line')
    for (const [i, v] of visitors.entries()) expect(await v.status(app, 'line')).toMatchObject({ position: i + 1, waiting: 25 })
  })
})

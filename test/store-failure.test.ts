// When Redis forgets: queued visitors get their original places back. Uses its own redis-server,
// stopped by pid. Redis stopping mid-run is in the HTTP suite (test/contract/edge-http.ts), on both runtimes.
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
const ADMIN_TOKEN = 'o'.repeat(32)

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
  edge = await testEdge({ rooms, originUrl: origin.url, redisUrl: redis.url, adminTokens: `ops:${ADMIN_TOKEN}` })
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

  it('admin sign-out while Redis is down: the cookie is cleared and the answer says the session was not ended everywhere', async () => {
    await waitFor(() => edge.deps.queue.ping())
    const request = (path: string, init: RequestInit = {}) => edge.app.request(`http://shop.test/_anteroom${path}`, init)
    const login = await request('/admin/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: ADMIN_TOKEN }),
    })
    const cookie = (login.headers.get('set-cookie') as string).split(';')[0] as string
    const { csrf } = (await login.json()) as { csrf: string }
    expect((await request('/api/session', { headers: { cookie } })).status).toBe(200)

    await redis.stop()
    await waitFor(async () => !(await edge.deps.queue.ping()))
    // Checking a session needs the store: refused with a clear 503, never let in unchecked.
    expect((await request('/api/session', { headers: { cookie } })).status).toBe(503)
    const out = await request('/api/logout', { method: 'POST', headers: { cookie, 'x-csrf-token': csrf } })
    expect(out.status).toBe(503)
    expect(out.headers.get('set-cookie')).toMatch(/^anteroom_admin=; Path=\/_anteroom; Max-Age=0/)
    expect(((await out.json()) as { error: { message: string } }).error.message).toContain('in this browser only')
    redis = await startRedis([], redis.port)
    await waitFor(() => edge.deps.queue.ping())
  })
})

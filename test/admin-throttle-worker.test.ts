// Sign-in throttling and the audit log's two kinds across runtimes: a Worker edge (workerd, Redis
// through its StoreRelay Durable Objects, so every method must be in REMOTE_METHODS) and a Node edge
// on the same Redis database see the same failed sign-ins and the same log.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { T0, type TestEdge, workerRuntime } from './support/runtimes.js'

const ALICE = 'alice-token-0123456789abcdefgh'
const rooms = [{ id: 'sale', paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60 }]
let origin: OriginServer
let worker: TestEdge
let node: Edge

beforeAll(async () => {
  origin = await startOrigin()
  const counter = new Redis(inject('redisUrl'))
  const db = await counter.incr('anteroom-test:next-db')
  counter.disconnect()
  const redisUrl = `${inject('redisUrl')}/${db}`
  worker = await workerRuntime(() => inject('redisUrl')).start({ rooms, originUrl: origin.url, redisUrl, adminTokens: `alice:${ALICE}` })
  node = await testEdge({ rooms, originUrl: origin.url, redisUrl, clock: new ManualClock(T0), adminTokens: `alice:${ALICE}` })
})
afterAll(async () => {
  await worker?.close()
  await node?.close()
  await origin?.close()
})

const json = { 'content-type': 'application/json' }

describe('admin sign-in throttling on the Worker', () => {
  it('locks an address after four failures on a Worker edge, and a Node edge on that Redis refuses it too', async () => {
    const onWorker = (token: string, address: string, name?: string) =>
      worker.app.request('http://shop.test/_anteroom/admin/login', {
        method: 'POST',
        headers: { ...json, 'cf-connecting-ip': address },
        body: JSON.stringify({ token, name }),
      })
    const statuses = []
    for (let i = 0; i < 5; i++) statuses.push((await onWorker(`wrong-${i}-0123456789abcdefghij`, '10.9.0.1')).status)
    expect(statuses).toEqual([401, 401, 401, 401, 429])
    const locked = await onWorker(ALICE, '10.9.0.1')
    expect([locked.status, locked.headers.get('retry-after')]).toEqual([429, '1'])
    expect(((await locked.json()) as { error: { code: string } }).error.code).toBe('ERR_TOO_MANY_ATTEMPTS')
    const fromNode = await node.app.request(
      'http://shop.test/_anteroom/api/rooms',
      { headers: { authorization: `Bearer ${ALICE}` } },
      { incoming: { socket: { remoteAddress: '10.9.0.1' } } },
    )
    expect(fromNode.status).toBe(429)
    const ok = await onWorker(ALICE, '10.9.0.2', 'alice')
    expect([ok.status, ((await ok.json()) as { who: string }).who]).toEqual([200, 'alice'])
  })

  it('ends sessions in bulk with one entry, and lists changes and other entries apart, through the relay', async () => {
    const call = (path: string, init: RequestInit = {}) =>
      worker.app.request(`http://shop.test/_anteroom/api${path}`, {
        ...init,
        headers: { authorization: `Bearer ${ALICE}`, 'cf-connecting-ip': '10.9.1.1', ...json, ...(init.headers as object) },
      })
    expect((await call('/rooms/sale/pause', { method: 'POST' })).status).toBe(200)
    const ended = await call('/rooms/sale/sessions/end', { method: 'POST', body: JSON.stringify({ visitors: ['a', 'b'] }) })
    expect(await ended.json()).toMatchObject({ requested: 2, ended: 0 })
    const list = async (q: string) =>
      ((await (await call(`/audit${q}`)).json()) as { entries: { action: string }[] }).entries.map((e) => e.action)
    expect(await list('?kind=changes')).toEqual(['room.pause'])
    expect(await list('?kind=actions')).toEqual(['sessions.end'])
    expect((await list('')).sort()).toEqual(['room.pause', 'sessions.end'])
  })
})

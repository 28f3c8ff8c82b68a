// Access codes across edges: two Node edges over one real redis-server (one clock, one queue secret).
// Redemptions racing on both edges never pass a grant's uses (access-redeem-7.lua is one atomic step);
// a revocation or an expiry on one edge refuses the next redemption on the other, without waiting for
// a reload (each redemption asks the store); and a place a code gave survives a Redis loss through the
// queue token, ahead of the public line again once the store recovers.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateSigningJwk } from '../src/core/admission-token.js'
import type { Edge } from '../src/entry/build.js'
import { accessRoom, adminCall } from './contract/edge-access.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type RedisServer, startRedis } from './support/redis-server.js'
import { type RequestTarget, T0, withSocketAddress } from './support/runtimes.js'
import { type StatusBody, Visitor } from './support/visitor.js'

const ADMIN = 'access-admin-token-0123456789ab'
let origin: OriginServer
let redis: RedisServer
const built: Edge[] = []

beforeAll(async () => {
  ;[origin, redis] = await Promise.all([startOrigin(), startRedis()])
})
afterAll(async () => {
  for (const e of built) await e.close()
  await origin.close()
  await redis.stop()
})

let db = 0
/** Two edges over one Redis database, with one clock and the same secrets. */
async function twoEdges(over: Record<string, unknown> = {}) {
  const clock = new ManualClock(T0)
  const signingKeys = [await generateSigningJwk(`race-${db}`)]
  const redisUrl = `${redis.url}/${++db}`
  const make = () =>
    testEdge({ rooms: [accessRoom(over)], originUrl: origin.url, redisUrl, clock, signingKeys, adminTokens: `alice:${ADMIN}` })
  const edges = [await make(), await make()]
  built.push(...edges)
  return { clock, redisUrl, apps: edges.map((e) => withSocketAddress(e.app)) as [RequestTarget, RequestTarget] }
}

const redeem = async (app: RequestTarget, v: Visitor, code: string) => {
  const res = await v.request(app, `/_anteroom/status?room=sale&code=${encodeURIComponent(code)}`, { json: true })
  return { status: res.status, body: (await res.json()) as StatusBody & { error?: { code: string } } }
}
const visitor = (i: number) => new Visitor('http://shop.test', `198.51.${100 + (i % 50)}.${1 + i}`)
const expiresAt = (ms: number) => new Date(T0 + ms).toISOString()

describe('access codes on two edges over one Redis', () => {
  it('redemptions racing on both edges never pass the uses: a link of 5 and a code of 1, each raced by many', async () => {
    const { apps } = await twoEdges({ mode: 'paused' })
    const link = (
      await adminCall(apps[0], 'POST', '/rooms/sale/access/links', { maxUses: 5, lane: 'priority', expiresAt: expiresAt(3_600_000) })
    ).body as { token: string; grant: { id: string } }
    const code = (
      await adminCall(apps[1], 'POST', '/rooms/sale/access/codes', {
        count: 1,
        maxUses: 1,
        lane: 'priority',
        expiresAt: expiresAt(3_600_000),
      })
    ).body.codes[0] as string
    // Forty visitors at once, every other one on the other edge.
    const racers = Array.from({ length: 40 }, (_, i) => visitor(i))
    const viaLink = await Promise.all(racers.map((v, i) => redeem(apps[i % 2] as RequestTarget, v, link.token)))
    expect(viaLink.filter((r) => r.status === 200).length).toBe(5)
    expect(viaLink.filter((r) => r.status === 409 && r.body.error?.code === 'ERR_ACCESS_USED_UP').length).toBe(35)
    // The five hold the line's first five places, one each (as they poll again: an answer in the race is
    // a snapshot, taken before a holder who redeemed earlier had polled).
    const winners = racers.filter((_, i) => viaLink[i]?.status === 200)
    const places = await Promise.all(winners.map(async (v, i) => (await v.status(apps[i % 2] as RequestTarget, 'sale')).position))
    expect([...places].sort()).toEqual([1, 2, 3, 4, 5])
    const viaCode = await Promise.all(Array.from({ length: 12 }, (_, i) => redeem(apps[i % 2] as RequestTarget, visitor(100 + i), code)))
    expect(viaCode.filter((r) => r.status === 200).length).toBe(1)
    const list = await adminCall(apps[1], 'GET', '/rooms/sale/access')
    expect(list.body.grants.map((g: { kind: string; used: number }) => [g.kind, g.used])).toEqual([
      ['code', 1],
      ['link', 5],
    ])
  })

  it('a revocation or an expiry on one edge refuses the next redemption on the other at once', async () => {
    const { apps, clock } = await twoEdges({ mode: 'paused' })
    const made = (
      await adminCall(apps[0], 'POST', '/rooms/sale/access/codes', {
        count: 2,
        maxUses: 10,
        lane: 'priority',
        expiresAt: expiresAt(60_000),
      })
    ).body as { codes: string[]; grants: { id: string }[] }
    expect((await redeem(apps[1], visitor(1), made.codes[0] as string)).status).toBe(200)
    expect((await adminCall(apps[0], 'POST', `/rooms/sale/access/${made.grants[0]?.id}/revoke`)).status).toBe(200)
    // No reload in between: the other edge asks the store with the redemption itself.
    expect((await redeem(apps[1], visitor(2), made.codes[0] as string)).body.error?.code).toBe('ERR_ACCESS_REVOKED')
    expect((await redeem(apps[1], visitor(3), made.codes[1] as string)).status).toBe(200)
    await clock.advance(60_000)
    expect((await redeem(apps[0], visitor(4), made.codes[1] as string)).body.error?.code).toBe('ERR_ACCESS_EXPIRED')
    expect((await redeem(apps[1], visitor(5), made.codes[1] as string)).body.error?.code).toBe('ERR_ACCESS_EXPIRED')
  })

  it('a place a code gave survives a Redis loss: back at the head from its token, admitted first once the store recovers', async () => {
    const { apps, clock, redisUrl } = await twoEdges({ totalActiveUsers: 1, refreshSeconds: 5 })
    const first = visitor(1)
    expect((await first.status(apps[0], 'sale')).state).toBe('admitted')
    const publics = [visitor(2), visitor(3)]
    for (const v of publics) expect((await v.status(apps[1], 'sale')).state).toBe('queued')
    const code = (
      await adminCall(apps[0], 'POST', '/rooms/sale/access/codes', {
        count: 1,
        maxUses: 1,
        lane: 'priority',
        expiresAt: expiresAt(3_600_000),
      })
    ).body.codes[0] as string
    const holder = visitor(4)
    expect((await redeem(apps[1], holder, code)).body).toMatchObject({ position: 1, lane: 'priority' })
    const flush = new Redis(redisUrl)
    await flush.flushdb()
    flush.disconnect()
    await clock.advance(1000)
    // Everyone polls with their token: the holder is put back first (the recovery holds admissions meanwhile).
    for (const v of [...publics, holder]) await v.status(apps[0], 'sale')
    expect(await holder.status(apps[1], 'sale')).toMatchObject({ state: 'recovering', position: 1, lane: 'priority' })
    // The code itself went with the store: it is unknown now, so nobody can use it twice through a loss.
    expect((await redeem(apps[0], visitor(5), code)).body.error?.code).toBe('ERR_ACCESS_INVALID')
    // After the recovery and the first session, the holder is the next one in.
    let admitted: StatusBody | undefined
    for (let i = 0; i < 30 && admitted === undefined; i++) {
      await clock.advance(1000)
      for (const v of publics) expect((await v.status(apps[i % 2] as RequestTarget, 'sale')).state).not.toBe('admitted')
      const s = await holder.status(apps[i % 2] as RequestTarget, 'sale')
      if (s.state === 'admitted') admitted = s
    }
    expect(admitted).toBeDefined()
  })
})

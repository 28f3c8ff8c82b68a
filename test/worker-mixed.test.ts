// A Node edge and a Worker edge (workerd) over one Redis, one clock, one set of secrets: visitors of
// both form one FIFO line, the limits hold across the two, and tokens of one are honoured by the other.
import { createLocalJWKSet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { nodeRuntime, sharedClock, type TestEdge, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

let origin: OriginServer
let node: TestEdge
let worker: TestEdge

const ROOM = { id: 'mixed', paths: ['/'], totalActiveUsers: 6, newUsersPerMinute: 18, sessionDurationSeconds: 30, refreshSeconds: 5 }

beforeAll(async () => {
  origin = await startOrigin()
  const redisUrl = `${inject('redisUrl')}/999`
  const signingKeys = [await generateSigningJwk('mixed')]
  node = await nodeRuntime.start({ rooms: [ROOM], originUrl: origin.url, redisUrl, signingKeys })
  worker = await workerRuntime(() => inject('redisUrl')).start({ rooms: [ROOM], originUrl: origin.url, redisUrl, signingKeys })
})
afterAll(async () => {
  await node?.close()
  await worker?.close()
  await origin?.close()
})

describe('a Node edge and a Worker edge on one Redis', () => {
  it('admit one FIFO line: the admitted are always the first arrivals, whichever edge each visitor uses', async () => {
    const clock = sharedClock([node.clock, worker.clock])
    await clock.set(node.clock.now())
    const perMinute = ROOM.newUsersPerMinute
    const cap = ROOM.totalActiveUsers
    const n = 36
    // Visitors alternate between the runtimes as they arrive; each keeps to its own edge.
    const visitors = Array.from({ length: n }, (_, i) => ({ v: new Visitor(), edge: i % 2 === 0 ? node : worker }))
    const admittedAt = new Map<number, number>()
    const grants: number[] = []
    const edgesSeen = new Set<string>()
    for (const [i, { v, edge }] of visitors.entries()) {
      await clock.advance(10)
      const s = await v.status(edge.app, ROOM.id)
      if (s.state === 'admitted') {
        admittedAt.set(i, clock.now())
        grants.push(clock.now())
      } else expect(s.position).toBe(i + 1 - admittedAt.size)
    }
    expect(admittedAt.size).toBe(Math.ceil(perMinute / 6))
    for (let step = 0; step < 400 && admittedAt.size < n; step++) {
      await clock.advance(1000)
      const now = clock.now()
      const before = await node.queue.stats(ROOM.id, now)
      const c60 = grants.filter((t) => t > now - 60_000).length
      const c10 = grants.filter((t) => t > now - 10_000).length
      const allowed = Math.max(0, Math.min(cap - before.active, perMinute - c60, Math.ceil(perMinute / 6) - c10, before.waiting))
      await Promise.all(
        visitors.map(async ({ v, edge }, i) => {
          const since = admittedAt.get(i)
          if (since === undefined) {
            if ((await v.status(edge.app, ROOM.id)).state === 'admitted') {
              admittedAt.set(i, now)
              edgesSeen.add(edge === node ? 'node' : 'worker')
            }
          } else if (now - since < 8_000) {
            expect((await v.request(edge.app, '/shop')).status).toBe(200)
          }
        }),
      )
      const after = await worker.queue.stats(ROOM.id, now)
      const granted = before.waiting - after.waiting
      expect(granted, `step ${step}`).toBe(allowed)
      expect(after.active).toBeLessThanOrEqual(cap)
      for (let g = 0; g < granted; g++) grants.push(now)
      const admitted = [...admittedAt.keys()].sort((a, b) => a - b)
      expect(admitted, `step ${step}`).toEqual([...Array(admitted.length).keys()])
    }
    expect(admittedAt.size).toBe(n)
    expect(edgesSeen).toEqual(new Set(['node', 'worker']))
  })

  it("honours each other's tokens: a place taken on one edge holds on the other; admission verifies through either JWKS", async () => {
    const room = { ...ROOM, id: 'swap', paths: ['/swap'], mode: 'paused' }
    const redisUrl = `${inject('redisUrl')}/998`
    const signingKeys = [await generateSigningJwk('swap')]
    const a = await nodeRuntime.start({
      rooms: [{ ...room, mode: 'fifo', totalActiveUsers: 1 }],
      originUrl: origin.url,
      redisUrl,
      signingKeys,
    })
    const b = await workerRuntime(() => inject('redisUrl')).start({
      rooms: [{ ...room, mode: 'fifo', totalActiveUsers: 1 }],
      originUrl: origin.url,
      redisUrl,
      signingKeys,
    })
    try {
      const clock = sharedClock([a.clock, b.clock])
      await clock.set(a.clock.now())
      const first = new Visitor()
      expect(await first.status(b.app, 'swap')).toMatchObject({ state: 'admitted' })
      const second = new Visitor()
      const third = new Visitor()
      expect(await second.status(b.app, 'swap')).toMatchObject({ position: 1 })
      expect(await third.status(a.app, 'swap')).toMatchObject({ position: 2 })
      // The Worker's queue token, shown to Node, and Node's, shown to the Worker: same places.
      expect(await second.status(a.app, 'swap')).toMatchObject({ position: 1, waiting: 2 })
      expect(await third.status(b.app, 'swap')).toMatchObject({ position: 2, waiting: 2 })
      // The Worker's admission cookie works on Node without a store call, and the token it forwards
      // verifies with Node's JWKS.
      const res = await first.request(a.app, '/swap/page')
      const seen = (await res.json()) as { headers: Record<string, string> }
      const jwks = createLocalJWKSet((await (await a.app.request('http://shop.test/.well-known/jwks.json')).json()) as never)
      const { payload } = await jwtVerify(seen.headers['anteroom-admission'] as string, jwks, {
        algorithms: ['ES256'],
        currentDate: new Date(clock.now()),
      })
      expect(payload.room).toBe('swap')
    } finally {
      await a.close()
      await b.close()
    }
  })
})

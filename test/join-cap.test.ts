// The cap on new places per client network per minute (src/http/join-cap.ts, issue #13 §3), on Node
// (embedded store and Redis) and on the Worker, on a manual clock. Test visitors name their address
// with x-test-ip, which only the test runtimes read: the Node one puts it where the socket's address
// goes, the Worker's test entry where Cloudflare puts the client's (cf-connecting-ip).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateSigningJwk } from '../src/core/admission-token.js'
import type { Edge } from '../src/entry/build.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import {
  type EdgeRuntime,
  nodeRuntime,
  type RequestTarget,
  sharedClock,
  T0,
  type TestEdge,
  withSocketAddress,
  workerRuntime,
} from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const ADMIN = 'admin-token-0123456789abcdefghij'
const CAP = 3
/** A paused room: everybody who joins waits, so a place in line shows as a position. */
const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  mode: 'paused',
  totalActiveUsers: 10,
  newUsersPerMinute: 60,
  abandonAfterSeconds: 3600,
  joinsPerNetworkPerMinute: CAP,
  ...over,
})

let origin: OriginServer
const edges: TestEdge[] = []
const built: Edge[] = []
beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of edges) await e.close()
  for (const e of built) await e.close()
  await origin.close()
})

// biome-ignore lint/suspicious/noExplicitAny: admin JSON read field by field
type Json = any

async function adminStats(app: RequestTarget): Promise<Json> {
  const res = await app.request('http://shop.test/_anteroom/api/rooms/sale/stats', { headers: { authorization: `Bearer ${ADMIN}` } })
  expect(res.status).toBe(200)
  return res.json()
}

const join = (app: RequestTarget, ip: string, init: RequestInit & { json?: boolean } = {}) => {
  const v = new Visitor('http://shop.test', ip)
  return v.request(app, '/tickets', init).then((res) => ({ v, res }))
}

function capSuite(runtime: EdgeRuntime, redisUrl?: () => string) {
  describe(`the cap on new places per network (${runtime.name}${redisUrl ? ', Redis' : ''})`, () => {
    let edge: TestEdge
    beforeAll(async () => {
      edge = await runtime.start({ rooms: [room()], originUrl: origin.url, t0: T0, redisUrl: redisUrl?.(), adminTokens: `admin:${ADMIN}` })
      edges.push(edge)
    })

    it('lets a /24 take the cap, then answers 429 with Retry-After and a page that says why; another /24 is unaffected', async () => {
      await edge.clock.set(T0 + 15_000)
      const inLine: Visitor[] = []
      for (const host of [1, 77, 254]) {
        const { v, res } = await join(edge.app, `198.51.100.${host}`)
        expect(res.status).toBe(200)
        inLine.push(v)
      }
      const refused = await join(edge.app, '198.51.100.9')
      expect(refused.res.status).toBe(429)
      // The minute began at T0: the network may join again 45 s on.
      expect(refused.res.headers.get('retry-after')).toBe('45')
      expect(refused.res.headers.get('content-type')).toMatch(/^text\/html/)
      const page = await refused.res.text()
      expect(page).toContain('Too many people from your network')
      expect(page).toContain('try again in 45 seconds')
      // No place: no queue token.
      expect(refused.res.headers.getSetCookie()).toEqual([])
      const asJson = await join(edge.app, '198.51.100.10', { json: true })
      expect(asJson.res.status).toBe(429)
      expect((await asJson.res.json()).error).toMatchObject({ code: 'ERR_TOO_MANY_JOINS', retryAfterSeconds: 45 })
      // The queue page's own status poll is a join too, and is refused alike.
      const status = await new Visitor('http://shop.test', '198.51.100.11').request(edge.app, '/_anteroom/status?room=sale', { json: true })
      expect(status.status).toBe(429)
      // Those already in line keep their places.
      for (const [i, v] of inLine.entries()) expect(await v.status(edge.app, 'sale')).toMatchObject({ state: 'paused', position: i + 1 })
      expect((await join(edge.app, '198.51.101.5')).res.status).toBe(200)
      // The next minute lets the network in again.
      await edge.clock.set(T0 + 60_000)
      expect((await join(edge.app, '198.51.100.9')).res.status).toBe(200)
    })

    it('groups IPv6 by /56, and an IPv4-mapped address with its IPv4 /24', async () => {
      await edge.clock.set(T0 + 120_000)
      for (const ip of ['2001:db8:0:100::1', '2001:db8:0:1ff::2', '2001:db8:0:1a0:5::9'])
        expect((await join(edge.app, ip)).res.status, ip).toBe(200)
      expect((await join(edge.app, '2001:db8:0:180::1')).res.status).toBe(429)
      expect((await join(edge.app, '2001:db8:0:200::1')).res.status).toBe(200)
      for (const ip of ['192.0.2.1', '::ffff:192.0.2.2', '192.0.2.3']) expect((await join(edge.app, ip)).res.status, ip).toBe(200)
      expect((await join(edge.app, '::ffff:192.0.2.200')).res.status).toBe(429)
    })

    it('does not count visitors with a queue token: their polls cost nothing against the cap', async () => {
      await edge.clock.set(T0 + 180_000)
      const { v } = await join(edge.app, '203.0.113.1')
      const { position } = await v.status(edge.app, 'sale')
      for (let i = 0; i < 10; i++) {
        await edge.clock.advance(1000)
        expect((await v.request(edge.app, '/tickets')).status).toBe(200)
        expect((await v.status(edge.app, 'sale')).position).toBe(position)
      }
      expect((await join(edge.app, '203.0.113.2')).res.status).toBe(200)
      expect((await join(edge.app, '203.0.113.3')).res.status).toBe(200)
      expect((await join(edge.app, '203.0.113.4')).res.status).toBe(429)
    })

    it('shows the refused joins, by reason, with the cap in the admin stats', async () => {
      const s = await adminStats(edge.app)
      // 198.51.100: three refusals (page, JSON, status); 2001:db8:0:100::/56 one; 192.0.2 one; 203.0.113 one.
      expect(s.botDefence).toEqual({
        powDifficulty: 0,
        joinsPerNetworkPerMinute: CAP,
        networkPrefixIPv4: 24,
        networkPrefixIPv6: 56,
        refused: { total: { network: 6, pow: 0 }, lastMinute: expect.any(Object) },
      })
      // A minute on, the last minute has none (what the edge sends counts from when it is sent).
      await edge.clock.advance(1000)
      await join(edge.app, '100.64.1.1')
      await edge.settled()
      await edge.clock.advance(61_000)
      await join(edge.app, '100.64.2.1')
      await edge.settled()
      expect((await adminStats(edge.app)).botDefence.refused).toEqual({ total: { network: 6, pow: 0 }, lastMinute: { network: 0, pow: 0 } })
    })
  })
}

capSuite(nodeRuntime)
capSuite(nodeRuntime, () => inject('redisUrl'))
capSuite(workerRuntime(() => inject('redisUrl')))

describe('the client address on Node', () => {
  it('is the socket’s: X-Forwarded-For, X-Real-IP, Forwarded, cf-connecting-ip and x-test-ip written by the client change nothing', async () => {
    const edge = await testEdge({ rooms: [room()], originUrl: origin.url, clock: new ManualClock(T0) })
    built.push(edge)
    // The production app, reached on a socket from 192.0.2.10, with every header a client might forge.
    const forged = {
      'x-forwarded-for': '198.51.100.1',
      'x-real-ip': '198.51.100.2',
      forwarded: 'for=198.51.100.3',
      'cf-connecting-ip': '198.51.100.4',
      'true-client-ip': '198.51.100.5',
      'x-test-ip': '198.51.100.6',
      accept: 'text/html',
    }
    const onSocket = (i: number) =>
      edge.app.request(
        'http://shop.test/tickets',
        { headers: { ...forged, 'x-forwarded-for': `198.51.10${i}.1` } },
        {
          incoming: { socket: { remoteAddress: '192.0.2.10' } },
        },
      )
    for (let i = 0; i < CAP; i++) expect((await onSocket(i)).status).toBe(200)
    expect((await onSocket(9)).status).toBe(429)
    // The forged networks have taken nothing: a real visitor from one of them joins.
    const real = withSocketAddress(edge.app)
    expect((await join(real, '198.51.100.1')).res.status).toBe(200)
    expect((await join(real, '192.0.2.11')).res.status).toBe(429)
  })

  it('costs a join one store call more, a poll with a queue token none, and sends refusals at most once a second', async () => {
    const clock = new ManualClock(T0)
    const edge = await testEdge({ rooms: [room()], originUrl: origin.url, clock, adminTokens: `admin:${ADMIN}` })
    built.push(edge)
    const calls = { poll: 0, countJoin: 0, addRefusals: 0 }
    const { queue, defence } = edge.deps
    const poll = queue.poll.bind(queue)
    const countJoin = defence.countJoin.bind(defence)
    const addRefusals = defence.addRefusals.bind(defence)
    queue.poll = (i) => {
      calls.poll++
      return poll(i)
    }
    defence.countJoin = (i) => {
      calls.countJoin++
      return countJoin(i)
    }
    // Writes only: the admin view's reads send no counts.
    defence.addRefusals = (r, c, n) => {
      if (Object.keys(c).length > 0) calls.addRefusals++
      return addRefusals(r, c, n)
    }
    const app = withSocketAddress(edge.app)
    const { v } = await join(app, '198.51.100.1')
    expect(calls).toEqual({ poll: 1, countJoin: 1, addRefusals: 0 })
    for (let i = 0; i < 5; i++) await v.request(app, '/tickets')
    expect(calls).toEqual({ poll: 6, countJoin: 1, addRefusals: 0 })
    await join(app, '198.51.100.2')
    await join(app, '198.51.100.3')
    // An attack from the network, within one second: each refusal is one countJoin, and no store write.
    for (let i = 0; i < 50; i++) expect((await join(app, `198.51.100.${10 + i}`)).res.status).toBe(429)
    await edge.deps.rooms.settled()
    expect(calls).toMatchObject({ countJoin: 53, addRefusals: 0 })
    // The edge's own admin view counts what it has not sent yet.
    expect((await adminStats(edge.app)).botDefence.refused.total.network).toBe(50)
    // A second on, the next request's reload sends them in one call (its own refusal, counted after
    // the reload began, waits for the next).
    clock.advance(1000)
    await join(app, '198.51.100.99')
    await edge.deps.rooms.settled()
    expect(calls.addRefusals).toBe(1)
    expect(await defence.addRefusals('sale', {}, clock.now())).toMatchObject({ total: { network: 50 }, lastMinute: { network: 50 } })
    expect((await adminStats(edge.app)).botDefence.refused).toEqual({
      total: { network: 51, pow: 0 },
      lastMinute: { network: 51, pow: 0 },
    })
    // A minute later, the last one is sent and the fifty have left the last minute.
    clock.advance(61_000)
    await join(app, '203.0.113.1')
    await edge.deps.rooms.settled()
    expect(calls.addRefusals).toBe(2)
    expect(await defence.addRefusals('sale', {}, clock.now())).toMatchObject({ total: { network: 51 }, lastMinute: { network: 1 } })
  })

  it('is not capped when the room has no cap (the default) or lets everyone through', async () => {
    const edge = await testEdge({
      rooms: [room({ joinsPerNetworkPerMinute: undefined }), room({ id: 'open', paths: ['/open'], mode: 'passthrough' })],
      originUrl: origin.url,
      clock: new ManualClock(T0),
    })
    built.push(edge)
    const app = withSocketAddress(edge.app)
    for (let i = 0; i < 10; i++) expect((await join(app, '198.51.100.1')).res.status).toBe(200)
    for (let i = 0; i < 10; i++) expect((await new Visitor('http://shop.test', '198.51.100.1').request(app, '/open')).status).not.toBe(429)
  })
})

describe('two edges share the count', () => {
  const worker = workerRuntime(() => inject('redisUrl'))
  for (const [a, b, db] of [
    [nodeRuntime, nodeRuntime, 980],
    [nodeRuntime, worker, 981],
  ] as const) {
    it(`a ${a.name} edge and a ${b.name} edge count one network together, and each admin view sees the other’s refusals`, async () => {
      const redisUrl = `${inject('redisUrl')}/${db}`
      const signingKeys = [await generateSigningJwk(`cap-${db}`)]
      const pair = [
        await a.start({
          rooms: [room({ joinsPerNetworkPerMinute: 4 })],
          originUrl: origin.url,
          redisUrl,
          signingKeys,
          adminTokens: `admin:${ADMIN}`,
        }),
        await b.start({
          rooms: [room({ joinsPerNetworkPerMinute: 4 })],
          originUrl: origin.url,
          redisUrl,
          signingKeys,
          adminTokens: `admin:${ADMIN}`,
        }),
      ]
      edges.push(...pair)
      const [one, two] = pair as [TestEdge, TestEdge]
      const clock = sharedClock(pair.map((e) => e.clock))
      await clock.set(T0 + 5000)
      expect((await join(one.app, '198.51.100.1')).res.status).toBe(200)
      expect((await join(two.app, '198.51.100.2')).res.status).toBe(200)
      expect((await join(one.app, '198.51.100.3')).res.status).toBe(200)
      expect((await join(two.app, '198.51.100.4')).res.status).toBe(200)
      expect((await join(one.app, '198.51.100.5')).res.status).toBe(429)
      expect((await join(two.app, '198.51.100.6')).res.status).toBe(429)
      expect((await join(two.app, '198.51.100.7')).res.status).toBe(429)
      // A second on, a request makes each edge send what it counted (with its rooms' reload).
      await clock.advance(1000)
      for (const e of pair) {
        await join(e.app, '203.0.113.1')
        await e.settled()
      }
      for (const e of pair) expect((await adminStats(e.app)).botDefence.refused.total).toEqual({ network: 3, pow: 0 })
    })
  }
})

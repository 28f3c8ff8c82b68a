// The waiting room over HTTP on Node: what only a Node test can see (the edge's own store object,
// a runtime that reports TLS), then the HTTP behaviour suite shared with the Worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { createEdgeApp } from '../src/http/app.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import { edgeAccessContract } from './contract/edge-access.js'
import { edgeBypassContract } from './contract/edge-bypass.js'
import { edgeHttpContract, room } from './contract/edge-http.js'
import { edgeHumanCheckContract } from './contract/edge-human-check.js'
import { edgeOperationsContract } from './contract/edge-operations.js'
import { edgePagesContract } from './contract/edge-pages.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { nodeRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
let origin: OriginServer
const edges: Edge[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  for (const e of edges) await e.close()
  await origin.close()
})

async function edgeWith(rooms: Record<string, unknown>[], clock = new ManualClock(T0)) {
  const edge = await testEdge({ rooms, originUrl: origin.url, clock })
  edges.push(edge)
  return { edge, app: edge.app, clock }
}

/** Counts store calls, to show which paths touch the store. */
function countCalls(store: QueueStore) {
  const counts = { poll: 0, renew: 0 }
  const poll = store.poll.bind(store)
  const renew = store.renew.bind(store)
  store.poll = (i) => {
    counts.poll++
    return poll(i)
  }
  store.renew = (i) => {
    counts.renew++
    return renew(i)
  }
  return counts
}

describe('queue page and status', () => {
  it('marks cookies Secure when the runtime says the visitor came over TLS, not when the request line claims it', async () => {
    const { edge } = await edgeWith([room()])
    const overTls = createEdgeApp({ ...edge.deps, scheme: () => 'https' })
    const res = await new Visitor('https://shop.test').request(overTls, '/tickets')
    expect(res.headers.getSetCookie().length).toBeGreaterThan(0)
    for (const c of res.headers.getSetCookie()) expect(c).toMatch(/; Secure/)
    const claimed = await new Visitor('https://shop.test').request(edge.app, '/tickets')
    for (const c of claimed.headers.getSetCookie()) expect(c).not.toMatch(/Secure/)
  })
})

describe('admission', () => {
  it('admitted requests cost no store call until half the session has gone; then one renewal', async () => {
    const { app, clock, edge } = await edgeWith([room({ sessionDurationSeconds: 100 })])
    const counts = countCalls(edge.deps.queue)
    const v = new Visitor()
    await v.request(app, '/tickets')
    expect(counts).toEqual({ poll: 1, renew: 0 })
    const before = v.cookies.get('anteroom_a_sale')
    for (let i = 0; i < 49; i++) {
      clock.advance(1000)
      expect((await v.request(app, '/tickets/page')).status).toBe(200)
    }
    expect(counts).toEqual({ poll: 1, renew: 0 })
    clock.advance(1000)
    await v.request(app, '/tickets/page')
    expect(counts).toEqual({ poll: 1, renew: 1 })
    expect(v.cookies.get('anteroom_a_sale')).not.toBe(before)
    for (let i = 0; i < 10; i++) await v.request(app, '/tickets/page')
    expect(counts).toEqual({ poll: 1, renew: 1 })
  })
})

describe('store calls (Node only: counted on the edge store object)', () => {
  it('a closed room never calls the store', async () => {
    const closed = await edgeWith([room({ mode: 'closed' })])
    const counts = countCalls(closed.edge.deps.queue)
    expect(await (await new Visitor().request(closed.app, '/tickets')).text()).toContain('This sale is closed')
    expect(await new Visitor().status(closed.app, 'sale')).toMatchObject({ state: 'closed' })
    expect(counts).toEqual({ poll: 0, renew: 0 })
  })
})

// The HTTP behaviour shared with the Worker (test/worker.test.ts runs the same suite in workerd).
edgeHttpContract(nodeRuntime)
edgeOperationsContract(nodeRuntime)
edgePagesContract(nodeRuntime)
edgeBypassContract(nodeRuntime)
edgeHumanCheckContract(nodeRuntime)
edgeAccessContract(nodeRuntime)

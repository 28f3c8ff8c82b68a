// The edge's HTTP behaviour, as a visitor and the origin see it, run against each runtime:
// test/edge.test.ts runs it on Node, test/worker.test.ts in workerd. The same requests must get the
// same answers: the queue, admission at the configured rates in FIFO order, admission tokens that
// verify through the JWKS, proxying, bad input, and what happens when Redis goes away.
// Time is the runtime's manual clock; nothing sleeps except while waiting for a real Redis restart.
// The tests are in test/contract/edge-http/, one file a topic; this file starts the echo origin and
// the edges they ask for, and closes them.
import { afterAll, beforeAll } from 'vitest'
import { type OriginServer, startOrigin } from '../support/origin-server.js'
import type { EdgeRuntime, StartOptions, TestEdge } from '../support/runtimes.js'
import { origin_handler, room } from './edge-http/common.js'
import { lateEdgeContract } from './edge-http/late-edge.js'
import { queueContract } from './edge-http/queue.js'
import { routingContract } from './edge-http/routing.js'
import { soldOutContract } from './edge-http/sold-out.js'
import { storeErrorsContract } from './edge-http/store-errors.js'
import { waysAroundContract } from './edge-http/ways-around.js'

/** What each topic's tests need of the contract: the runtime, an edge of given rooms, the echo origin. */
export interface EdgeHttpContext {
  runtime: EdgeRuntime
  edgeWith(rooms: Record<string, unknown>[], o?: Partial<StartOptions>): Promise<TestEdge>
  /** The echo origin, once started (in beforeAll). */
  readonly origin: OriginServer
}

export { room }

export function edgeHttpContract(runtime: EdgeRuntime): void {
  let origin: OriginServer
  const edges: TestEdge[] = []

  beforeAll(async () => {
    origin = await startOrigin(origin_handler)
  })
  afterAll(async () => {
    for (const e of edges) await e.close()
    await origin.close()
  })

  async function edgeWith(rooms: Record<string, unknown>[], o: Partial<StartOptions> = {}) {
    const edge = await runtime.start({ rooms, originUrl: origin.url, ...o })
    edges.push(edge)
    return edge
  }

  const c: EdgeHttpContext = {
    runtime,
    edgeWith,
    get origin() {
      return origin
    },
  }
  queueContract(c)
  soldOutContract(c)
  routingContract(c)
  waysAroundContract(c)
  storeErrorsContract(c)
  lateEdgeContract(c)
}

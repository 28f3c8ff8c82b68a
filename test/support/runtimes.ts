// The edge under test on either runtime, behind one interface, so the HTTP behaviour suite
// (test/contract/edge-http.ts) runs unchanged on Node and in workerd.
//   node:   createEdgeApp in this process (app.request), embedded store or Redis, a ManualClock.
//   worker: the Worker bundle in workerd (Miniflare), Redis through StoreRelay Durable Objects, and
//           the test entry's clock, moved over HTTP.

import { Redis } from 'ioredis'
import type { JWK } from 'jose'
import { inject } from 'vitest'
import { RedisClaimGate } from '../../src/adapters/redis/claim-gate.js'
import { RedisQueueStore } from '../../src/adapters/redis/queue-store.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import type { Edge } from '../../src/entry/build.js'
import type { ClaimGate } from '../../src/ports/claim-gate.js'
import type { QueueStore } from '../../src/ports/queue-store.js'
import { ManualClock } from './clock.js'
import { TEST_SECRET, testEdge } from './edge.js'
import { startWorker, WorkerClock } from './worker.js'

/** Anything that answers a Request for a full URL: a Hono app, or the Worker in workerd. */
export interface RequestTarget {
  request(url: string, init?: RequestInit): Response | Promise<Response>
}

export interface TestClock {
  now(): number
  set(t: number): Promise<void>
  advance(ms: number): Promise<void>
}

export interface TestEdge {
  app: RequestTarget
  /** Where a browser can reach the edge over HTTP (the Worker's workerd listener; unset on Node, which runs in-process). */
  url?: string
  clock: TestClock
  /** The store the edge uses (the same Redis, seen from the test), for stats and ending sessions. */
  queue: QueueStore
  /** The claim gate the edge reads events' counts from (the same Redis, seen from the test): the test plays the origin. */
  gate: ClaimGate
  /** Resolves when a settings reload that a request started has finished. */
  settled(): Promise<void>
  /**
   * What the edge logged: on Node every log call as made (event and fields as JSON, before any level or
   * scrubbing), on the Worker its output (JSON lines at ANTEROOM_LOG_LEVEL, scrubbed of configured secrets).
   */
  logs(): string
  close(): Promise<void>
}

export interface StartOptions {
  rooms: Record<string, unknown>[]
  originUrl: string
  /** Unset: the runtime's default store (Node: the embedded store; Worker: a fresh database of the test Redis). */
  redisUrl?: string
  signingKeys?: JWK[]
  t0?: number
  /** ANTEROOM_ADMIN_TOKENS: "name:token,...". */
  adminTokens?: string
  /** ANTEROOM_MAX_BODY_BYTES. */
  maxBodyBytes?: number
  /** More ANTEROOM_* settings, on either runtime (ANTEROOM_METRICS_TOKEN, ...). */
  env?: Record<string, string>
}

export interface EdgeRuntime {
  name: 'node' | 'worker'
  start(o: StartOptions): Promise<TestEdge>
}

export const T0 = 1_800_000_000_000

/** Moves several edges' clocks together: edges of one sale share one time. */
export function sharedClock(clocks: TestClock[]): TestClock {
  const first = clocks[0] as TestClock
  return {
    now: () => first.now(),
    async set(t) {
      for (const c of clocks) await c.set(t)
    },
    async advance(ms) {
      await this.set(first.now() + ms)
    },
  }
}

class NodeClock implements TestClock {
  constructor(readonly manual: ManualClock) {}
  now() {
    return this.manual.now()
  }
  async set(t: number) {
    this.manual.set(t)
  }
  async advance(ms: number) {
    this.manual.advance(ms)
  }
}

/** The header a test visitor names its address with (test/support/visitor.ts); read only here and in test/worker/entry.ts. */
export const TEST_IP_HEADER = 'x-test-ip'

/**
 * The Node edge as a client on a socket reaches it: the test's address goes where @hono/node-server
 * puts the socket (c.env.incoming.socket), which is all the Node entry reads (src/entry/build.ts).
 * The header itself is taken off; production never looks at it.
 */
export function withSocketAddress(app: Edge['app']): RequestTarget {
  return {
    request(url, init = {}) {
      const headers = new Headers(init.headers)
      const remoteAddress = headers.get(TEST_IP_HEADER) ?? undefined
      headers.delete(TEST_IP_HEADER)
      return app.request(url, { ...init, headers }, { incoming: { socket: { remoteAddress } } })
    },
  }
}

export const nodeRuntime: EdgeRuntime = {
  name: 'node',
  async start(o) {
    const manual = new ManualClock(o.t0 ?? T0)
    const lines: string[] = []
    const edge = await testEdge({
      log: (event, fields) => lines.push(JSON.stringify({ event, ...fields })),
      rooms: o.rooms,
      originUrl: o.originUrl,
      redisUrl: o.redisUrl,
      clock: manual,
      signingKeys: o.signingKeys,
      adminTokens: o.adminTokens,
      maxBodyBytes: o.maxBodyBytes,
      env: o.env,
    })
    return {
      app: withSocketAddress(edge.app),
      clock: new NodeClock(manual),
      queue: edge.deps.queue,
      gate: edge.gate,
      settled: () => edge.deps.rooms.settled(),
      logs: () => lines.join('\n'),
      close: () => edge.close(),
    }
  },
}

/**
 * Each Worker edge gets a database of its own in the test Redis (started with 1,000), so rooms of the
 * same name never meet. Test files run in parallel, so the number comes from Redis itself (INCR in
 * database 0). Databases 900 and up are for tests that name theirs.
 */
export async function freshDb(redisUrl: string): Promise<number> {
  const counter = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  try {
    const n = await counter.incr('anteroom-test:next-db')
    if (n >= 900) throw new Error('the test Redis ran out of databases for Worker edges')
    return n
  } finally {
    counter.disconnect()
  }
}

export function workerRuntime(redisUrl: () => string): EdgeRuntime {
  return {
    name: 'worker',
    async start(o) {
      const url = o.redisUrl ?? `${redisUrl()}/${await freshDb(redisUrl())}`
      const worker = await startWorker({
        script: inject('workerScript'),
        vars: {
          ANTEROOM_ROOMS: JSON.stringify(o.rooms),
          ANTEROOM_ORIGIN: o.originUrl,
          ANTEROOM_REDIS_URL: url,
          ANTEROOM_QUEUE_SECRET: TEST_SECRET,
          ANTEROOM_SIGNING_KEYS: JSON.stringify(o.signingKeys ?? [await testSigningKey()]),
          ANTEROOM_HISTORY_SAMPLE_SECONDS: '0',
          ANTEROOM_ADMIN_TOKENS: o.adminTokens,
          ANTEROOM_MAX_BODY_BYTES: o.maxBodyBytes?.toString(),
          ...o.env,
        },
      })
      const clock = new WorkerClock(worker, o.t0 ?? T0)
      await clock.set(o.t0 ?? T0)
      const redis = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false })
      redis.on('error', () => {})
      // Without an offline queue a command sent before the connection is up fails at once, so wait for it
      // on a plain Redis URL (the Sentinel and Cluster URLs of the HA tests are the Worker's, not ioredis').
      if (url.startsWith('redis://') && redis.status !== 'ready') {
        await new Promise((ready) => {
          redis.once('ready', ready)
          setTimeout(ready, 5000).unref()
        })
      }
      return {
        app: worker.app,
        url: worker.url,
        clock,
        queue: new RedisQueueStore(redis, luaScripts()),
        gate: new RedisClaimGate(redis, luaScripts()),
        // A reload a request started runs after its response (ctx.waitUntil): the test entry says when it is done.
        settled: async () => {
          await (await worker.request('/__test/settled')).json()
        },
        logs: () => worker.output(),
        async close() {
          redis.disconnect()
          await worker.close()
        },
      }
    },
  }
}

let key: Promise<JWK> | undefined
/** One signing key per test process: a Worker needs keys set once many isolates share Redis. */
function testSigningKey(): Promise<JWK> {
  key ??= import('../../src/core/admission-token.js').then((m) => m.generateSigningJwk(`test-${Date.now().toString(36)}`))
  return key
}

declare module 'vitest' {
  export interface ProvidedContext {
    workerScript: string
    workerProductionScript: string
  }
}

// Builds a real edge for tests: real config parsing, real stores (memory or Redis), a real origin.
import { loadConfig } from '../../src/config/index.js'
import { buildEdge, type Edge } from '../../src/entry/build.js'
import type { EdgeDeps } from '../../src/http/app.js'
import type { Clock } from '../../src/ports/clock.js'

export const TEST_SECRET = 'test-queue-secret-0123456789abcdef'

export interface TestEdgeOptions {
  rooms: Record<string, unknown>[]
  originUrl: string
  redisUrl?: string
  clock?: Clock
  signingKeys?: unknown[]
  /** ANTEROOM_ADMIN_TOKENS: "name:token,name:token". */
  adminTokens?: string
  /** ANTEROOM_MAX_BODY_BYTES. */
  maxBodyBytes?: number
  /** The edge's structured log (admin sign-in failures, store errors, ...). */
  log?: EdgeDeps['log']
  /** More ANTEROOM_* settings (ANTEROOM_METRICS_TOKEN, ANTEROOM_METRICS, ...). */
  env?: Record<string, string | undefined>
}

export async function testEdge(o: TestEdgeOptions): Promise<Edge> {
  const config = loadConfig({
    ANTEROOM_ROOMS: JSON.stringify(o.rooms),
    ANTEROOM_QUEUE_SECRET: TEST_SECRET,
    ANTEROOM_REDIS_URL: o.redisUrl,
    ANTEROOM_SIGNING_KEYS: o.signingKeys ? JSON.stringify(o.signingKeys) : undefined,
    ANTEROOM_ADMIN_TOKENS: o.adminTokens,
    ANTEROOM_MAX_BODY_BYTES: o.maxBodyBytes?.toString(),
    ...o.env,
  })
  return buildEdge(config, { originUrl: o.originUrl, clock: o.clock, log: o.log })
}

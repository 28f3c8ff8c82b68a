// What the edge is built from (EdgeDeps, handed in by an entry point) and what each of its steps
// reads: the deps with the clocks, the log and the limits worked out once per app.
import type { Context, Hono } from 'hono'
import type { AdmissionTokens } from '../core/admission-token.js'
import { BoundedMap } from '../core/bounded-map.js'
import type { Log } from '../core/log.js'
import type { MetricsExporter } from '../core/metrics.js'
import type { PowChallenges } from '../core/pow.js'
import type { QueueTokens } from '../core/queue-token.js'
import type { Clock } from '../ports/clock.js'
import type { DefenceStore } from '../ports/defence-store.js'
import type { Origin } from '../ports/origin.js'
import type { QueueStore } from '../ports/queue-store.js'
import type { RoomDirectory } from '../rooms/directory.js'
import type { AccessDeps } from './access.js'
import type { Draws } from './draws.js'
import type { Guards } from './guards.js'
import type { EdgeMeters } from './metrics.js'
import type { PageTemplates } from './page-templates.js'
import { POW_PAGE_SCRIPT } from './pow-scripts.js'
import type { Refusals } from './refusals.js'
import type { RuntimeReading } from './request.js'
import { requestIdOf } from './request-id.js'

export type { Log } from '../core/log.js'

/** What an edge is made of (src/entry/assemble.ts builds it); how it reads a request from its runtime is RuntimeReading's. */
export interface EdgeDeps extends RuntimeReading {
  queue: QueueStore
  rooms: RoomDirectory
  queueTokens: QueueTokens
  /** Proof-of-work challenges, for rooms with powDifficulty > 0. */
  pow: PowChallenges
  admissionTokens: AdmissionTokens
  origin: Origin
  /** Scheduled rooms' draws (core/draw.ts). */
  draws: Draws
  /** The cap on new places per network (join-cap.ts). */
  defence: DefenceStore
  /** The refused-joins count (refusals.ts): a defence that refuses a join calls refusals.note(room, reason). */
  refusals: Refusals
  /** Bypass rules and the human check (bypass.ts, human-check.ts); unset: no rule matches, and no check can be made. */
  guards?: Guards
  /** Access codes and invite links (access.ts): unset, `?code=` is never redeemed. */
  access?: AccessDeps
  /** The page templates the rooms use (page-templates.ts); unset: every room has the built-in page. */
  pages?: PageTemplates
  /** Tests pass a manual clock; it then also drives the store. Production leaves it out. */
  clock?: Clock
  /** The largest request body passed to the origin, bytes (1 MiB when unset); larger ones get 413. */
  maxBodyBytes?: number
  log?: Log
  /** The edge's metric cells (src/http/metrics.ts); unset: metrics are off, and nothing is counted. */
  meters?: EdgeMeters
  /** Serves GET /_anteroom/metrics: the exporter, and the bearer tokens that may read it (the metrics token and the admin tokens). */
  metrics?: { exporter: MetricsExporter; tokens: readonly string[] }
  /** A header whose value is the request's id in log lines (the load balancer's X-Request-Id, cf-ray); unset: ids are made. */
  requestIdHeader?: string
  /** The admin API and UI, mounted under /_anteroom (see admin/routes.ts). */
  // biome-ignore lint/suspicious/noExplicitAny: any Hono sub-app with its own variables
  admin?: Hono<any>
}

export interface EdgeContext {
  deps: EdgeDeps
  /** The edge's clock, ms: token expiry and open admissions. */
  now(): number
  /** The clock handed to the store: the test's, or undefined so that the store uses its own (Redis TIME). */
  storeNow(): number | undefined
  log: Log
  /** The request's id for log lines (request-id.ts). */
  requestId(c: Context): string
  maxBodyBytes: number
  /** The challenge page script's hash (src/http/pow.ts). */
  powScriptHash: Promise<string>
  /** Sessions from before the store forgot a room that this edge has re-registered (by jti). */
  reregistered: { has(jti: string): boolean }
  reregister(jti: string): void
}

async function sha256Base64(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  let s = ''
  for (const b of new Uint8Array(digest)) s += String.fromCharCode(b)
  return btoa(s)
}

/** How many re-registered sessions an edge remembers; past that it starts again (a session re-registers at most twice). */
const REREGISTERED_MAX = 200_000

export function edgeContext(deps: EdgeDeps): EdgeContext {
  const reregistered = new BoundedMap<string, true>(REREGISTERED_MAX)
  return {
    reregistered,
    reregister(jti) {
      reregistered.set(jti, true)
    },
    deps,
    now: () => deps.clock?.now() ?? Date.now(),
    storeNow: () => deps.clock?.now(),
    log: deps.log ?? (() => {}),
    requestId: (c) => requestIdOf(c, deps.requestIdHeader),
    maxBodyBytes: deps.maxBodyBytes ?? 1024 * 1024,
    powScriptHash: sha256Base64(POW_PAGE_SCRIPT),
  }
}

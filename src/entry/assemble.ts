// Puts an edge together from parts that the runtime picked: stores, origin, MAC, signing keys.
// Node (build.ts) and the Worker (worker/edge.ts) both end here, so both serve the same app.
import type { Context } from 'hono'
import { AdminAuth } from '../../admin/auth.js'
import { type AdminAssets, createAdminRoutes } from '../../admin/routes.js'
import { fetchSiteVerifier } from '../adapters/fetch/siteverify.js'
import { webCryptoDigest } from '../adapters/webcrypto/digest.js'
import { webCryptoDigests } from '../adapters/webcrypto/digests.js'
import { checkRoomGuards } from '../config/guards.js'
import type { Config } from '../config/index.js'
import { AccessTokens } from '../core/access.js'
import { AdmissionTokens, generateSigningJwk, importSigningKeys } from '../core/admission-token.js'
import { type MetricRegistry, type MetricsExporter, QUEUE_WAIT_BUCKETS, textExporter } from '../core/metrics.js'
import { PowChallenges } from '../core/pow.js'
import { QueueTokens } from '../core/queue-token.js'
import { AnalyticsSampler } from '../http/analytics.js'
import { createEdgeApp, type EdgeDeps } from '../http/app.js'
import { Draws } from '../http/draws.js'
import { createGuards } from '../http/guards.js'
import { EdgeMeters } from '../http/metrics.js'
import { PageTemplates } from '../http/page-templates.js'
import { Refusals } from '../http/refusals.js'
import { requestIdOf } from '../http/request-id.js'
import type { Clock } from '../ports/clock.js'
import type { Digest, Mac } from '../ports/crypto.js'
import type { Origin } from '../ports/origin.js'
import type { Resolver } from '../ports/resolver.js'
import type { Stores } from '../ports/stores.js'
import { RoomDirectory } from '../rooms/directory.js'

export interface EdgeParts extends Stores {
  config: Config
  origin: Origin
  mac: Mac
  /** Checks proof of work; WebCrypto's when unset (Node passes node:crypto's, about 30 times faster). */
  digest?: Digest
  adminAssets: AdminAssets
  clock?: Clock
  log?: EdgeDeps['log']
  clientIp: EdgeDeps['clientIp']
  scheme: (c: Context) => 'http' | 'https'
  readHeaders?: EdgeDeps['readHeaders']
  lastReport?: () => Promise<string | undefined>
  /** Answers crawler checks' DNS questions (Node: node:dns; Worker: DNS over HTTPS); unset: crawler rules let nobody past. */
  resolver?: Resolver
  /** Writes the metrics (Node: prom-client's registry); the text format of core/metrics.ts when unset. */
  exporter?: (registry: MetricRegistry) => MetricsExporter
}

export interface AssembledEdge {
  app: ReturnType<typeof createEdgeApp>
  deps: EdgeDeps
  rooms: RoomDirectory
  /** Records each room's minute for the analytics: with the reload, and from the runtime's timer or cron. */
  analytics: AnalyticsSampler
}

export async function assembleEdge(p: EdgeParts): Promise<AssembledEdge> {
  const now = p.clock ? () => p.clock?.now() ?? Date.now() : Date.now
  // The metric cells the edge bumps as it serves (src/http/metrics.ts), unless metrics are off.
  const meters = p.config.metrics ? new EdgeMeters(p.config.metricsTimeEvery) : undefined
  // The rooms, watched once a second: ended sessions, the line, and a linked event's stock (the gate).
  const rooms = new RoomDirectory(p.settings, p.config.rooms, 1000, now, {
    queue: p.queue,
    gate: p.gate,
    storeNow: () => p.clock?.now(),
    log: p.log,
    onStoreCall: meters === undefined ? undefined : (call, seconds, ok) => meters.storeCall(call, seconds, ok),
  })
  meters?.watch(rooms)
  // Refused joins are counted here and sent to the store with the rooms' once-a-second reload.
  const refusals = new Refusals(
    p.defence,
    now,
    () => p.clock?.now(),
    1000,
    meters === undefined ? undefined : (room, reason) => meters.room(room).refused[reason].value++,
  )
  rooms.alsoOnReload(() => refusals.flush())
  // Each room's minute for the analytics, with this edge's admissions by time in queue (its meters).
  const analytics = new AnalyticsSampler({
    store: p.analytics,
    rooms,
    bounds: QUEUE_WAIT_BUCKETS,
    queueWait: (room) => meters?.room(room).queueWait,
    now,
    storeNow: () => p.clock?.now(),
    everyMs: p.config.analyticsSampleSeconds * 1000,
  })
  await rooms.start()
  // From the second reload on: the first reads a linked event's stock alongside its tasks, and a sample
  // taken then would find the stock unknown.
  rooms.alsoOnReload(() => analytics.sample())
  // The page templates the rooms name, brought up to date with every reload (one revisions call).
  const pages = new PageTemplates(p.templates, p.config.templateStyleOrigins, p.log)
  rooms.alsoOnReload(() => pages.reload(rooms.rooms()))
  await pages.reload(rooms.rooms()).catch(() => {})
  // Bypass rules and the human check (src/http/guards.ts): their secrets as MACs, DNS, siteverify, counts.
  const hc = p.config.humanCheck
  const guards = createGuards({
    config: p.config,
    mac: p.mac,
    resolver: p.resolver,
    siteVerifier: hc === undefined ? undefined : fetchSiteVerifier({ url: hc.url, secret: hc.secret, timeoutMs: hc.timeoutMs }),
    now,
    registry: meters?.registry,
    log: p.log,
  })
  const keys = await importSigningKeys(p.config.signingKeys ?? [await generateSigningJwk(`dev-${Date.now().toString(36)}`)])
  // Access codes' digests and invite links, under the queue secret (core/access.ts).
  const access = { store: p.access, tokens: new AccessTokens(p.mac) }
  const admin = createAdminRoutes({
    auth: new AdminAuth(p.config.adminUsers, p.mac, p.adminSessions),
    settings: p.settings,
    queue: p.queue,
    audit: p.audit,
    rooms,
    refusals,
    guards,
    // A header rule's secret and a room's human check must exist in this deployment's config.
    checkSettings: (room, before) => checkRoomGuards(room, p.config, '', 'ERR_SETTINGS_INVALID', before),
    analytics: p.analytics,
    access,
    templates: { store: p.templates, styleOrigins: p.config.templateStyleOrigins },
    assets: p.adminAssets,
    clock: p.clock,
    secure: (c) => p.config.secureCookies || p.scheme(c) === 'https',
    lastReport: p.lastReport,
    clientIp: p.clientIp,
    log: p.log,
    requestId: (c) => requestIdOf(c, p.config.requestIdHeader),
  })
  const deps: EdgeDeps = {
    queue: p.queue,
    rooms,
    queueTokens: new QueueTokens(p.mac),
    pow: new PowChallenges(p.mac, p.digest ?? webCryptoDigest),
    admissionTokens: new AdmissionTokens({ keys, issuer: p.config.issuer, audience: p.config.audience }),
    origin: p.origin,
    draws: new Draws(p.mac, webCryptoDigests()),
    defence: p.defence,
    pages,
    guards,
    refusals,
    access,
    clock: p.clock,
    secureCookies: p.config.secureCookies,
    maxBodyBytes: p.config.maxBodyBytes,
    clientIp: p.clientIp,
    scheme: p.scheme,
    readHeaders: p.readHeaders,
    log: p.log,
    requestIdHeader: p.config.requestIdHeader,
    meters,
    metrics:
      meters === undefined
        ? undefined
        : {
            exporter: (p.exporter ?? textExporter)(meters.registry),
            tokens: [...(p.config.metricsToken === undefined ? [] : [p.config.metricsToken]), ...p.config.adminUsers.map((u) => u.token)],
          },
    admin,
  }
  return { app: createEdgeApp(deps), deps, rooms, analytics }
}

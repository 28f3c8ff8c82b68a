// What the bypass rules and the human check work with at the edge (EdgeDeps.guards), made once by the
// assembly (src/entry/assemble.ts) from the config and the runtime's parts: the bypass secrets as MACs
// (the secrets themselves are not kept here), the crawler verifier on the runtime's resolver, the
// human check's provider, the shadow lane's tokens, the counts, and the bypass admissions signed lately.
import type { GuardConfig } from '../config/guards.js'
import { BoundedMap } from '../core/bounded-map.js'
import { BYPASS_SECRET_DOMAIN } from '../core/bypass.js'
import { type CrawlerCacheOptions, CrawlerVerifier } from '../core/crawlers.js'
import type { HumanCheckWidget } from '../core/human-check.js'
import type { Log } from '../core/log.js'
import type { MetricRegistry } from '../core/metrics.js'
import { ShadowTokens } from '../core/shadow.js'
import type { Mac } from '../ports/crypto.js'
import type { Resolver } from '../ports/resolver.js'
import type { SiteVerifier } from '../ports/site-verifier.js'
import { GuardMeters } from './guard-metrics.js'

/** Bypass admissions remembered (room, rule, client); past that the map starts over. */
const BYPASS_TOKENS_KEPT = 10_000

export interface Guards {
  /** The deployment's MAC (under the queue secret): header values are compared as MACs, and bypass visitor ids made with it. */
  mac: Mac
  /** The MAC of a configured bypass secret (BYPASS_SECRET_DOMAIN), by name; undefined for a name this edge lacks. */
  secretMac(name: string): string | undefined
  /** Names of the configured bypass secrets (the admin view offers them). */
  secretNames: readonly string[]
  /** Undefined without a resolver: crawler rules then let nobody past. */
  crawlers: CrawlerVerifier | undefined
  /** Undefined without a provider (ANTEROOM_HUMAN_CHECK_*): a room's check then answers by its humanCheckOnError. */
  humanCheck: { verifier: SiteVerifier; widget: HumanCheckWidget } | undefined
  shadow: ShadowTokens
  meters: GuardMeters
  /** Bypass admissions signed lately, by room, rule and client: one ES256 signature serves a client for half its life. */
  bypassTokens: BoundedMap<string, { token: string; visitor: string; renewAt: number }>
}

export interface GuardParts {
  config: GuardConfig
  mac: Mac
  /** The runtime's DNS (Node: node:dns; Worker: DNS over HTTPS). */
  resolver?: Resolver
  siteVerifier?: SiteVerifier
  now: () => number
  /** The edge's metric registry, when metrics are on. */
  registry?: MetricRegistry
  log?: Log
  crawlerCache?: CrawlerCacheOptions
}

export function createGuards(p: GuardParts): Guards {
  const macs = new Map(
    Object.entries(p.config.bypassSecrets).map(([name, secret]) => [name, p.mac.sign(`${BYPASS_SECRET_DOMAIN}${secret}`)]),
  )
  const meters = new GuardMeters(p.registry)
  const log = p.log ?? (() => {})
  const crawlers =
    p.resolver === undefined
      ? undefined
      : new CrawlerVerifier(p.resolver, p.now, p.crawlerCache, (verdict, address, lookedUp) => {
          meters.crawlerChecks[verdict.outcome].value++
          if (!lookedUp) return
          meters.crawlerLookups[verdict.outcome].value++
          // One line per verification (a cached answer is not logged again): the address, and what DNS said.
          if (verdict.outcome === 'verified') log('crawler_verified', { address, crawler: verdict.crawler, host: verdict.host })
          else if (verdict.outcome === 'refused') log('crawler_refused', { address, reason: verdict.reason, host: verdict.host })
          else log('crawler_check_failed', { address, reason: verdict.reason })
        })
  const hc = p.config.humanCheck
  return {
    mac: p.mac,
    secretMac: (name) => macs.get(name),
    secretNames: [...macs.keys()].sort(),
    crawlers,
    humanCheck:
      hc === undefined || p.siteVerifier === undefined
        ? undefined
        : { verifier: p.siteVerifier, widget: { siteKey: hc.siteKey, scriptUrl: hc.scriptUrl } },
    shadow: new ShadowTokens(p.mac),
    meters,
    bypassTokens: new BoundedMap(BYPASS_TOKENS_KEPT),
  }
}

// Search crawlers a bypass rule may let past the line (core/bypass.ts), and how one is told from a
// client that only says it is one. A User-Agent is written by the client, so it is only a hint that
// starts the check: the client's address must have a PTR record under one of the crawler's published
// domains (googlebot.com, search.msn.com, ...), and that name's A or AAAA records must include the
// address again (forward confirmation: anyone can write a PTR record for their own addresses, nobody
// an A record in googlebot.com). Answers are cached per address with a lifetime by outcome, in a
// bounded map; at most a few lookups run at once, so a flood of forged User-Agents costs the edge a
// bounded number of DNS questions and never a place in line for anyone.
import type { Lookup, Resolver } from '../ports/resolver.js'
import { addressKey } from './cidr.js'

export interface CrawlerSpec {
  /** The name rules use. */
  name: string
  label: string
  /** The User-Agent of its requests: only a hint that the address should be checked. */
  userAgent: RegExp
  /**
   * The domains its operator publishes for reverse DNS. Not every name of the company: Google's
   * googleusercontent.com is where anyone's cloud machine gets its PTR record, so it is left out.
   */
  domains: readonly string[]
  /** Where the operator says so. */
  documented: string
}

export const CRAWLERS: readonly CrawlerSpec[] = [
  {
    name: 'googlebot',
    label: 'Googlebot (and Google’s other crawlers)',
    userAgent: /Googlebot|Google-InspectionTool|GoogleOther|Storebot-Google|AdsBot-Google|Mediapartners-Google/i,
    domains: ['googlebot.com', 'google.com'],
    documented: 'https://developers.google.com/search/docs/crawling-indexing/verifying-googlebot',
  },
  {
    name: 'bingbot',
    label: 'Bingbot',
    userAgent: /bingbot|msnbot|adidxbot|BingPreview/i,
    domains: ['search.msn.com'],
    documented: 'https://www.bing.com/webmasters/help/how-to-verify-bingbot-3905dc26',
  },
  {
    name: 'applebot',
    label: 'Applebot',
    userAgent: /Applebot/i,
    domains: ['applebot.apple.com'],
    documented: 'https://support.apple.com/en-us/119829',
  },
  {
    name: 'yandexbot',
    label: 'YandexBot',
    userAgent: /YandexBot|YandexImages|YandexMobileBot|YandexVideo|YandexMedia|YandexAccessibilityBot|YandexRenderResourcesBot/i,
    domains: ['yandex.ru', 'yandex.net', 'yandex.com'],
    documented: 'https://yandex.com/support/webmaster/robot-workings/check-yandex-robots.html',
  },
  {
    name: 'baiduspider',
    label: 'Baiduspider',
    userAgent: /Baiduspider/i,
    domains: ['baidu.com', 'baidu.jp'],
    documented: 'https://help.baidu.com/question?prod_id=99&class=476&id=2996',
  },
]

export const CRAWLER_NAMES: readonly string[] = CRAWLERS.map((c) => c.name)

const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/

/** A PTR name as compared: lower case, no final dot; undefined unless it is a plain host name. */
export function hostOf(name: string): string | undefined {
  const host = name.trim().toLowerCase().replace(/\.$/, '')
  return HOST.test(host) ? host : undefined
}

/** The crawler whose published domains hold this host, strictly below one (the domain itself is nobody's crawler). */
export function crawlerOfHost(host: string): CrawlerSpec | undefined {
  return CRAWLERS.find((c) => c.domains.some((d) => host.endsWith(`.${d}`)))
}

/** The crawlers whose User-Agent the header names. */
export function hintedCrawlers(userAgent: string | undefined): CrawlerSpec[] {
  if (userAgent === undefined || userAgent === '') return []
  return CRAWLERS.filter((c) => c.userAgent.test(userAgent))
}

export type CrawlerVerdict =
  | { outcome: 'verified'; crawler: string; host: string }
  /** The address is no crawler's: no PTR record, a name under no crawler's domains, or a name that does not lead back (spoofed). */
  | { outcome: 'refused'; reason: string; host?: string }
  /** DNS did not answer (a timeout, a failing server): nothing is known, and nobody is let past on it. */
  | { outcome: 'error'; reason: string }

export type CrawlerOutcome = CrawlerVerdict['outcome']
export const CRAWLER_OUTCOMES: readonly CrawlerOutcome[] = ['verified', 'refused', 'error']

/** At most this many PTR names of one address are followed. */
const MAX_PTR_NAMES = 4

/** Reverse, then forward: whether the address belongs to a crawler, and which. */
export async function verifyCrawler(resolver: Resolver, address: string | undefined): Promise<CrawlerVerdict> {
  const key = addressKey(address)
  if (key === undefined) return { outcome: 'refused', reason: 'no client address' }
  const family = key.includes(':') ? 6 : 4
  const reverse = await resolver.reverse(key)
  if (reverse.kind === 'error') return { outcome: 'error', reason: `reverse lookup: ${reverse.reason}` }
  if (reverse.kind === 'none' || reverse.names.length === 0) return { outcome: 'refused', reason: 'no PTR record' }
  let refused: CrawlerVerdict = { outcome: 'refused', reason: 'the PTR name is under no crawler’s published domains' }
  let failed: CrawlerVerdict | undefined
  for (const name of reverse.names.slice(0, MAX_PTR_NAMES)) {
    const host = hostOf(name)
    const crawler = host === undefined ? undefined : crawlerOfHost(host)
    if (host === undefined || crawler === undefined) continue
    const forward: Lookup = await resolver.forward(host, family)
    if (forward.kind === 'error') {
      failed = { outcome: 'error', reason: `forward lookup of ${host}: ${forward.reason}` }
      continue
    }
    if (forward.kind === 'found' && forward.names.some((a) => addressKey(a) === key)) {
      return { outcome: 'verified', crawler: crawler.name, host }
    }
    refused = { outcome: 'refused', reason: 'the PTR name does not lead back to the address (a spoofed PTR record)', host }
  }
  return failed ?? refused
}

export interface CrawlerCacheOptions {
  /** How long a verified address is trusted, ms (an hour). */
  verifiedMs?: number
  /** How long a refused address is not asked about again, ms (15 minutes). */
  refusedMs?: number
  /** How long after DNS failed for an address it is not asked about again, ms (a minute). */
  errorMs?: number
  /** Addresses remembered; the least recently used goes first (10,000). */
  maxEntries?: number
  /** Verifications at once; more are answered `error` without a lookup (64). */
  maxInFlight?: number
}

/** Told of each check: its outcome, and whether DNS was asked (a lookup) or the cache answered. */
export type CrawlerCheckHook = (verdict: CrawlerVerdict, address: string, lookedUp: boolean) => void

/** The edge's crawler checks: one verification per address at a time, answers cached by outcome. */
export class CrawlerVerifier {
  private readonly cache = new Map<string, { verdict: CrawlerVerdict; until: number }>()
  private readonly inFlight = new Map<string, Promise<CrawlerVerdict>>()
  private readonly lifetimes: Record<CrawlerOutcome, number>
  private readonly maxEntries: number
  private readonly maxInFlight: number

  constructor(
    private readonly resolver: Resolver,
    private readonly now: () => number,
    options: CrawlerCacheOptions = {},
    private readonly onCheck: CrawlerCheckHook = () => {},
  ) {
    this.lifetimes = { verified: options.verifiedMs ?? 3_600_000, refused: options.refusedMs ?? 900_000, error: options.errorMs ?? 60_000 }
    this.maxEntries = options.maxEntries ?? 10_000
    this.maxInFlight = options.maxInFlight ?? 64
  }

  /** How many addresses are remembered now. */
  get size(): number {
    return this.cache.size
  }

  /** What is known of the address: at once from the cache, or after a verification. */
  check(address: string): CrawlerVerdict | Promise<CrawlerVerdict> {
    const key = addressKey(address) ?? address
    const hit = this.cache.get(key)
    if (hit !== undefined) {
      this.cache.delete(key)
      if (hit.until > this.now()) {
        // Most recently used last: the oldest entry is the first to go.
        this.cache.set(key, hit)
        this.onCheck(hit.verdict, key, false)
        return hit.verdict
      }
    }
    const running = this.inFlight.get(key)
    if (running !== undefined) return running
    if (this.inFlight.size >= this.maxInFlight) {
      const busy: CrawlerVerdict = { outcome: 'error', reason: 'too many crawler lookups at once' }
      this.onCheck(busy, key, false)
      return busy
    }
    const lookup = verifyCrawler(this.resolver, key)
      .catch((err: unknown): CrawlerVerdict => ({ outcome: 'error', reason: err instanceof Error ? err.message : 'lookup failed' }))
      .then((verdict) => {
        this.inFlight.delete(key)
        this.remember(key, verdict)
        this.onCheck(verdict, key, true)
        return verdict
      })
    this.inFlight.set(key, lookup)
    return lookup
  }

  private remember(key: string, verdict: CrawlerVerdict): void {
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value as string)
    this.cache.set(key, { verdict, until: this.now() + this.lifetimes[verdict.outcome] })
  }
}

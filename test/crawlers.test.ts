// Crawler verification (core/crawlers.ts) against a real DNS server: dnsmasq on loopback with the records
// of a genuine crawler, a spoofed PTR record, names under other domains, and zones it refuses. Both
// resolvers: node:dns (the Node edge) and DNS over HTTPS (the Worker's adapter) through a bridge to the
// same dnsmasq. The cache: positive and negative answers kept for their lifetimes (a manual clock),
// one lookup per address at a time, a bound on entries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dohResolver, reverseName } from '../src/adapters/fetch/doh-resolver.js'
import { nodeResolver } from '../src/adapters/node/resolver.js'
import { CrawlerVerifier, crawlerOfHost, hintedCrawlers, verifyCrawler } from '../src/core/crawlers.js'
import type { Lookup, Resolver } from '../src/ports/resolver.js'
import { type DnsServer, startDnsmasq } from './support/dnsmasq.js'
import { type DohBridge, startDohBridge } from './support/doh-bridge.js'

let dns: DnsServer
let bridge: DohBridge

/** Every resolver call, to count lookups. */
function counting(resolver: Resolver) {
  const calls: string[] = []
  const wrapped: Resolver = {
    reverse(address) {
      calls.push(`PTR ${address}`)
      return resolver.reverse(address)
    },
    forward(name, family) {
      calls.push(`${family === 4 ? 'A' : 'AAAA'} ${name}`)
      return resolver.forward(name, family)
    },
  }
  return { resolver: wrapped, calls }
}

beforeAll(async () => {
  dns = await startDnsmasq({
    local: ['in-addr.arpa', 'googlebot.com', 'google.com', '8.b.d.0.1.0.0.2.ip6.arpa', 'googleusercontent.com', 'example'],
    hosts: [
      ['crawl-66-249-66-1.googlebot.com', '66.249.66.1'],
      ['rate-limited-proxy-66-249-90-77.google.com', '66.249.90.77'],
      ['crawl-v6.googlebot.com', '2001:db8::66'],
      // The PTR says googlebot.com; the name's own A record says otherwise.
      ['crawl-fake.googlebot.com', '198.51.100.99'],
      // Anyone's cloud machine has a PTR record like this one, forward-confirmed.
      ['1.2.0.192.bc.googleusercontent.com', '192.0.2.1'],
      ['shop.example', '192.0.2.50'],
      // A name that merely contains the domain.
      ['googlebot.com.evil.example', '192.0.2.60'],
    ],
    ptrs: [
      ['203.0.113.9', 'crawl-fake.googlebot.com'],
      // Under Bing's domain, which this server refuses to answer for: an error, not a refusal.
      ['192.0.2.200', 'msnbot-192-0-2-200.search.msn.com'],
    ],
  })
  bridge = await startDohBridge(dns.address)
})
afterAll(async () => {
  await bridge?.close()
  await dns?.stop()
})

const resolvers: [string, () => Resolver][] = [
  ['node:dns', () => nodeResolver({ server: dns.address, timeoutMs: 1000, tries: 1 })],
  ['DNS over HTTPS', () => dohResolver({ url: bridge.url })],
]

describe.each(resolvers)('verifying a crawler by reverse and forward DNS (%s)', (_, make) => {
  it('verifies an address whose PTR name is under the crawler’s domain and leads back to it', async () => {
    expect(await verifyCrawler(make(), '66.249.66.1')).toEqual({
      outcome: 'verified',
      crawler: 'googlebot',
      host: 'crawl-66-249-66-1.googlebot.com',
    })
    expect(await verifyCrawler(make(), '66.249.90.77')).toMatchObject({ outcome: 'verified', crawler: 'googlebot' })
  })

  it('verifies IPv6, and an IPv4-mapped IPv6 address as its IPv4 address', async () => {
    expect(await verifyCrawler(make(), '2001:db8::66')).toMatchObject({ outcome: 'verified', host: 'crawl-v6.googlebot.com' })
    expect(await verifyCrawler(make(), '2001:0db8:0:0::0066')).toMatchObject({ outcome: 'verified' })
    expect(await verifyCrawler(make(), '::ffff:66.249.66.1')).toMatchObject({ outcome: 'verified', crawler: 'googlebot' })
  })

  it('refuses a spoofed PTR record: the name says googlebot.com, its A record names another address', async () => {
    expect(await verifyCrawler(make(), '203.0.113.9')).toEqual({
      outcome: 'refused',
      reason: 'the PTR name does not lead back to the address (a spoofed PTR record)',
      host: 'crawl-fake.googlebot.com',
    })
  })

  it('refuses names under no crawler’s published domains, googleusercontent.com and look-alikes included, and addresses without PTR', async () => {
    for (const address of ['192.0.2.1', '192.0.2.50', '192.0.2.60']) {
      expect(await verifyCrawler(make(), address), address).toMatchObject({
        outcome: 'refused',
        reason: 'the PTR name is under no crawler’s published domains',
      })
    }
    expect(await verifyCrawler(make(), '203.0.113.77')).toEqual({ outcome: 'refused', reason: 'no PTR record' })
    expect(await verifyCrawler(make(), 'not-an-address')).toEqual({ outcome: 'refused', reason: 'no client address' })
  })

  it('says error, not refused and not verified, when DNS does not answer the forward question', async () => {
    expect(await verifyCrawler(make(), '192.0.2.200')).toMatchObject({ outcome: 'error' })
  })
})

describe('the published domains and the User-Agent hint', () => {
  it('takes a host strictly below a crawler’s domain only', () => {
    expect(crawlerOfHost('crawl-1.googlebot.com')?.name).toBe('googlebot')
    expect(crawlerOfHost('msnbot-1.search.msn.com')?.name).toBe('bingbot')
    expect(crawlerOfHost('googlebot.com')).toBeUndefined()
    expect(crawlerOfHost('evilgooglebot.com')).toBeUndefined()
    expect(crawlerOfHost('x.googleusercontent.com')).toBeUndefined()
    expect(crawlerOfHost('x.msn.com')).toBeUndefined()
  })

  it('names crawlers by User-Agent, which only starts a check', () => {
    const ua = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
    expect(hintedCrawlers(ua).map((c) => c.name)).toEqual(['googlebot'])
    expect(hintedCrawlers('Mozilla/5.0 (compatible; bingbot/2.0)').map((c) => c.name)).toEqual(['bingbot'])
    expect(hintedCrawlers('Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0')).toEqual([])
    expect(hintedCrawlers(undefined)).toEqual([])
  })

  it('writes the reverse names DNS over HTTPS asks for', () => {
    expect(reverseName('66.249.66.1')).toBe('1.66.249.66.in-addr.arpa')
    expect(reverseName('2001:db8::66')).toBe('6.6.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa')
    expect(reverseName('2001:db8::1::2')).toBeUndefined()
  })
})

describe('the crawler cache', () => {
  it('keeps a verified address for its lifetime and a refused one for its own, then asks again', async () => {
    const { resolver, calls } = counting(nodeResolver({ server: dns.address, timeoutMs: 1000, tries: 1 }))
    let now = 1_000_000
    const seen: string[] = []
    const verifier = new CrawlerVerifier(
      resolver,
      () => now,
      { verifiedMs: 60_000, refusedMs: 10_000, errorMs: 1_000 },
      (v, a, looked) => seen.push(`${a} ${v.outcome} ${looked ? 'lookup' : 'cache'}`),
    )
    expect(await verifier.check('66.249.66.1')).toMatchObject({ outcome: 'verified' })
    expect(await verifier.check('203.0.113.9')).toMatchObject({ outcome: 'refused' })
    expect(calls).toEqual(['PTR 66.249.66.1', 'A crawl-66-249-66-1.googlebot.com', 'PTR 203.0.113.9', 'A crawl-fake.googlebot.com'])
    // Answered from the cache, at once (not a promise), without DNS: the negative answer too.
    expect(verifier.check('66.249.66.1')).toMatchObject({ outcome: 'verified' })
    expect(verifier.check('::ffff:203.0.113.9')).toMatchObject({ outcome: 'refused' })
    expect(calls).toHaveLength(4)
    now += 10_001
    expect(verifier.check('66.249.66.1')).toMatchObject({ outcome: 'verified' })
    expect(await verifier.check('203.0.113.9')).toMatchObject({ outcome: 'refused' })
    expect(calls).toHaveLength(6)
    now += 50_000
    expect(await verifier.check('66.249.66.1')).toMatchObject({ outcome: 'verified' })
    expect(calls).toHaveLength(8)
    expect(seen).toEqual([
      '66.249.66.1 verified lookup',
      '203.0.113.9 refused lookup',
      '66.249.66.1 verified cache',
      '203.0.113.9 refused cache',
      '66.249.66.1 verified cache',
      '203.0.113.9 refused lookup',
      '66.249.66.1 verified lookup',
    ])
  })

  it('asks once for many requests of one address at a time, bounds its entries, and caps lookups at once', async () => {
    const answers = new Map<string, (l: Lookup) => void>()
    let reverses = 0
    const slow: Resolver = {
      reverse(address) {
        reverses++
        return new Promise((resolve) => answers.set(address, resolve))
      },
      forward: async () => ({ kind: 'none' }),
    }
    const verifier = new CrawlerVerifier(slow, () => 0, { maxEntries: 3, maxInFlight: 2 })
    const same = [verifier.check('192.0.2.1'), verifier.check('192.0.2.1'), verifier.check('192.0.2.1')]
    expect(reverses).toBe(1)
    const other = verifier.check('192.0.2.2')
    // A third address while two lookups run: no lookup, an error, nothing cached.
    expect(verifier.check('192.0.2.3')).toEqual({ outcome: 'error', reason: 'too many crawler lookups at once' })
    expect(reverses).toBe(2)
    answers.get('192.0.2.1')?.({ kind: 'none' })
    answers.get('192.0.2.2')?.({ kind: 'none' })
    for (const v of await Promise.all([...same, other])) expect(v).toEqual({ outcome: 'refused', reason: 'no PTR record' })
    for (const a of ['192.0.2.4', '192.0.2.5', '192.0.2.6']) {
      const pending = verifier.check(a)
      answers.get(a)?.({ kind: 'none' })
      await pending
    }
    expect(verifier.size).toBe(3)
    // The oldest went first: 192.0.2.1 is asked about again.
    const again = verifier.check('192.0.2.1')
    expect(again).toBeInstanceOf(Promise)
    answers.get('192.0.2.1')?.({ kind: 'none' })
    await again
  })
})

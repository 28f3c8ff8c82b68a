// The Resolver port: the two DNS questions a crawler's verification asks (core/crawlers.ts), a
// reverse lookup (PTR) and a forward one (A or AAAA). Node answers them with node:dns against the
// configured server (src/adapters/node/resolver.ts), a Worker with DNS over HTTPS (src/adapters/fetch/
// doh-resolver.ts). An expected outcome is a value: names found, none (NXDOMAIN, no such record), or
// an error (a timeout, a server that refused or failed), which the verification does not trust either way.

export type Lookup = { kind: 'found'; names: string[] } | { kind: 'none' } | { kind: 'error'; reason: string }

export interface Resolver {
  /** The PTR names of an address (IPv4 dotted or IPv6), without a final dot. */
  reverse(address: string): Promise<Lookup>
  /** The addresses a name has: A records for family 4, AAAA for 6. */
  forward(name: string, family: 4 | 6): Promise<Lookup>
}

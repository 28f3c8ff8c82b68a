// The Resolver port (crawler checks, core/crawlers.ts) on Node: node:dns's own resolver (c-ares, not
// the system's getaddrinfo), against ANTEROOM_DNS_SERVER when set and the system's servers otherwise,
// with a timeout per try. NXDOMAIN and "no such record" are answers (none); every other failure is an
// error, which the check trusts neither way.
import { Resolver as DnsResolver } from 'node:dns/promises'
import type { Lookup, Resolver } from '../../ports/resolver.js'

/** Codes that say the name or record does not exist. */
const NONE = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME'])

function failed(err: unknown): Lookup {
  const code = (err as { code?: unknown })?.code
  if (typeof code === 'string' && NONE.has(code)) return { kind: 'none' }
  return { kind: 'error', reason: typeof code === 'string' ? code : 'lookup failed' }
}

export interface NodeResolverOptions {
  /** host, host:port, [v6]:port; unset: the system's servers. */
  server?: string
  /** Per try, ms. */
  timeoutMs?: number
  tries?: number
}

export function nodeResolver(options: NodeResolverOptions = {}): Resolver {
  const dns = new DnsResolver({ timeout: options.timeoutMs ?? 2000, tries: options.tries ?? 2 })
  if (options.server !== undefined) dns.setServers([options.server])
  return {
    async reverse(address) {
      try {
        const names = await dns.reverse(address)
        return names.length === 0 ? { kind: 'none' } : { kind: 'found', names }
      } catch (err) {
        return failed(err)
      }
    },
    async forward(name, family) {
      try {
        const names = family === 4 ? await dns.resolve4(name) : await dns.resolve6(name)
        return names.length === 0 ? { kind: 'none' } : { kind: 'found', names }
      } catch (err) {
        return failed(err)
      }
    },
  }
}

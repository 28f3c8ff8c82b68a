// The Resolver port (crawler checks, core/crawlers.ts) over DNS over HTTPS, for the Worker, which has
// no sockets for DNS: the JSON form Cloudflare's and Google's resolvers answer (GET ?name=&type= with
// Accept: application/dns-json; ANTEROOM_DOH_URL). Status 3 (NXDOMAIN) or no answer of the type asked
// is none; any other status, a timeout or a body that is not that JSON is an error.
import type { Lookup, Resolver } from '../../ports/resolver.js'

const TYPES = { PTR: 12, A: 1, AAAA: 28 } as const

/** The name a PTR question asks about: 4.3.2.1.in-addr.arpa, or the 32 nibbles of an IPv6 address in ip6.arpa. */
export function reverseName(address: string): string | undefined {
  if (!address.includes(':')) {
    const parts = address.split('.')
    return parts.length === 4 ? `${parts.reverse().join('.')}.in-addr.arpa` : undefined
  }
  const halves = address.split('::')
  if (halves.length > 2) return undefined
  const groups = (half: string | undefined) => (half === undefined || half === '' ? [] : half.split(':'))
  const head = groups(halves[0])
  const tail = groups(halves[1])
  const missing = 8 - head.length - tail.length
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined
  const all = [...head, ...Array(missing).fill('0'), ...tail]
  if (!all.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined
  const nibbles = all.map((g) => g.toLowerCase().padStart(4, '0')).join('')
  return `${[...nibbles].reverse().join('.')}.ip6.arpa`
}

export interface DohResolverOptions {
  url: string
  timeoutMs?: number
  fetch?: typeof fetch
}

export function dohResolver(options: DohResolverOptions): Resolver {
  const doFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init))
  const timeoutMs = options.timeoutMs ?? 2000
  async function ask(name: string, type: keyof typeof TYPES): Promise<Lookup> {
    const url = new URL(options.url)
    url.searchParams.set('name', name)
    url.searchParams.set('type', type)
    let body: unknown
    try {
      const res = await doFetch(url, { headers: { accept: 'application/dns-json' }, signal: AbortSignal.timeout(timeoutMs) })
      if (!res.ok) return { kind: 'error', reason: `DNS over HTTPS answered ${res.status}` }
      body = await res.json()
    } catch (err) {
      return { kind: 'error', reason: (err as Error)?.name === 'TimeoutError' ? 'timeout' : 'DNS over HTTPS failed' }
    }
    const b = body as { Status?: unknown; Answer?: unknown }
    if (typeof b !== 'object' || b === null || typeof b.Status !== 'number') return { kind: 'error', reason: 'not a DNS JSON answer' }
    if (b.Status === 3) return { kind: 'none' }
    if (b.Status !== 0) return { kind: 'error', reason: `DNS status ${b.Status}` }
    const answers = Array.isArray(b.Answer) ? b.Answer : []
    const names = answers
      .filter(
        (a): a is { type: number; data: string } =>
          typeof a === 'object' && a !== null && a.type === TYPES[type] && typeof a.data === 'string',
      )
      .map((a) => a.data.replace(/\.$/, ''))
    return names.length === 0 ? { kind: 'none' } : { kind: 'found', names }
  }
  return {
    reverse(address) {
      const name = reverseName(address)
      return name === undefined ? Promise.resolve({ kind: 'error', reason: 'not an address' }) : ask(name, 'PTR')
    },
    forward(name, family) {
      return ask(name, family === 4 ? 'A' : 'AAAA')
    },
  }
}

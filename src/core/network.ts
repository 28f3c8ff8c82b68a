// A client address reduced to its network, the unit the cap on new places counts by (one household,
// office or cloud subnet): IPv4 by its first `v4` bits (/24 by default), IPv6 by its first `v6`
// (/56 by default: what providers hand one subscriber). An IPv4-mapped IPv6 address (::ffff:a.b.c.d,
// as a dual-stack socket reports IPv4 clients) counts as the IPv4 address it carries.

/** The 4 bytes of a dotted IPv4 address, or undefined. */
export function ipv4Bytes(text: string): number[] | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  const bytes = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : Number.NaN))
  return bytes.every((b) => b <= 255) ? bytes : undefined
}

/** The 16 bytes of an IPv6 address (with ::, a zone id, or a dotted IPv4 tail), or undefined. */
export function ipv6Bytes(text: string): number[] | undefined {
  const address = text.split('%')[0] as string
  const halves = address.split('::')
  if (halves.length > 2) return undefined
  const groups = (half: string | undefined): number[] | undefined => {
    if (half === undefined || half === '') return []
    const out: number[] = []
    const parts = half.split(':')
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1 && part.includes('.')) {
        const v4 = ipv4Bytes(part)
        if (v4 === undefined) return undefined
        out.push(...v4)
      } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
        const n = Number.parseInt(part, 16)
        out.push(n >> 8, n & 0xff)
      } else return undefined
    }
    return out
  }
  const head = groups(halves[0])
  const tail = groups(halves[1])
  if (head === undefined || tail === undefined) return undefined
  const missing = 16 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 2) return undefined
  return [...head, ...Array(missing).fill(0), ...tail]
}

/** The first `bits` of `bytes`, the rest zeroed. */
function masked(bytes: number[], bits: number): number[] {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8))
    return b & ((0xff << (8 - keep)) & 0xff)
  })
}

function ipv6Text(bytes: number[]): string {
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] as number) << 8) | (bytes[i + 1] as number)).toString(16))
  // Trailing zero groups (the masked-off part) are written as ::.
  let end = groups.length
  while (end > 0 && groups[end - 1] === '0') end--
  return end === groups.length ? groups.join(':') : `${groups.slice(0, end).join(':')}::`
}

export interface NetworkPrefixes {
  /** Bits of an IPv4 address that name its network. */
  v4: number
  /** Bits of an IPv6 address that name its network. */
  v6: number
}

/**
 * The network of a client address, written as `a.b.c.0/24` or `2001:db8:0:100::/56`; undefined for
 * anything that is not an IP address (the runtime did not give one).
 */
export function networkOf(address: string | undefined, prefixes: NetworkPrefixes): string | undefined {
  const a = (address ?? '').trim().toLowerCase()
  if (a === '' || a.length > 64) return undefined
  let v4 = a.includes(':') ? undefined : ipv4Bytes(a)
  const v6 = v4 === undefined && a.includes(':') ? ipv6Bytes(a) : undefined
  const mapped = v6?.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff
  if (mapped) v4 = v6?.slice(12)
  if (v4 !== undefined) return `${masked(v4, prefixes.v4).join('.')}/${prefixes.v4}`
  if (v6 !== undefined) return `${ipv6Text(masked(v6, prefixes.v6))}/${prefixes.v6}`
  return undefined
}

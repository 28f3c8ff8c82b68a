// Client networks as CIDR blocks (bypass rules, core/bypass.ts): parsed once into numbers, then
// matched against the runtime's client address, an IPv4 address without allocating. An IPv4-mapped
// IPv6 address (::ffff:a.b.c.d, as a dual-stack socket reports an IPv4 client) is the IPv4 address it
// carries, in a rule as in a client address, so one rule covers both spellings of one client.
import { ipv4Bytes, ipv6Bytes } from './network.js'

/** One block: IPv4 as a 32-bit base and mask, IPv6 as 16 bytes and a prefix length. */
export type Cidr = { v4: true; base: number; mask: number; prefix: number } | { v4: false; bytes: readonly number[]; prefix: number }

/** The narrowest blocks a rule may name: /8 of IPv4, /16 of IPv6. A wider rule lets a good part of the Internet past the line. */
export const MIN_PREFIX = { v4: 8, v6: 16 } as const

export type CidrParse = { ok: true; cidr: Cidr; text: string } | { ok: false; problem: string }

/** The IPv4 address an IPv4-mapped IPv6 address carries, or undefined. */
function mappedV4(bytes: readonly number[]): number[] | undefined {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return undefined
  return bytes[10] === 0xff && bytes[11] === 0xff ? bytes.slice(12) : undefined
}

const v4Number = (b: readonly number[]) =>
  (((b[0] as number) << 24) | ((b[1] as number) << 16) | ((b[2] as number) << 8) | (b[3] as number)) >>> 0
const v4Mask = (prefix: number) => (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0)

/** RFC 5952 text: lower case, the longest run of two or more zero groups as ::. */
export function ipv6Text(bytes: readonly number[]): string {
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] as number) << 8) | (bytes[i + 1] as number))
  let bestAt = -1
  let bestLength = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) [bestAt, bestLength] = [i, j - i]
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestAt < 0) return hex.join(':')
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLength).join(':')}`
}

/**
 * A CIDR block as a rule writes it: `10.0.0.0/8`, `2001:db8::/32`, or one address (`192.0.2.7`, a /32
 * or /128). Refused: anything else, bits set past the prefix (a typo that would match something other
 * than written), and blocks wider than MIN_PREFIX. `text` is the block as stored: IPv4 dotted,
 * IPv6 in RFC 5952 form, an IPv4-mapped block as the IPv4 block it covers.
 */
export function parseCidr(input: string): CidrParse {
  const text = input.trim().toLowerCase()
  const slash = text.indexOf('/')
  const address = slash < 0 ? text : text.slice(0, slash)
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1)
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText))
    return { ok: false, problem: 'the prefix after / must be a number of bits' }
  if (address.includes('%')) return { ok: false, problem: 'a zone id (%eth0) has no place in a rule' }
  // 010 is octal to some parsers and decimal to others: a rule must mean one thing.
  if (/(^|[.:])0\d/.test(address) && !address.includes(':'))
    return { ok: false, problem: 'an IPv4 number may not start with 0 (010 reads as 8 to some parsers)' }
  let v4 = address.includes(':') ? undefined : ipv4Bytes(address)
  let v6 = v4 === undefined && address.includes(':') ? ipv6Bytes(address) : undefined
  if (v4 === undefined && v6 === undefined)
    return { ok: false, problem: 'must be an IPv4 or IPv6 address or block, like 192.0.2.0/24 or 2001:db8::/32' }
  let prefix = prefixText === undefined ? (v4 ? 32 : 128) : Number(prefixText)
  const mapped = v6 === undefined ? undefined : mappedV4(v6)
  if (mapped !== undefined) {
    if (prefix < 96) return { ok: false, problem: 'an IPv4-mapped block (::ffff:a.b.c.d) needs a prefix of at least 96' }
    v4 = mapped
    v6 = undefined
    prefix -= 96
  }
  if (v4 !== undefined) {
    if (prefix > 32) return { ok: false, problem: 'an IPv4 prefix is at most 32 bits' }
    if (prefix < MIN_PREFIX.v4) return { ok: false, problem: `an IPv4 block may be at most a /${MIN_PREFIX.v4}` }
    const mask = v4Mask(prefix)
    const base = v4Number(v4)
    const net = (base & mask) >>> 0
    const written = `${[net >>> 24, (net >>> 16) & 0xff, (net >>> 8) & 0xff, net & 0xff].join('.')}/${prefix}`
    if (net !== base) return { ok: false, problem: `has bits set past the /${prefix}: write ${written}` }
    return { ok: true, cidr: { v4: true, base: net, mask, prefix }, text: written }
  }
  const bytes = v6 as number[]
  if (prefix > 128) return { ok: false, problem: 'an IPv6 prefix is at most 128 bits' }
  if (prefix < MIN_PREFIX.v6) return { ok: false, problem: `an IPv6 block may be at most a /${MIN_PREFIX.v6}` }
  const net = bytes.map((b, i) => b & ((0xff << (8 - Math.max(0, Math.min(8, prefix - i * 8)))) & 0xff))
  const written = `${ipv6Text(net)}/${prefix}`
  if (net.some((b, i) => b !== bytes[i])) return { ok: false, problem: `has bits set past the /${prefix}: write ${written}` }
  return { ok: true, cidr: { v4: false, bytes: net, prefix }, text: written }
}

/**
 * An IPv4 address's 32 bits, read without allocating (the hot path: a visitor's address on every
 * request of a room with network rules); -1 for anything that is not a plain dotted IPv4 address
 * (leading zeros included).
 */
export function ipv4Number(text: string): number {
  let value = 0
  let part = -1
  let digits = 0
  let dots = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x30 && c <= 0x39) {
      // A leading zero (010) is octal to some parsers: not an address the runtime writes, so not one.
      if (part === 0) return -1
      part = Math.max(part, 0) * 10 + (c - 0x30)
      if (++digits > 3 || part > 255) return -1
    } else if (c === 0x2e && part >= 0 && dots < 3) {
      value = value * 256 + part
      part = -1
      digits = 0
      dots++
    } else return -1
  }
  if (dots !== 3 || part < 0) return -1
  return value * 256 + part
}

/** The blocks of one rule, compiled: IPv4 bases and masks side by side, IPv6 blocks as they are. */
export class CidrMatcher {
  private readonly v4: Uint32Array
  private readonly v6: { bytes: readonly number[]; prefix: number }[]

  constructor(blocks: readonly Cidr[]) {
    const v4 = blocks.filter((b): b is Extract<Cidr, { v4: true }> => b.v4)
    this.v4 = new Uint32Array(v4.length * 2)
    v4.forEach((b, i) => {
      this.v4[i * 2] = b.base
      this.v4[i * 2 + 1] = b.mask
    })
    this.v6 = blocks.filter((b): b is Extract<Cidr, { v4: false }> => !b.v4)
  }

  /** Whether the client address lies in one of the blocks. An address the runtime did not give matches nothing. */
  matches(address: string | undefined): boolean {
    if (address === undefined) return false
    const n = ipv4Number(address)
    if (n >= 0) return this.matchesV4(n)
    if (!address.includes(':')) return false
    const bytes = ipv6Bytes(address.toLowerCase())
    if (bytes === undefined) return false
    const mapped = mappedV4(bytes)
    if (mapped !== undefined) return this.matchesV4(v4Number(mapped))
    for (const block of this.v6) if (v6Within(bytes, block)) return true
    return false
  }

  private matchesV4(n: number): boolean {
    const v4 = this.v4
    for (let i = 0; i < v4.length; i += 2) if ((n & (v4[i + 1] as number)) >>> 0 === v4[i]) return true
    return false
  }
}

function v6Within(bytes: readonly number[], block: { bytes: readonly number[]; prefix: number }): boolean {
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, block.prefix - i * 8))
    if (keep === 0) return true
    const mask = (0xff << (8 - keep)) & 0xff
    if (((bytes[i] as number) & mask) !== block.bytes[i]) return false
  }
  return true
}

/**
 * An address as one comparable text: `a.b.c.d` for IPv4 (an IPv4-mapped IPv6 address included),
 * RFC 5952 for IPv6; undefined for anything that is not an IP address. Crawler checks compare a
 * client's address with what a forward lookup answered this way.
 */
export function addressKey(text: string | undefined): string | undefined {
  const a = (text ?? '').trim().toLowerCase()
  if (a === '' || a.length > 64 || a.includes('%')) return undefined
  if (!a.includes(':')) return ipv4Bytes(a)?.join('.')
  const bytes = ipv6Bytes(a)
  if (bytes === undefined) return undefined
  const mapped = mappedV4(bytes)
  return mapped !== undefined ? mapped.join('.') : ipv6Text(bytes)
}

// What crosses the proxy: hop-by-hop headers stop here, our cookies and the headers we own never
// reach the origin in any spelling, the edge alone says who asked (X-Forwarded-*, X-Real-IP,
// Forwarded), the origin's Anteroom-Command is for the edge alone, and nothing on a room's path may
// be stored by a shared cache. Both directions build one plain object in one pass:
// on an admitted visitor's request this is most of what the edge does.
import { COOKIE_PREFIX, withoutCookies } from './cookies.js'

const HOP_BY_HOP = new Set([
  'connection',
  // Never meaningful end to end, and CGI-style origins read it as HTTP_PROXY ("httpoxy").
  'proxy',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

export const ADMISSION_HEADER = 'anteroom-admission'
/** The origin's word to the edge (origin-command.ts): read by the edge, never passed to the visitor. */
export const COMMAND_HEADER = 'anteroom-command'

/**
 * Request headers the edge owns or that tell an origin who asked or what to serve. A visitor's own
 * copy never crosses, in any spelling: CGI, WSGI and PHP read `anteroom_admission` as the same
 * HTTP_ANTEROOM_ADMISSION, so names are compared with `_` read as `-`.
 */
const OWNED = new Set([
  // The origin's own Host is set by the HTTP client.
  'host',
  // Expect: 100-continue was answered by the edge's own server.
  'expect',
  // Client addresses: the edge sets them from what it knows.
  'forwarded',
  'x-real-ip',
  'true-client-ip',
  'x-client-ip',
  'cf-connecting-ip',
  'x-cluster-client-ip',
  'fastly-client-ip',
  // URL overrides: frameworks (Symfony, Zend, IIS rewrite) act on these instead of the path.
  'x-original-url',
  'x-original-uri',
  'x-rewrite-url',
  'x-override-url',
])

/** The name as CGI-style origins read it. */
function spelledAs(name: string): string {
  return name.includes('_') ? name.replaceAll('_', '-') : name
}

function owned(name: string): boolean {
  return OWNED.has(name) || name.startsWith('anteroom-') || name.startsWith('x-forwarded-')
}

/** Names that never cross: hop-by-hop ones, Proxy-* ones, and those the Connection header lists. */
function dropped(name: string, listed: Set<string> | undefined): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith('proxy-') || (listed?.has(name) ?? false)
}

function listedIn(connection: string | null | undefined): Set<string> | undefined {
  if (!connection) return undefined
  return new Set(connection.split(',').map((n) => n.trim().toLowerCase()))
}

export interface ForwardContext {
  /** The address the edge saw: the socket on Node, cf-connecting-ip on a Worker. */
  clientIp: string | undefined
  proto: string
  host: string
  admissionToken: string | undefined
}

/** RFC 7239: values that are not tokens are quoted; an IPv6 address is also bracketed. */
function forwardedValue(value: string, isAddress: boolean): string {
  if (isAddress && value.includes(':')) return `"[${value}]"`
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(value) ? value : `"${value.replace(/["\\]/g, '')}"`
}

export function requestHeadersForOrigin(incoming: Headers, ctx: ForwardContext): Record<string, string> {
  const listed = listedIn(incoming.get('connection'))
  const out: Record<string, string> = {}
  incoming.forEach((value, name) => {
    const spelled = spelledAs(name)
    if (dropped(spelled, listed) || owned(spelled)) return
    if (name === 'cookie') {
      const kept = withoutCookies(value, COOKIE_PREFIX)
      if (kept !== null) out.cookie = kept
      return
    }
    out[name] = value
  })
  if (ctx.admissionToken !== undefined) out[ADMISSION_HEADER] = ctx.admissionToken
  if (ctx.clientIp !== undefined) {
    out['x-forwarded-for'] = ctx.clientIp
    out['x-real-ip'] = ctx.clientIp
  }
  out['x-forwarded-proto'] = ctx.proto
  out['x-forwarded-host'] = ctx.host
  const forFor = ctx.clientIp === undefined ? '' : `for=${forwardedValue(ctx.clientIp, true)};`
  out.forwarded = `${forFor}proto=${ctx.proto};host=${forwardedValue(ctx.host, false)}`
  return out
}

/** Cache headers aimed at CDNs only; they would override the Cache-Control below. */
function cdnCacheHeader(name: string): boolean {
  return name === 'surrogate-control' || name.endsWith('cdn-cache-control')
}

/**
 * Cache-Control for a response on a room's path. A shared cache in front of the edge must never
 * store one: it would hand it to visitors who never passed the room, or hand one visitor's admission
 * cookie to others. The visitor's own browser may still cache what the origin allows.
 */
export function privateCacheControl(origin: string | undefined, setsOurCookie: boolean): string {
  if (setsOurCookie) return 'private, no-store'
  if (origin === undefined || origin === '') return 'private'
  const kept = (origin ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d.length > 0 && !/^(public|private|s-maxage|proxy-revalidate)\b/i.test(d))
  return ['private', ...kept].join(', ')
}

/**
 * The origin's response headers for the visitor, plus our cookies. A plain object where it can be
 * (the Node server writes it as is); a list of pairs when several Set-Cookie lines must stay apart.
 */
export function responseHeadersForVisitor(
  origin: Record<string, string | string[] | undefined>,
  cookies: readonly string[],
  roomProtected: boolean,
): Record<string, string> | [string, string][] {
  const connection = origin.connection
  const listed = listedIn(Array.isArray(connection) ? connection.join(',') : connection)
  const setCookies: string[] = []
  const out: Record<string, string> = {}
  for (const name in origin) {
    const value = origin[name]
    if (value === undefined || dropped(name, listed) || name === COMMAND_HEADER) continue
    if (roomProtected && cdnCacheHeader(name)) continue
    if (name === 'set-cookie') {
      if (Array.isArray(value)) setCookies.push(...value)
      else setCookies.push(value)
    } else out[name] = Array.isArray(value) ? value.join(', ') : value
  }
  setCookies.push(...cookies)
  if (roomProtected) {
    const cc = out['cache-control']
    out['cache-control'] = privateCacheControl(cc, cookies.length > 0)
  }
  if (setCookies.length === 0) return out
  if (setCookies.length === 1) {
    out['set-cookie'] = setCookies[0] as string
    return out
  }
  const pairs = Object.entries(out)
  for (const cookie of setCookies) pairs.push(['set-cookie', cookie])
  return pairs
}

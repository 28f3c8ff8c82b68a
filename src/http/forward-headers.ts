// What crosses the proxy: hop-by-hop headers stop here, our cookies never reach the origin,
// and X-Forwarded-* tell the origin who asked. Both directions build one plain object in one pass:
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

/** Names that never cross: hop-by-hop ones, Proxy-* ones, and those the Connection header lists. */
function dropped(name: string, listed: Set<string> | undefined): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith('proxy-') || (listed?.has(name) ?? false)
}

function listedIn(connection: string | null | undefined): Set<string> | undefined {
  if (!connection) return undefined
  return new Set(connection.split(',').map((n) => n.trim().toLowerCase()))
}

export interface ForwardContext {
  clientIp: string | undefined
  proto: string
  host: string
  admissionToken: string | undefined
}

export function requestHeadersForOrigin(incoming: Headers, ctx: ForwardContext): Record<string, string> {
  const listed = listedIn(incoming.get('connection'))
  const out: Record<string, string> = {}
  let priorFor: string | undefined
  incoming.forEach((value, name) => {
    if (dropped(name, listed)) return
    switch (name) {
      // The origin's own Host is set by the HTTP client.
      case 'host':
      // Expect: 100-continue was answered by the edge's own server.
      case 'expect':
      // Only the edge may speak for admission: a visitor's own header is never passed on.
      case ADMISSION_HEADER:
      case 'x-forwarded-proto':
      case 'x-forwarded-host':
        return
      case 'x-forwarded-for':
        priorFor = value
        return
      case 'cookie': {
        const kept = withoutCookies(value, COOKIE_PREFIX)
        if (kept !== null) out.cookie = kept
        return
      }
      default:
        out[name] = value
    }
  })
  if (ctx.admissionToken !== undefined) out[ADMISSION_HEADER] = ctx.admissionToken
  if (ctx.clientIp !== undefined) out['x-forwarded-for'] = priorFor ? `${priorFor}, ${ctx.clientIp}` : ctx.clientIp
  else if (priorFor !== undefined) out['x-forwarded-for'] = priorFor
  out['x-forwarded-proto'] = ctx.proto
  out['x-forwarded-host'] = ctx.host
  return out
}

/**
 * The origin's response headers for the visitor, plus our cookies. A plain object where it can be
 * (the Node server writes it as is); a list of pairs when several Set-Cookie lines must stay apart.
 */
export function responseHeadersForVisitor(
  origin: Record<string, string | string[] | undefined>,
  cookies: readonly string[],
): Record<string, string> | [string, string][] {
  const connection = origin.connection
  const listed = listedIn(Array.isArray(connection) ? connection.join(',') : connection)
  const setCookies: string[] = []
  const out: Record<string, string> = {}
  for (const name in origin) {
    const value = origin[name]
    if (value === undefined || dropped(name, listed)) continue
    if (name === 'set-cookie') {
      if (Array.isArray(value)) setCookies.push(...value)
      else setCookies.push(value)
    } else out[name] = Array.isArray(value) ? value.join(', ') : value
  }
  setCookies.push(...cookies)
  if (setCookies.length === 0) return out
  if (setCookies.length === 1) {
    out['set-cookie'] = setCookies[0] as string
    return out
  }
  const pairs = Object.entries(out)
  for (const cookie of setCookies) pairs.push(['set-cookie', cookie])
  return pairs
}

// What crosses the proxy: hop-by-hop headers stop here, our cookies never reach the origin,
// and X-Forwarded-* tell the origin who asked.
import { COOKIE_PREFIX, withoutCookies } from './cookies.js'

const HOP_BY_HOP = [
  'connection',
  // Never meaningful end to end, and CGI-style origins read it as HTTP_PROXY ("httpoxy").
  'proxy',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]

export const ADMISSION_HEADER = 'anteroom-admission'

function dropHopByHop(headers: Headers): void {
  const listed = headers.get('connection')
  if (listed !== null) for (const name of listed.split(',')) headers.delete(name.trim())
  for (const name of HOP_BY_HOP) headers.delete(name)
  // Proxy-* (Proxy-Authentication-Info and the like) is for the next hop, never for the origin or visitor.
  for (const name of [...headers.keys()]) if (name.startsWith('proxy-')) headers.delete(name)
}

export interface ForwardContext {
  clientIp: string | undefined
  proto: string
  host: string
  admissionToken: string | undefined
}

export function requestHeadersForOrigin(incoming: Headers, ctx: ForwardContext): Headers {
  const headers = new Headers(incoming)
  dropHopByHop(headers)
  headers.delete('host')
  // Expect: 100-continue was answered by the edge's own server; undici refuses to send it on.
  headers.delete('expect')
  // Only the edge may speak for admission: a visitor's own header is never passed on.
  headers.delete(ADMISSION_HEADER)
  if (ctx.admissionToken !== undefined) headers.set(ADMISSION_HEADER, ctx.admissionToken)
  const cookie = withoutCookies(headers.get('cookie'), COOKIE_PREFIX)
  if (cookie === null) headers.delete('cookie')
  else headers.set('cookie', cookie)
  const prior = headers.get('x-forwarded-for')
  if (ctx.clientIp !== undefined) headers.set('x-forwarded-for', prior ? `${prior}, ${ctx.clientIp}` : ctx.clientIp)
  headers.set('x-forwarded-proto', ctx.proto)
  headers.set('x-forwarded-host', ctx.host)
  return headers
}

export function responseHeadersFromOrigin(incoming: Headers): Headers {
  const headers = new Headers(incoming)
  dropHopByHop(headers)
  return headers
}

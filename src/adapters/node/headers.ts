// The request headers the edge reads on every request (EdgeDeps.readHeaders), straight from
// Node's parsed request, in one pass over its raw header list.
//
// Why: through Hono on @hono/node-server, each `c.req.header(name)` builds the request's header
// wrapper, copies the raw list or reads Node's header object, and checks the name and the value with
// regular expressions. A queued visitor's poll read four that way; read here in one pass, the edge
// served 1-4% more polls a second in the same process (docs/measurements-2026-12.md, "What a poll costs").
// Accept-Language rides along for the page's language (src/http/i18n.ts).
//
// The values are what Hono reads on either runtime (test/node-headers.test.ts compares them over
// HTTP): each field's value without surrounding spaces and tabs, duplicates joined with ", " (Cookie
// with "; "), so that two Host fields read as one value with a comma, which the edge refuses.
import type { Context } from 'hono'
import { AnteroomError } from '../../core/errors.js'
import { POW_HEADER } from '../../core/pow.js'
import type { VisitorHeaders } from '../../http/request.js'

interface NodeIncoming {
  httpVersionMajor?: number
  rawHeaders?: string[]
}

const FORBIDDEN = /[\0\r\n]/

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09
}

function trimmed(value: string): string {
  if (value.length === 0 || (!isSpace(value.charCodeAt(0)) && !isSpace(value.charCodeAt(value.length - 1)))) return value
  let start = 0
  let end = value.length
  while (start < end && isSpace(value.charCodeAt(start))) start++
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--
  return value.slice(start, end)
}

function joined(before: string | undefined, value: string, separator: string): string {
  return before === undefined ? value : `${before}${separator}${value}`
}

/**
 * The visitor's headers from an HTTP/1 request on Node's server; undefined for anything else (an
 * HTTP/2 request, another runtime), which the edge then reads through Hono.
 */
export function nodeVisitorHeaders(c: Context): VisitorHeaders | undefined {
  const incoming = (c.env as { incoming?: NodeIncoming } | undefined)?.incoming
  const raw = incoming?.rawHeaders
  if (raw === undefined || incoming?.httpVersionMajor !== 1) return undefined
  let host: string | undefined
  let cookie: string | undefined
  let accept: string | undefined
  let pow: string | undefined
  let acceptLanguage: string | undefined
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string
    // Only names of the five lengths are lower-cased and compared.
    const n = name.length
    if (n !== 4 && n !== 6 && n !== POW_HEADER.length && n !== 15) continue
    const lower = name.toLowerCase()
    if (lower !== 'host' && lower !== 'cookie' && lower !== 'accept' && lower !== POW_HEADER && lower !== 'accept-language') continue
    const value = trimmed(raw[i + 1] as string)
    if (FORBIDDEN.test(value)) throw new AnteroomError('ERR_BAD_REQUEST', `The ${lower} header holds a line break or a NUL.`)
    if (lower === 'host') host = joined(host, value, ', ')
    else if (lower === 'cookie') cookie = joined(cookie, value, '; ')
    else if (lower === 'accept') accept = joined(accept, value, ', ')
    else if (lower === POW_HEADER) pow = joined(pow, value, ', ')
    else acceptLanguage = joined(acceptLanguage, value, ', ')
  }
  return { host, cookie, accept, pow, acceptLanguage }
}

// The request as the edge reads it, once: the canonical path that rooms are matched on and that the
// origin receives (core/path.ts), the host, the scheme the runtime saw, and the Cookie header.
import type { Context } from 'hono'
import { BoundedMap } from '../core/bounded-map.js'
import { AnteroomError } from '../core/errors.js'
import { LANG_PARAM } from '../core/locales.js'
import { canonicalPath } from '../core/path.js'
import { POW_HEADER } from '../core/pow.js'
import { canonicalHost } from '../core/rooms.js'

export interface Incoming {
  /** The URL's host as the URL parser reads it (with its port): the Host the origin is told. */
  authority: string
  proto: 'http' | 'https'
  /** Cookies get Secure. */
  secure: boolean
  /** Canonical host, for room matching. */
  host: string
  /** The canonical path in lower case: what rooms are matched on (core/path.ts). */
  pathKey: string
  /** The path and query sent to the origin: the canonical path that rooms were matched against. */
  originPath: string
  /** The Cookie header, read once for the queue, admission and script cookies. */
  cookie: string | null
  /** The client address as the runtime gives it (EdgeDeps.clientIp), never from a request header. */
  client: string | undefined
  /** An answer to a proof-of-work challenge (the Anteroom-Pow header, core/pow.ts). */
  powAnswer: string | null
  /** Whether the caller asked for JSON (an app polling), not a page (a browser): wantsJson. */
  json: boolean
  /** The query's `lang` (a visitor's choice of language for the page, core/locales.ts), if any. */
  lang: string | undefined
  /** The Accept-Language header: the page's language when the visitor chose none. */
  acceptLanguage: string | undefined
  /** The request's Hono context: its log lines' request id (request-id.ts). */
  context: Context
}

/**
 * The request headers the edge reads on every request, each as Hono reads it: the field's value
 * without surrounding spaces, several fields of one name joined with ", " (Cookie: "; "); undefined
 * when absent. EdgeDeps.readHeaders gives them from the runtime (src/adapters/node/headers.ts).
 */
export interface VisitorHeaders {
  host: string | undefined
  cookie: string | undefined
  accept: string | undefined
  pow: string | undefined
  acceptLanguage: string | undefined
}

/** The same through Hono, on any runtime. */
export function honoHeaders(c: Context): VisitorHeaders {
  return {
    host: c.req.header('host'),
    cookie: c.req.header('cookie'),
    accept: c.req.header('accept'),
    pow: c.req.header(POW_HEADER),
    acceptLanguage: c.req.header('accept-language'),
  }
}

/** What a request URL says, worked out once per URL text (a poll's URL is the same for every visitor). */
interface UrlFacts {
  authority: string
  host: string
  pathKey: string
  originPath: string
  /** The query's `lang`, read once per URL text (most URLs have none). */
  lang: string | undefined
}
/**
 * URLs remembered, of at most URL_REMEMBERED characters: an edge serves far fewer distinct URLs on its
 * hot paths, and the map starts over when full (at most about half a megabyte).
 */
const URL_FACTS = 1024
const URL_REMEMBERED = 512
const urlFacts = new BoundedMap<string, UrlFacts>(URL_FACTS)

/** The URL parsed and its path made canonical (core/path.ts); a path that could be read two ways is refused. */
function factsOf(href: string): UrlFacts {
  let facts = urlFacts.get(href)
  if (facts !== undefined) return facts
  const url = new URL(href)
  const path = canonicalPath(url.pathname)
  if (!path.ok) throw new AnteroomError('ERR_BAD_PATH', `This address cannot be served: ${path.problem}.`, { field: 'path' })
  const lang = url.search.includes(`${LANG_PARAM}=`) ? (url.searchParams.get(LANG_PARAM) ?? undefined) : undefined
  facts = { authority: url.host, host: canonicalHost(url.host), pathKey: path.key, originPath: path.path + url.search, lang }
  if (href.length <= URL_REMEMBERED) {
    urlFacts.set(href, facts)
  }
  return facts
}

/** What reading a request takes from the runtime: EdgeDeps has these (edge-context.ts). */
export interface RuntimeReading {
  /**
   * The client address, from the runtime (Node socket, cf-connecting-ip): the cap on new places per
   * network counts by it, so it must never come from a header the client wrote.
   */
  clientIp?: (c: Context) => string | undefined
  /** The scheme the visitor really used, from the runtime (TLS socket); never from the request line. */
  scheme?: (c: Context) => 'http' | 'https'
  /**
   * The headers every request is read for, from the runtime (Node: src/adapters/node/headers.ts);
   * unset, or undefined for a request, through Hono. Either way the same values (request.ts).
   */
  readHeaders?: (c: Context) => VisitorHeaders | undefined
  /** Mark cookies Secure even on plain HTTP (behind a TLS-terminating proxy). */
  secureCookies?: boolean
}

/** Reads the request; a path that could be read two ways is refused (ERR_BAD_PATH), and so are two Host headers. */
export function readIncoming(c: Context, deps: RuntimeReading): Incoming {
  const facts = factsOf(c.req.url)
  const headers = deps.readHeaders?.(c) ?? honoHeaders(c)
  // Two Host headers reach the app joined by a comma; an origin might read either one.
  if (headers.host?.includes(',')) throw new AnteroomError('ERR_BAD_REQUEST', 'The request has more than one Host header.')
  const proto = deps.scheme?.(c) ?? 'http'
  return {
    authority: facts.authority,
    proto,
    secure: deps.secureCookies === true || proto === 'https',
    host: facts.host,
    pathKey: facts.pathKey,
    originPath: facts.originPath,
    cookie: headers.cookie ?? null,
    client: deps.clientIp?.(c),
    powAnswer: headers.pow ?? null,
    json: asksForJson(headers.accept),
    lang: facts.lang,
    acceptLanguage: headers.acceptLanguage,
    context: c,
  }
}

function asksForJson(accept: string | undefined): boolean {
  const a = accept ?? ''
  return a.includes('application/json') && !a.includes('text/html')
}

/** Whether the caller asked for JSON (an app polling), not a page (a browser). */
export function wantsJson(c: Context): boolean {
  return asksForJson(c.req.header('accept'))
}

/**
 * A CSP source for one of the edge's own files on this host, so that a page may load that file and
 * no other of the origin's (as 'self' would allow). An http source also matches https (CSP 3), which
 * covers TLS ended in front of the edge. A host that is not plainly a host name gets 'self'.
 */
export function ownSource(req: Incoming, path: string): string {
  const host = req.authority
  return /^[A-Za-z0-9.-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$/.test(host) ? `${req.proto}://${host}${path}` : "'self'"
}

// A request's id for its log lines: the value of a header the operator trusts (their load balancer's
// X-Request-Id, Cloudflare's cf-ray) when it is a plain token, else one made here. Made only when a
// line is written, so a request that logs nothing (a poll, mostly) costs nothing.
import type { Context } from 'hono'

/** What a trusted header's value may be: up to 128 of these characters, nothing that could forge a log line. */
const PLAIN_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

const ids = new WeakMap<Context, string>()

/** The request's id: the same for every line of one request. */
export function requestIdOf(c: Context, trustedHeader: string | undefined): string {
  let id = ids.get(c)
  if (id === undefined) {
    const given = trustedHeader === undefined ? undefined : c.req.header(trustedHeader)
    id = given !== undefined && PLAIN_ID.test(given) ? given : crypto.randomUUID()
    ids.set(c, id)
  }
  return id
}

// The edge's router (src/http/route-cache.ts) answers as Hono's own router does, remembering answers
// per method and path: a differential check on the edge's kinds of routes, and what it keeps.
import type { Result, Router } from 'hono/router'
import { RegExpRouter } from 'hono/router/reg-exp-router'
import { SmartRouter } from 'hono/router/smart-router'
import { TrieRouter } from 'hono/router/trie-router'
import { describe, expect, it } from 'vitest'
import { cachedRouter, RouteCache } from '../src/http/route-cache.js'

/** Routes of the shapes the edge registers: its endpoints, the admin API with parameters, wildcards and the catch-all. */
const ROUTES: [string, string][] = [
  ['GET', '/.well-known/jwks.json'],
  ['GET', '/_anteroom/health'],
  ['GET', '/_anteroom/status'],
  ['GET', '/_anteroom/queue.css'],
  ['GET', '/_anteroom/admin'],
  ['POST', '/_anteroom/admin/login'],
  ['ALL', '/_anteroom/api/*'],
  ['GET', '/_anteroom/api/rooms/:id'],
  ['PUT', '/_anteroom/api/rooms/:id'],
  ['POST', '/_anteroom/api/rooms/:id/sessions/:visitor/end'],
  ['ALL', '/_anteroom/*'],
  ['ALL', '*'],
]

const PATHS = [
  '/',
  '/seats',
  '/.well-known/jwks.json',
  '/_anteroom/health',
  '/_anteroom/healthx',
  '/_anteroom/api/rooms/demo',
  '/_anteroom/api/rooms/demo/sessions/AAAAAAAAAAAAAAAA/end',
  '/_anteroom/api/rooms/',
  '/_anteroom/admin/login',
  '/_anteroom/',
  '/a/b/c',
  `/${'x'.repeat(300)}`,
]

function build<T extends Router<string>>(router: T): T {
  for (const [i, [method, path]] of ROUTES.entries()) router.add(method, path, `handler ${i}`)
  return router
}

/** What a match says, as plain data: the handlers with their parameters, in order. */
function plain(r: Result<string>): unknown {
  return JSON.parse(JSON.stringify(r))
}

/** A router that counts how often it is asked. */
function countingRouter(inner: Router<string>): Router<string> & { asked: number } {
  const counting = {
    name: 'counting',
    asked: 0,
    add: (m: string, p: string, h: string) => inner.add(m, p, h),
    match(m: string, p: string) {
      counting.asked++
      return inner.match(m, p)
    },
  }
  return counting
}

describe('RouteCache', () => {
  it("answers as Hono's default router, first and every later time (a differential check)", () => {
    const cached = build(cachedRouter<string>())
    const reference = build(new SmartRouter<string>({ routers: [new RegExpRouter<string>(), new TrieRouter<string>()] }))
    for (let round = 0; round < 3; round++)
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'])
        for (const path of PATHS)
          expect(plain(cached.match(method, path)), `${method} ${path}`).toEqual(plain(reference.match(method, path)))
  })

  it('asks the router once per method and path, always for a long path, and again after a route is added', () => {
    const inner = build(new TrieRouter<string>())
    const counting = countingRouter(inner)
    const router = new RouteCache(counting)
    for (let i = 0; i < 5; i++) router.match('GET', '/seats')
    expect(counting.asked).toBe(1)
    router.match('POST', '/seats')
    expect(counting.asked).toBe(2)
    const long = `/${'y'.repeat(300)}`
    for (let i = 0; i < 3; i++) router.match('GET', long)
    expect(counting.asked).toBe(5)
    expect(plain(router.match('GET', '/late'))).toEqual(plain(inner.match('GET', '/late')))
    router.add('GET', '/late', 'late handler')
    expect((router.match('GET', '/late')[0] as [string, unknown][]).map(([h]) => h)).toContain('late handler')
  })

  it('keeps at most 1,024 answers in all, and none for other methods: the next one starts the maps over', () => {
    const counting = countingRouter(build(new TrieRouter<string>()))
    const router = new RouteCache(counting)
    for (let i = 0; i < 1000; i++) router.match('GET', `/p${i}`)
    for (let i = 0; i < 24; i++) router.match('POST', `/p${i}`)
    router.match('GET', '/p0')
    router.match('POST', '/p0')
    expect(counting.asked).toBe(1024)
    router.match('PUT', '/p1024')
    router.match('GET', '/p0')
    expect(counting.asked).toBe(1026)
    for (let i = 0; i < 3; i++) router.match('BREW', '/p0')
    expect(counting.asked).toBe(1029)
  })
})

// What the edge's HTTP contract's topics share: the echo origin's handler and the room they use.
import { createHash } from 'node:crypto'
import type { OriginHandler } from '../../support/origin-server.js'

export interface Echo {
  method: string
  url: string
  headers: Record<string, string>
  bodyLength: number
  bodySha: string
}

/** Echoes the request; some paths add response headers the proxy must keep or drop. */
export const origin_handler: OriginHandler = (req, res, body) => {
  if (req.url?.includes('no-content')) {
    res.writeHead(204, { 'x-origin': 'kept' })
    res.end()
    return
  }
  if (req.url?.includes('set-cookie')) res.setHeader('set-cookie', ['origin_a=1; Path=/', 'origin_b=2; Path=/'])
  if (req.url?.includes('cache-public')) {
    res.setHeader('cache-control', 'public, max-age=600, s-maxage=3600, must-revalidate')
    res.setHeader('cdn-cache-control', 'max-age=3600')
    res.setHeader('cloudflare-cdn-cache-control', 'max-age=3600')
    res.setHeader('surrogate-control', 'max-age=3600')
  }
  res.setHeader('content-type', 'application/json')
  res.setHeader('connection', 'keep-alive, x-secret-hop')
  res.setHeader('x-secret-hop', 'must not pass')
  res.setHeader('x-origin', 'kept')
  res.end(
    JSON.stringify({
      method: req.method,
      url: req.url,
      headers: req.headers,
      bodyLength: body.length,
      bodySha: createHash('sha256').update(body).digest('hex'),
    }),
  )
}

/** The rooms these tests use: two active, 60 a minute, on /tickets. */
export const room = (over: Record<string, unknown> = {}) => ({
  id: 'sale',
  paths: ['/tickets'],
  totalActiveUsers: 2,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 120,
  refreshSeconds: 20,
  ...over,
})

// A tiny stand-in origin for `npm start`: it shows what the waiting room forwarded.
// The real booking origin is its own app (see the booking-origin issue).
import { Hono } from 'hono'
import { decodeJwt } from 'jose'
import { escapeHtml } from '../http/pages.js'

export function createDemoOrigin(): Hono {
  const app = new Hono()
  app.all('*', (c) => {
    const token = c.req.header('anteroom-admission')
    let who = 'no admission token (this path is not protected by a room)'
    if (token) {
      const claims = decodeJwt(token)
      who = `visitor ${String(claims.sub)} in room ${String(claims.room)}, session until ${new Date(Number(claims.exp) * 1000).toISOString()}`
    }
    return c.html(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Demo origin</title></head>
<body style="font:16px system-ui;max-width:40rem;margin:2rem auto;padding:0 1rem"><h1>You are through</h1>
<p>This is the demo origin behind Anteroom. You asked for <code>${escapeHtml(c.req.path)}</code>.</p>
<p>The edge sent: ${escapeHtml(who)}.</p></body></html>`)
  })
  return app
}

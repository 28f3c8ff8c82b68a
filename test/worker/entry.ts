// The Worker as tests run it in workerd: the production createWorker with a manual clock, plus one
// route to move that clock, and the client address a test visitor names (x-test-ip) put where
// Cloudflare puts the real one (cf-connecting-ip, which Cloudflare sets and overwrites itself).
// Built only by the tests (test/support/worker.ts), never deployed.

import { createWorker } from '../../worker/edge.js'
import type { WorkerEnv } from '../../worker/env.js'
import { ManualClock } from '../support/clock.js'

export { StoreRelay } from '../../worker/store-relay.js'

const clock = new ManualClock(0)
const worker = createWorker({ clock })

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url)
    if (url.pathname === '/__test/clock') {
      const to = Number(url.searchParams.get('set'))
      if (Number.isFinite(to) && to > 0) clock.set(to)
      return Response.json({ now: clock.now() })
    }
    const ip = request.headers.get('x-test-ip')
    if (ip === null) return worker.fetch(request, env, ctx)
    const headers = new Headers(request.headers)
    headers.delete('x-test-ip')
    headers.set('cf-connecting-ip', ip)
    return worker.fetch(new Request(request, { headers }), env, ctx)
  },
}

// The Worker as tests run it in workerd: the production createWorker with a manual clock (its fetch and
// its cron), plus two routes, one to move that clock and one that answers once the work requests left
// running after their response (ctx.waitUntil: a settings reload) has finished; and the client address
// a test visitor names (x-test-ip) put where Cloudflare puts the real one (cf-connecting-ip, which
// Cloudflare sets and overwrites itself). Built only by the tests (test/support/worker.ts), never deployed.

import { createWorker } from '../../worker/edge.js'
import type { WorkerEnv } from '../../worker/env.js'
import { ManualClock } from '../support/clock.js'

export { StoreRelay } from '../../worker/store-relay.js'

const clock = new ManualClock(0)
const worker = createWorker({ clock })
/** What requests handed to ctx.waitUntil that has not finished. */
const background = new Set<Promise<unknown>>()

function tracked(ctx: ExecutionContext): ExecutionContext {
  return {
    waitUntil(promise) {
      background.add(promise)
      void promise.finally(() => background.delete(promise)).catch(() => {})
      ctx.waitUntil(promise)
    },
    passThroughOnException: () => ctx.passThroughOnException(),
    props: ctx.props,
  }
}

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url)
    if (url.pathname === '/__test/clock') {
      const to = Number(url.searchParams.get('set'))
      if (Number.isFinite(to) && to > 0) clock.set(to)
      return Response.json({ now: clock.now() })
    }
    if (url.pathname === '/__test/settled') {
      while (background.size > 0) await Promise.allSettled([...background])
      return Response.json({ settled: true })
    }
    const ip = request.headers.get('x-test-ip')
    if (ip === null) return worker.fetch(request, env, tracked(ctx))
    const headers = new Headers(request.headers)
    headers.delete('x-test-ip')
    headers.set('cf-connecting-ip', ip)
    return worker.fetch(new Request(request, { headers }), env, tracked(ctx))
  },
  /** The cron trigger, as production's: a test fires it with Miniflare (getWorker().scheduled()). */
  async scheduled(controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext): Promise<void> {
    return worker.scheduled(controller, env, tracked(ctx))
  },
}

// What the admin watches (routes.ts mounts these behind the credential check): a room's live numbers
// (with its bot defences and its event's stock), its history, its post-event report, the last simulation
// report, and the audit log.
import { AnteroomError, isAnteroomError } from '../../src/core/errors.js'
import type { RoomSettings } from '../../src/core/settings.js'
import { type StockView, stockState, stockStop } from '../../src/core/stock.js'
import type { Refusals } from '../../src/http/refusals.js'
import { AUDIT_KINDS } from '../inputs.js'
import { serveReport } from '../report.js'
import { type AdminApp, type AdminContext, NO_STORE } from './common.js'

/**
 * The room's bot defences as the stats show them: the proof-of-work difficulty (0, off, where that
 * setting does not exist), the cap on new places per network, and the joins refused by reason.
 */
function botDefence(settings: RoomSettings, refused: Awaited<ReturnType<Refusals['counts']>>) {
  const pow = (settings as Partial<Record<string, unknown>>).powDifficulty
  return {
    powDifficulty: typeof pow === 'number' ? pow : 0,
    joinsPerNetworkPerMinute: settings.joinsPerNetworkPerMinute,
    networkPrefixIPv4: settings.networkPrefixIPv4,
    networkPrefixIPv6: settings.networkPrefixIPv6,
    refused: { total: refused.total, lastMinute: refused.lastMinute },
  }
}

/**
 * A linked room's event stock as this edge saw it at its last reload (once a second), and whether it
 * stops admissions now (core/stock.ts); null for a room that is not linked to an event.
 */
function stockStats(settings: RoomSettings, view: StockView | undefined, now: number) {
  if (settings.event === null) return null
  const counts = view?.event === settings.event ? view.counts : undefined
  return {
    event: settings.event,
    state: stockState(counts),
    stopsAdmissions: stockStop(settings, view, now) !== undefined,
    free: counts?.free ?? null,
    held: counts?.held ?? null,
    sold: counts?.sold ?? null,
    reconciledAt: counts?.reconciledAt ?? null,
    seenAt: view?.at ?? null,
  }
}
export function watchRoutes(app: AdminApp, ctx: AdminContext): void {
  const { deps, now, room } = ctx
  app.get('/api/rooms/:id/stats', async (c) => {
    const r = await room(c)
    let store: 'up' | 'down' = 'up'
    try {
      const [s, refused] = await Promise.all([deps.queue.stats(r.settings.id, deps.clock?.now()), deps.refusals.counts(r.settings.id)])
      return c.json({
        room: r.settings.id,
        mode: r.settings.mode,
        waiting: s.waiting,
        active: s.active,
        admittedLastMinute: s.admittedLastMinute,
        ratePerMinute: s.admittedLastMinute,
        // The wait of the last in line, as this edge estimates it (core/eta.ts), in whole seconds.
        etaBackOfLineSeconds:
          s.waiting === 0
            ? 0
            : r.settings.mode === 'fifo'
              ? (deps.rooms.estimate(
                  r.settings,
                  { arrival: s.now * 1000, position: s.waiting, waiting: s.waiting, admittedLastMinute: s.admittedLastMinute, now: s.now },
                  false,
                )?.seconds ?? null)
              : null,
        abandonedLastMinute: s.abandonedLastMinute,
        botDefence: botDefence(r.settings, refused),
        stock: stockStats(r.settings, deps.rooms.stock(r.settings.id), now()),
        store,
        at: s.now,
      })
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      store = 'down'
      return c.json(
        { room: r.settings.id, mode: r.settings.mode, stock: stockStats(r.settings, deps.rooms.stock(r.settings.id), now()), store },
        503,
      )
    }
  })

  app.get('/api/rooms/:id/history', async (c) => {
    const r = await room(c)
    return c.json({ room: r.settings.id, samples: await deps.queue.history(r.settings.id) })
  })

  app.get('/api/rooms/:id/report', async (c) => serveReport(c, deps.analytics, (await room(c)).settings.id, now()))

  app.get('/api/report', async (c) => {
    const html = await deps.lastReport?.()
    if (html === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No simulation report yet: run `npm run simulate`')
    // The report is static HTML with inline styles and SVG; it runs no script.
    return c.html(html, 200, {
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'",
      'cache-control': NO_STORE,
    })
  })

  app.get('/api/audit', async (c) => {
    const limit = Math.min(1000, Math.max(1, Number(c.req.query('limit') ?? 100) || 100))
    const kind = c.req.query('kind')
    if (kind !== undefined && !(AUDIT_KINDS as readonly string[]).includes(kind))
      throw new AnteroomError('ERR_BAD_REQUEST', 'kind: must be "changes" or "actions"', { field: 'kind' })
    return c.json({ entries: await deps.audit.list(limit, { kind: kind as (typeof AUDIT_KINDS)[number] | undefined, now: now() }) })
  })
}

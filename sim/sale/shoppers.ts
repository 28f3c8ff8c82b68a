// An admitted visitor's shopping: the seat map, a hold of one or two free seats (a second try if they
// were taken), a while to pay (or a release), and the confirm; a failed confirm lets the hold go.
import type { VisitorRecord } from '../verdicts.js'
import { SEATS_EVENT, sleep } from './basics.js'
import type { Jar, RunContext } from './context.js'
import type { Plan } from './visitors.js'

export async function shop(ctx: RunContext, v: VisitorRecord, jar: Jar, plan: Plan): Promise<void> {
  const { o, real, admissionCookie, now, browse, checkout } = ctx
  for (let attempt = 0; attempt < 2; attempt++) {
    const map = await browse(v, jar, 'GET', `/events/${SEATS_EVENT}/seats`)
    const free = ((map.json?.seats as { seat: string; status: string }[] | undefined) ?? []).filter((s) => s.status === 'free')
    if (!plan.buys || free.length === 0) return
    const want = 1 + Math.floor(plan.jitter() * 2)
    const start = Math.floor(plan.jitter() * free.length)
    const seats = Array.from({ length: Math.min(want, free.length) }, (_, i) => free[(start + i) % free.length]!.seat)
    const hold = await browse(v, jar, 'POST', `/events/${SEATS_EVENT}/holds`, { seats })
    if (hold.status === 409) continue
    if (hold.status !== 201) return
    const id = (hold.json?.hold as { id?: string } | undefined)?.id
    if (id === undefined) return
    // The buyer takes a while to pay (the seats are held meanwhile), or lets the seats go. The
    // checkout page looks at the stock every refresh meanwhile, which renews the session past its half.
    const payUntil = now() + plan.payMs
    while (now() < payUntil) {
      await sleep(Math.min(real.refreshSeconds * 1000, payUntil - now()))
      if (now() < payUntil) await browse(v, jar, 'GET', `/events/${SEATS_EVENT}/stock`)
    }
    if (plan.releases) {
      await browse(v, jar, 'DELETE', `/holds/${id}`)
      v.releasedHold = true
      checkout('released')
      return
    }
    const sent = now()
    const paid = await browse(v, jar, 'POST', `/holds/${id}/confirm`, undefined, { 'idempotency-key': `sim-${o.seed}-${v.id}-${id}` })
    const tickets = paid.json?.tickets as { seat: string }[] | undefined
    if (paid.status === 200 && Array.isArray(tickets)) {
      v.tickets = tickets.map((t) => t.seat)
      v.boughtAt = now()
      checkout('paid')
      // The edge cleared the admission cookie: the origin ended the session (Anteroom-Command).
      if (!jar.cookies.has(admissionCookie)) v.sessionEndedAt = sent
    } else {
      const why = paid.json?.state ?? (paid.json?.error as { code?: unknown } | undefined)?.code ?? ''
      checkout(`confirm ${paid.status} ${String(why)}`.trim())
      // The hold would lapse after its length, which the run does not compress (10 real minutes by
      // default): the buyer's page lets it go instead, so that its seats come back within the run.
      const gone = await browse(v, jar, 'DELETE', `/holds/${id}`).catch(() => undefined)
      // Without a session the release does not reach the origin either: the hold lapses on its own.
      if (gone?.status !== 200 || gone.json?.state !== undefined) checkout('hold left to lapse')
    }
    return
  }
}

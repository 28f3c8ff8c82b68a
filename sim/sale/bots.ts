// The bot farm: clients on a few /24s of their own (127.0.1.0/24, 127.0.2.0/24, ...), one address each,
// each joining every few sale seconds, without cookies, after as many places as it can take (solving
// the proof of work when asked). Each place it gets is polled as the page would (visitors.ts).
import { Agent } from 'undici'
import { nodeDigest } from '../../src/adapters/node/digest.js'
import { solveChallenge } from '../../src/core/pow.js'
import type { JoinRecord, VisitorRecord } from '../verdicts.js'
import { CLIENT_KEEP_ALIVE_MS, errorName, type SimOptions, sleep } from './basics.js'
import type { Jar, RunContext } from './context.js'
import { type Plan, visit } from './visitors.js'

export class BotFarm {
  /** The places bots got, polled like a visitor's. */
  readonly places: VisitorRecord[] = []
  readonly tasks: Promise<void>[] = []
  readonly agents: Agent[] = []
  readonly stats = { joins: 0, places: 0, refused: 0, challenges: 0, solved: 0, solveMs: 0 }
  private readonly ctx: RunContext

  constructor(ctx: RunContext) {
    this.ctx = ctx
  }

  /** Bot `b` of the farm: joins until it has its places or the sale is a minute past its end. */
  async run(b: number, farm: NonNullable<SimOptions['bots']>): Promise<void> {
    const ctx = this.ctx
    const { o, room, deadline, scheduled, prequeueAtRun, opensAtRun, random, joins, now, call, failed } = ctx
    const k = b % farm.networks
    const a = new Agent({
      connections: 4,
      keepAliveTimeout: CLIENT_KEEP_ALIVE_MS,
      localAddress: `127.0.${k + 1}.${Math.floor(b / farm.networks) + 1}`,
    })
    this.agents.push(a)
    const network = `127.0.${k + 1}.0/24`
    const every = ((farm.everySeconds ?? 5) / o.scale) * 1000
    const first = scheduled ? prequeueAtRun : 0
    const last = scheduled ? opensAtRun : (o.curve.durationSeconds / o.scale) * 1000
    // Each starts in the first half of the pre-queue (of the arrivals) and stops a sale minute after its end.
    await sleep(first + (random() * (last - first)) / 2 - now())
    const url = `/_anteroom/status?room=${room}`
    for (let mine = 0; mine < (farm.places ?? 50) && now() < last + (60 / o.scale) * 1000 && now() < deadline; ) {
      const jar: Jar = { cookies: new Map(), agent: a }
      try {
        const headers: Record<string, string> = {}
        if (o.powDifficulty) {
          const c = await call(jar, 'GET', url)
          const ch = c.json?.challenge as { value?: unknown; difficulty?: unknown } | undefined
          if (typeof ch?.value === 'string' && typeof ch.difficulty === 'number') {
            this.stats.challenges++
            const t = performance.now()
            // The reference solver, one hash at a time (node:crypto, as a bot's own machine would).
            headers['anteroom-pow'] = await solveChallenge(ch.value, ch.difficulty, nodeDigest)
            this.stats.solveMs += performance.now() - t
            this.stats.solved++
          }
        }
        const sent = now()
        const sentWall = Date.now()
        const r = await call(jar, 'GET', url, undefined, headers)
        const state = r.json?.state
        if (state !== 'scheduled') {
          const place = state === 'prequeue' || state === 'queued' || state === 'admitted'
          const rec: JoinRecord = { network, bot: true, sent: sentWall, received: Date.now(), status: r.status, place }
          if (r.status === 429) {
            rec.retryAfter = Number.isFinite(r.retryAfter)
            this.stats.refused++
          }
          joins.push(rec)
          this.stats.joins++
          if (place) {
            mine++
            this.stats.places++
            const v: VisitorRecord = { id: 1_000_000 + this.places.length, arrivedAt: 0, abandoned: false, tickets: [], bot: true }
            if (typeof r.json?.ticket === 'string') v.ticket = r.json.ticket
            if (state === 'prequeue' && v.ticket !== undefined) {
              v.joinedAt = sent
              v.prequeueTickets = [v.ticket]
            }
            this.places.push(v)
            // The place is kept: polled as the page would, until admitted.
            const plan: Plan = {
              at: now(),
              agent: a,
              network,
              bot: true,
              quits: false,
              patienceMs: 0,
              buys: false,
              browseMs: 0,
              jitter: random,
              payMs: 0,
              releases: false,
            }
            this.tasks.push(visit(ctx, v, plan, jar))
          }
        }
      } catch (err) {
        failed(`bot request failed: ${errorName(err)}`)
      }
      await sleep(every * (0.9 + 0.2 * random()))
    }
  }
}

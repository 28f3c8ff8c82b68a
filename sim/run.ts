// `npm run simulate`: runs a sale against an edge (started here by default) and writes an HTML report.
//
//   npm run simulate -- --visitors 3000 --curve ramp --duration 600 --scale 30
//   npm run simulate -- --redis --pg            # redis-server and PostgreSQL started here, on loopback
//   npm run simulate -- --edge http://127.0.0.1:8080 --admin-token T   # an edge already running
//   npm run simulate -- --predict               # what-if only: predict queue and waits, no run
//   npm run simulate -- --loss                  # Redis forgets everything mid-sale (FLUSHALL); --loss restart: killed, restarted empty
//   npm run simulate -- --failover              # a Sentinel set (primary, replica, three sentinels), the primary killed mid-sale
//   npm run simulate -- --origin-commands compare   # the same sale without and with end-session after a purchase, one report
//   npm run simulate -- --curve scheduled --bots 20 --bot-networks 4 --pow 12 --network-cap 20   # a scheduled sale with a bot farm
//   npm run simulate -- --sold-out --seats 400      # the room linked to the event: told sold out, nobody let in after the last sale
//   npm run simulate -- --presale 200 --lane separate   # presale holders with access codes in a lane (sim/presale.ts)
//
// Exit status 1 when any verdict fails.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { startPostgres } from '../scripts/lib/postgres-server.js'
import { compareCommands, renderCommandsReport } from './origin-commands.js'
import { type ArrivalCurve, predict, type RoomLimits } from './predict.js'
import { renderPresaleReport, simulatePresale } from './presale.js'
import { compare, renderReport } from './report.js'
import { type SimOptions, type SimResult, simulate } from './simulate.js'
import { extraWait, extraWaitVerdict } from './verdicts.js'

const HELP = `npm run simulate -- [options]
  --visitors N          virtual visitors (3000)
  --curve KIND          opening | ramp | waves | scheduled (ramp); scheduled: the room opens a pre-queue --duration
                        sale s before the sale; humans arrive over it, with a spike in its last 15 s and 10% after
  --duration S          arrival period, sale seconds (600); for scheduled, the pre-queue
  --waves N             waves for --curve waves (3)
  --scale S             time compression: S sale seconds per real second (30)
  --total-active N      totalActiveUsers (600)
  --per-minute N        newUsersPerMinute, sale time (100)
  --session S           sessionDurationSeconds, sale time (300)
  --refresh S           refreshSeconds, sale time (60)
  --abandon-after S     abandonAfterSeconds, sale time (180)
  --abandon-share F     share of visitors who give up while waiting (0.1)
  --patience S          mean wait before giving up, sale seconds (300)
  --buy-share F         share of admitted visitors who try to buy (0.5)
  --browse S            admitted visitors keep loading the seat map for about S sale seconds (0; 150 with a fault)
  --seed N              random seed (1)
  --redis [URL]         Redis store: a redis-server started here, or this URL (default: embedded store)
  --pg [URL]            PostgreSQL for the booking origin: a server started here, or this URL (default: PGlite)
  --worker              run the edge as a Worker in workerd (Miniflare), on Redis (started here unless --redis URL)
  --edge URL            drive an already-running edge instead (its room must have the scaled settings)
  --admin-token T       bearer token for that edge's admin stats API (store-side samples)
  --room ID             room id (demo)
  --max-p99-wait S      fail when p99 wait exceeds S sale seconds
  --loss [KIND]         Redis loss mid-sale: flush (FLUSHALL, the default) or restart (killed, started again empty);
                        starts its own redis-server
  --failover            a Sentinel set (primary, replica, three sentinels) started here, the primary killed mid-sale
  --fault-at S          when the loss or failover happens, sale seconds from the start (half of --duration)
  --no-baseline         with a fault: skip the same sale without it (run first, for the extra wait)
  --origin-commands M   off | on | compare (off): on, the room allows origin commands and the booking origin ends the
                        buyer's session with the purchase (Anteroom-Command: end-session); compare runs the sale
                        without and then with it (same seed) and writes both into one report
  --seats N             seats of the demo event, in rows of ten (40)
  --sold-out            link the room to the demo event (event: "demo"): the origin keeps its stock in the claim gate
                        the edge reads; visitors told sold out leave; verdicts: told within seconds of the last sale,
                        nobody admitted after the last sale
  --pay S               a buyer pays S sale seconds (0.5 to 1.5 times) after holding seats (0; 90 with --sold-out)
  --release-share F     share of holders who release their seats instead of paying (0; 0.2 with --sold-out)
  --lead S              scheduled: the run starts S sale s before the pre-queue (30)
  --bots N              a bot farm of N clients, each joining every 5 sale s without cookies for more places (0)
  --bot-networks K      the farm's loopback /24s, 127.0.1.0/24 ... (2)
  --bot-places N        places each bot is after (50)
  --pow D               the room's powDifficulty (0: off); humans solve as the page's worker does, bots with
                        the reference solver
  --network-cap C       the room's joinsPerNetworkPerMinute, per real minute (0: off); humans then come from
                        their own /24s, --humans-per-network each (half the cap)
  --humans-per-network N
  --eta-required        fail unless 90% of the shown waits are within ±20% of the real ones (else informational)
  --max-real-seconds S  stop the run after S real seconds (300)
  --out FILE            report path (.tmp/sim/report-<time>.html)
  --predict             what-if only: print the prediction, run nothing
  --presale N           a presale (sim/presale.ts): N holders of an access code each, and an invite link, in a lane;
                        --visitors public visitors with them; on a redis-server started here (or --redis URL)
  --lane L              the presale's lane: priority (before the public line) or separate (its own cap and rate)
  --lane-active N       the separate lane's laneActiveUsers (100)
  --lane-per-minute N   the separate lane's laneUsersPerMinute, sale time (60)
  --link-uses N         the invite link's uses (20); --link-extra N more people try it (5)`

function main(): Promise<number> | number {
  const { values } = parseArgs({
    options: {
      visitors: { type: 'string', default: '3000' },
      curve: { type: 'string', default: 'ramp' },
      duration: { type: 'string', default: '600' },
      waves: { type: 'string', default: '3' },
      scale: { type: 'string', default: '30' },
      'total-active': { type: 'string', default: '600' },
      'per-minute': { type: 'string', default: '100' },
      session: { type: 'string', default: '300' },
      refresh: { type: 'string', default: '60' },
      'abandon-after': { type: 'string', default: '180' },
      'abandon-share': { type: 'string', default: '0.1' },
      patience: { type: 'string', default: '300' },
      'buy-share': { type: 'string', default: '0.5' },
      browse: { type: 'string' },
      loss: { type: 'string' },
      failover: { type: 'boolean', default: false },
      'fault-at': { type: 'string' },
      'no-baseline': { type: 'boolean', default: false },
      'eta-required': { type: 'boolean', default: false },
      'origin-commands': { type: 'string', default: 'off' },
      seats: { type: 'string', default: '40' },
      'sold-out': { type: 'boolean', default: false },
      pay: { type: 'string' },
      'release-share': { type: 'string' },
      lead: { type: 'string', default: '30' },
      bots: { type: 'string', default: '0' },
      'bot-networks': { type: 'string', default: '2' },
      'bot-places': { type: 'string', default: '50' },
      pow: { type: 'string', default: '0' },
      'network-cap': { type: 'string', default: '0' },
      'humans-per-network': { type: 'string' },
      seed: { type: 'string', default: '1' },
      redis: { type: 'string' },
      pg: { type: 'string' },
      edge: { type: 'string' },
      worker: { type: 'boolean', default: false },
      'admin-token': { type: 'string' },
      room: { type: 'string', default: 'demo' },
      'max-p99-wait': { type: 'string' },
      'max-real-seconds': { type: 'string', default: '300' },
      out: { type: 'string' },
      predict: { type: 'boolean', default: false },
      presale: { type: 'string' },
      lane: { type: 'string', default: 'priority' },
      'lane-active': { type: 'string', default: '100' },
      'lane-per-minute': { type: 'string', default: '60' },
      'link-uses': { type: 'string', default: '20' },
      'link-extra': { type: 'string', default: '5' },
      help: { type: 'boolean', default: false },
    },
    // --redis, --pg and --loss may come without a value.
    args: process.argv
      .slice(2)
      .flatMap((a, i, all) =>
        (a === '--redis' || a === '--pg' || a === '--loss') && (all[i + 1] ?? '--').startsWith('--') ? [a, ''] : [a],
      ),
  })
  if (values.help) {
    console.log(HELP)
    return 0
  }
  const num = (name: keyof typeof values) => {
    const n = Number(values[name])
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number`)
    return n
  }
  const kind = values.curve
  if (kind !== 'opening' && kind !== 'ramp' && kind !== 'waves' && kind !== 'scheduled')
    throw new Error('--curve must be opening, ramp, waves or scheduled')
  const curve: ArrivalCurve = { kind, durationSeconds: num('duration'), waves: num('waves') }
  const limits: RoomLimits = {
    totalActiveUsers: num('total-active'),
    newUsersPerMinute: num('per-minute'),
    sessionDurationSeconds: num('session'),
    refreshSeconds: num('refresh'),
    abandonAfterSeconds: num('abandon-after'),
  }
  const scale = Math.max(1, num('scale'))
  const loss = values.loss === '' ? 'flush' : values.loss
  if (loss !== undefined && loss !== 'flush' && loss !== 'restart') throw new Error('--loss must be flush or restart')
  if (loss !== undefined && values.failover) throw new Error('--loss and --failover are two sales: give one')
  const faultKind: 'flush' | 'restart' | 'failover' | undefined = values.failover ? 'failover' : loss
  const fault =
    faultKind === undefined ? undefined : { kind: faultKind, atSeconds: values['fault-at'] === undefined ? undefined : num('fault-at') }
  const commands = values['origin-commands']
  if (commands !== 'off' && commands !== 'on' && commands !== 'compare') throw new Error('--origin-commands must be off, on or compare')
  if (commands !== 'off' && values.edge) throw new Error('--origin-commands needs the edge and origin started here (no --edge)')
  if (values.predict) {
    const p = predict({ visitors: num('visitors'), curve, limits, abandonShare: num('abandon-share'), patienceSeconds: num('patience') })
    console.log(`what-if: ${num('visitors')} visitors, ${kind}${kind === 'opening' ? '' : ` over ${curve.durationSeconds} s`}`)
    console.log(`  max queue ${Math.round(p.maxQueue)}; wait p50 ${p.p50} s, p95 ${p.p95} s, p99 ${p.p99} s (to the grant)`)
    console.log(
      `  last patient visitor admitted at ${p.drainedAt === undefined ? 'never (within 6 h)' : `${(p.drainedAt / 60).toFixed(1)} min`}`,
    )
    for (const m of p.waitByArrivalMinute.slice(0, 60)) {
      console.log(`  arrived minute ${m.minute}: mean wait ${Math.round(m.meanWait)} s, max ${m.maxWait} s`)
    }
    return 0
  }
  const options: SimOptions = {
    visitors: num('visitors'),
    curve,
    limits,
    scale,
    abandonShare: num('abandon-share'),
    patienceSeconds: num('patience'),
    buyShare: num('buy-share'),
    browseSeconds: values.browse === undefined ? (fault ? 150 : 0) : num('browse'),
    fault,
    etaRequired: values['eta-required'],
    seed: num('seed'),
    edgeUrl: values.edge,
    adminToken: values['admin-token'],
    redis: values.redis === undefined ? undefined : values.redis === '' ? true : values.redis,
    runtime: values.worker ? 'worker' : 'node',
    room: values.room,
    maxRealSeconds: num('max-real-seconds'),
    maxP99WaitSeconds: values['max-p99-wait'] === undefined ? undefined : num('max-p99-wait'),
    log: (line) => console.log(line),
    databaseUrl: values.pg,
    seats: num('seats'),
    soldOut: values['sold-out'],
    paySeconds: values.pay === undefined ? (values['sold-out'] ? 90 : 0) : num('pay'),
    releaseShare: values['release-share'] === undefined ? (values['sold-out'] ? 0.2 : 0) : num('release-share'),
    originCommands: commands === 'on',
    leadSeconds: num('lead'),
    bots: num('bots') > 0 ? { count: num('bots'), networks: Math.max(1, num('bot-networks')), places: num('bot-places') } : undefined,
    powDifficulty: num('pow'),
    networkCap: num('network-cap'),
    humansPerNetwork: values['humans-per-network'] === undefined ? undefined : num('humans-per-network'),
  }
  const out = resolve(values.out ?? `.tmp/sim/report-${new Date().toISOString().replace(/[:.]/g, '-')}.html`)
  if (values.presale !== undefined) return presale(values, options, out)
  if (commands === 'compare') return compareRuns(options, !values['no-baseline'], out)
  return run(options, !values['no-baseline']).then(async (r) => {
    writeReport(out, renderReport(r))
    printSummary(r)
    console.log(`\nreport: ${out}`)
    return r.ok ? 0 : 1
  })
}

function writeReport(out: string, html: string): void {
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, html)
  // The admin UI links to the last report (GET /_anteroom/api/report serves this file).
  mkdirSync(dirname(LAST_REPORT), { recursive: true })
  writeFileSync(LAST_REPORT, html)
}

function printSummary(r: SimResult): void {
  const width = Math.max(...r.verdicts.map((v) => v.name.length))
  console.log(
    `\n${r.ok ? 'PASS' : 'FAIL'}: ${r.visitors.length} visitors in ${r.realSeconds.toFixed(1)} real s (${r.options.scale}x), ${r.requests} requests, ${r.errors} errors${r.errors > 0 ? ` ${JSON.stringify(r.errorKinds)}` : ''}`,
  )
  for (const v of r.verdicts)
    console.log(`  ${v.info ? 'info' : v.ok ? 'pass' : 'FAIL'}  ${v.name.padEnd(width)}  ${v.measured}  [${v.limit}]`)
  if (Object.keys(r.checkouts).length > 0) console.log(`  holds: ${JSON.stringify(r.checkouts)}`)
  if (r.edgeStates) console.log(`  the edge's stock state, once a second: ${JSON.stringify(r.edgeStates)}`)
  const s = r.scheduled
  if (s) {
    const sale = (ms: number) => `${((ms * r.options.scale) / 1000).toFixed(0)} sale s`
    console.log(
      `\n  scheduled: pre-queue at ${sale(s.prequeueAt)}, opening at ${sale(s.opensAt)}; ${s.prequeueHumans} humans in the pre-queue, ${s.lateHumans} after the opening (${s.lateButCameBefore} of whom had sent their first request before it), ${s.drawn} drawn; humans on ${s.humanNetworks} /24s`,
    )
    if (s.bots)
      console.log(
        `  bots: ${s.bots.clients} on ${s.bots.networks} /24s: ${s.bots.joins} joins, ${s.bots.places} places, ${s.bots.refused} refused (429); proofs of work solved ${s.bots.solved} of ${s.bots.challenges} challenges, ${(s.bots.solveMs / Math.max(1, s.bots.solved)).toFixed(1)} ms each`,
      )
    if (s.humanPow)
      console.log(
        `  humans' proof of work: ${s.humanPow.solves} solves, ${Math.round(s.humanPow.meanHashes)} hashes each on average (about ${((s.humanPow.meanHashes * 4) / 1000).toFixed(1)} ms in a browser at 4 µs a hash); here ${s.humanPow.meanMs.toFixed(1)} ms mean, ${s.humanPow.p95Ms.toFixed(1)} ms p95 with node:crypto`,
      )
  }
  console.log('\n  prediction vs run            sale   this run   measured')
  for (const row of compare(r).rows)
    console.log(`  ${row.what.padEnd(40)} ${row.predicted.padStart(6)} ${row.predictedRun.padStart(10)} ${row.measured.padStart(10)}`)
}

/** --presale N: a sale with a presale lane (sim/presale.ts), on a redis-server started here unless --redis URL. */
async function presale(values: Record<string, string | boolean | undefined>, o: SimOptions, out: string): Promise<number> {
  const lane = values.lane
  if (lane !== 'priority' && lane !== 'separate') throw new Error('--lane must be priority or separate')
  const n = (name: string) => {
    const v = Number(values[name])
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a whole number`)
    return v
  }
  if (o.edgeUrl) throw new Error('--presale starts its own edge (no --edge)')
  const r = await simulatePresale({
    visitors: o.visitors,
    holders: n('presale'),
    lane,
    linkUses: n('link-uses'),
    linkExtra: n('link-extra'),
    limits: o.limits,
    laneActiveUsers: n('lane-active'),
    laneUsersPerMinute: n('lane-per-minute'),
    durationSeconds: o.curve.durationSeconds,
    scale: o.scale,
    seed: o.seed,
    runtime: o.runtime,
    redisUrl: typeof o.redis === 'string' ? o.redis : undefined,
    maxRealSeconds: o.maxRealSeconds,
    log: o.log,
  })
  writeReport(out, renderPresaleReport(r))
  const width = Math.max(...r.verdicts.map((v) => v.name.length))
  console.log(
    `\n${r.ok ? 'PASS' : 'FAIL'}: ${r.everyone} visitors in ${r.realSeconds.toFixed(1)} real s (${r.options.scale}x), ${r.requests} requests`,
  )
  for (const v of r.verdicts)
    console.log(`  ${v.ok ? 'pass' : 'FAIL'}  ${v.name.padEnd(width)}  ${v.measured}  [${v.limit}]${v.detail ? `  ${v.detail}` : ''}`)
  console.log(`\nreport: ${out}`)
  return r.ok ? 0 : 1
}

/** --origin-commands compare: the same sale (same seed) without and then with end-session after a purchase, in one report. */
async function compareRuns(o: SimOptions, baseline: boolean, out: string): Promise<number> {
  o.log?.('origin commands: the sale without them')
  const off = await run({ ...o, originCommands: false }, baseline)
  printSummary(off)
  o.log?.('\norigin commands: the same sale with end-session after a purchase')
  const on = await run({ ...o, originCommands: true }, baseline)
  printSummary(on)
  writeReport(out, renderCommandsReport(off, on))
  const c = compareCommands(off, on)
  console.log('\n  origin commands                                      without   with end-session')
  for (const row of c.rows) console.log(`  ${row.what.padEnd(52)} ${row.off.padStart(9)}   ${row.on}`)
  console.log('\n  seats sold per sale minute: minute without with')
  for (const m of c.perMinute) console.log(`  ${String(m.minute).padStart(6)} ${String(m.off).padStart(7)} ${String(m.on).padStart(4)}`)
  console.log(`\nreport: ${out}`)
  return off.ok && on.ok ? 0 : 1
}

/** Where the edge's admin API looks for the last report (ANTEROOM_SIM_REPORT on the edge). */
const LAST_REPORT = resolve(process.env.ANTEROOM_SIM_REPORT ?? '.tmp/sim/last-report.html')

/**
 * Starts PostgreSQL here when --pg came without a URL, and stops it afterwards. A sale with a store fault
 * runs the same sale without it first (same seed, so the same arrivals), for the extra wait it cost.
 */
async function run(o: SimOptions, baseline: boolean): Promise<SimResult> {
  const pg = o.databaseUrl === '' ? await startPostgres() : undefined
  try {
    const opts = pg ? { ...o, databaseUrl: pg.url } : o
    let base: SimResult | undefined
    if (o.fault && baseline) {
      o.log?.('baseline: the same sale without the fault')
      // On the embedded PGlite: a shared database would carry the seats it sold into the run itself.
      // On a redis-server like the run itself (the failover's baseline: one server, no Sentinel).
      base = await simulate({ ...opts, fault: undefined, databaseUrl: undefined, redis: opts.redis ?? true })
    }
    const r = await simulate(opts)
    if (base && r.fault) r.verdicts.push(extraWaitVerdict(extraWait(r.visitors, base.visitors, r.fault, r.options.scale), r.fault))
    return r
  } finally {
    await pg?.stop()
  }
}

Promise.resolve()
  .then(main)
  .then(
    (code) => {
      process.exitCode = code
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err)
      process.exitCode = 2
    },
  )

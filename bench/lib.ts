// Bench plumbing shared by the measurements (bench/measure/): settings and formats, the
// table row, child servers started and stopped by pid, load runs with wrk (a C load generator that
// costs less per request than any server it loads here; bench/wrk.lua) with latency percentiles from
// its histogram and the CPU of the generator and the servers, and Redis command counting from INFO
// commandstats and MONITOR.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Redis } from 'ioredis'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** From the environment, all optional: see bench/run.ts. */
export const SETTINGS = {
  /** Every target is measured in two segments of this many seconds. */
  segmentSeconds: Number(process.env.BENCH_SEGMENT_SECONDS ?? 5),
  /** A segment is run in slices of this many seconds, interleaved with the other targets' (compare). */
  sliceSeconds: Number(process.env.BENCH_SLICE_SECONDS ?? 1),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 2),
  /** Run every server under `node --cpu-prof`. */
  profile: process.env.BENCH_PROFILE === '1',
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`)
}

export const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US')
export const fmtRps = (n: number) => `${fmtInt(n)} req/s`
export const fmtMs = (n: number, digits = 2) => `${n.toFixed(digits)} ms`

/** What a measurement gives `npm run bench`: its rows of the table, notes, warnings and part of results.json. */
export interface Measured {
  rows: Row[]
  notes: string[]
  warnings: string[]
  results: Record<string, unknown>
}

/** One row of the table `npm run bench` prints (and of results.json). met: null for information only. */
export interface Row {
  id: string
  measurement: string
  value: string
  baseline: string
  ratio: string
  target: string
  met: boolean | null
  /**
   * For rows measured under load: the cores the generator (wrk) and the server under test were busy,
   * for the value's run and the baseline's, e.g. "wrk 0.45 edge 1.00 | wrk 0.70 hello 1.00".
   */
  cpu?: string
  /** Whether the generator, not the server, was the busier in either run: the ratio then says little, and a target counts as missed. */
  generatorBound?: boolean
}

/** "wrk 0.45 edge 1.00": the generator's and the server's cores in one run. */
export function cpuText(a: Aggregate): string {
  const gen = a.cpu[GENERATOR]?.cores
  const srv = a.server === undefined ? undefined : a.cpu[a.server]?.cores
  const f = (n: number | undefined) => (n === undefined ? '?' : n.toFixed(2))
  return `${GENERATOR} ${f(gen)} ${a.server ?? 'server'} ${f(srv)}${a.generatorBound ? ' GENERATOR-BOUND' : ''}`
}

/**
 * A row comparing `value` with a baseline of the same run, as a ratio, against a target (or 'info').
 * With `runs` (the value's and the baseline's load runs), the row shows their CPU and is flagged when
 * the generator was the bottleneck of either.
 */
export function ratioRow(
  id: string,
  measurement: string,
  value: number,
  baseline: number,
  baselineName: string,
  fmt: (n: number) => string,
  target: { op: '>=' | '<='; value: number } | string,
  runs?: { value: Aggregate; baseline: Aggregate },
): Row {
  const ratio = value / baseline
  // A throughput row says how the two segments agreed: "0.61 (0.63, 0.59)".
  const bySegment =
    fmt === fmtRps && runs !== undefined && runs.value.segmentRps.length === runs.baseline.segmentRps.length
      ? ` (${runs.value.segmentRps.map((v, i) => (v / (runs.baseline.segmentRps[i] as number)).toFixed(2)).join(', ')})`
      : ''
  const isInfo = typeof target === 'string'
  const generatorBound = runs === undefined ? undefined : runs.value.generatorBound || runs.baseline.generatorBound
  const met = isInfo ? null : (target.op === '>=' ? ratio >= target.value : ratio <= target.value) && generatorBound !== true
  return {
    id,
    measurement,
    value: fmt(value),
    baseline: `${fmt(baseline)} (${baselineName})`,
    ratio: `${ratio.toFixed(2)}${bySegment}`,
    target: isInfo ? target : `${target.op} ${target.value.toFixed(2)}`,
    met,
    ...(runs === undefined ? {} : { cpu: `${cpuText(runs.value)} | ${cpuText(runs.baseline)}`, generatorBound }),
  }
}

// ---------------------------------------------------------------------------------------------------
// Child processes

export interface Child {
  name: string
  pid: number
  url: string
  /** The last few KB of the child's stdout and stderr, for error messages. */
  output(): string
  stop(): Promise<void>
}

const running = new Set<Child>()

export interface ChildOptions {
  name: string
  /** A .ts file, relative to the project root; run as `node [nodeArgs] --import tsx <script>`. */
  script: string
  port: number
  env: Record<string, string>
  /** Polled until it answers (any status). */
  readyPath: string
  /** Run under `node --cpu-prof`, writing the profile into <profileDir>/<slug of name> on exit. */
  profileDir?: string
}

/** Starts `node --import tsx <script>` bound to 127.0.0.1:<port> and waits until it answers HTTP. */
export async function startChild(o: ChildOptions): Promise<Child> {
  // A clean environment: nothing from the caller's ANTEROOM_* settings leaks into a server under test.
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('ANTEROOM_') && !k.startsWith('BENCH_')) env[k] = v
  Object.assign(env, o.env)
  const slug = o.name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '')
  const nodeArgs = o.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}/${slug}`] : []
  const proc: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', o.script], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (proc.pid === undefined) throw new Error(`${o.name}: could not spawn`)
  const pid = proc.pid
  let tail = ''
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192)
  }
  proc.stdout?.on('data', keep)
  proc.stderr?.on('data', keep)
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  const alive = () => proc.exitCode === null && proc.signalCode === null
  const url = `http://127.0.0.1:${o.port}`
  const child: Child = {
    name: o.name,
    pid,
    url,
    output: () => tail,
    async stop() {
      running.delete(child)
      if (!alive()) return
      process.kill(pid, 'SIGTERM')
      const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])
      if (!done && alive()) {
        process.kill(pid, 'SIGKILL')
        await exited
      }
    },
  }
  running.add(child)
  const deadline = Date.now() + 30_000
  for (;;) {
    if (!alive()) throw new Error(`${o.name} exited during start-up (code ${proc.exitCode}):\n${tail}`)
    try {
      const res = await fetch(url + o.readyPath, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      break
    } catch {
      if (Date.now() > deadline) {
        await child.stop()
        throw new Error(`${o.name} did not answer on ${url} within 30 s:\n${tail}`)
      }
      await sleep(100)
    }
  }
  log(`${o.name} is up on ${url} (pid ${pid})`)
  return child
}

/** Stops every child still running, one by one, each by its pid (the load generators first). */
export async function stopAllChildren(): Promise<void> {
  stopLoads()
  for (const child of [...running]) {
    try {
      await child.stop()
    } catch {
      // Already gone.
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Load

export const CONNECTIONS = 50

/** wrk, the load generator: one thread, the bench's Lua script (bench/wrk.lua). */
export const WRK = 'wrk'
const WRK_SCRIPT = join(ROOT, 'bench', 'wrk.lua')
const WRK_DIR = join(ROOT, '.tmp', 'bench-wrk')
/** A request that takes longer counts as an error (wrk's --timeout). */
const TIMEOUT_SECONDS = 10

/** Throws unless wrk is on the PATH (Debian: apt-get install -y wrk; `npm test` and `npm run bench` do it as root). */
export function requireWrk(): void {
  if (spawnSync(WRK, ['-v'], { stdio: 'ignore' }).error === undefined) return
  if (process.getuid?.() === 0 && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).error === undefined) {
    log('installing wrk with apt-get')
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env })
    spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'ignore', env })
    if (spawnSync(WRK, ['-v'], { stdio: 'ignore' }).error === undefined) return
  }
  throw new Error('wrk is not on the PATH. Install it (Debian: apt-get install -y wrk; `npm test` and `npm run bench` do this as root).')
}

export interface Target {
  name: string
  url: string
  headers: Record<string, string>
  /** When set, every request carries the next of these as its Cookie header (a new visitor each time). */
  cookies?: readonly string[]
  /**
   * When set (instead of cookies), request n is the n-th of these, sent as written: whole HTTP/1.1
   * requests with their headers and body (rawRequest); url's path and headers are then not used.
   */
  requests?: readonly string[]
  /** Collect Redis command deltas around each measured segment of this target. */
  countRedis?: boolean
  /**
   * Processes whose CPU time to record during the measured segments, by label (e.g. edge, redis).
   * The first one is the server under test: the one the generator must be less busy than.
   */
  pids?: Record<string, number>
  /**
   * The same server in a second process, started the same way, with the same pid labels: compare()
   * runs the two in alternate turns and reports them as one target. Identical hello-worlds in four
   * processes differed by up to a fifth here for as long as they ran, so a ratio of two single
   * processes carried that luck; with two processes a side, a slow one weighs half.
   */
  alternate?: Target
}

/**
 * The target on a second process of its server (Target.alternate): the same requests to the same
 * path on the other process's address, with the other's pid under the server's label (the first of
 * pids); the other pids (the origin, Redis) are shared.
 */
export function onTwoProcesses(t: Target, other: { url: string; pid: number }): Target {
  const url = new URL(t.url)
  const [server] = Object.keys(t.pids ?? {})
  const pids = server === undefined ? t.pids : { ...t.pids, [server]: other.pid }
  return { ...t, alternate: { ...t, url: `${other.url}${url.pathname}${url.search}`, pids } }
}

export interface Segment {
  /** Responses within the run (wrk's count). */
  responses: number
  /** Requests wrk sent, including the last one per connection still in flight when it stopped. */
  sent: number
  non2xx: number
  /** Connect, read, write errors and timeouts (a status outside 2xx is in non2xx). */
  errors: number
  /** wrk's own run time. */
  seconds: number
  /** The whole wrk process, start to exit: the window the servers' CPU is read over. */
  wallSeconds: number
  /** Latency histogram: µs → responses, as measured (wrk's coordinated-omission correction taken out). */
  histogram: Map<number, number>
  statuses: Record<string, number>
  /** CPU time of wrk from its first request to its report, seconds. */
  generatorCpuSeconds: number
  /** Bursts with answers: every response's status and body, in the order they came. */
  answers?: { status: number; body: string }[]
}

let loadsStarted = 0
const loads = new Set<ChildProcess>()
/** The cookie files written, removed with stopAllChildren. */
const loadFiles = new Set<string>()

/** Writes a cookie list to a file once, for wrk's script to read (one Cookie header value a line). */
const cookieFiles = new WeakMap<readonly string[], string>()
function cookieFile(cookies: readonly string[]): string {
  let file = cookieFiles.get(cookies)
  if (file === undefined || !existsSync(file)) {
    mkdirSync(WRK_DIR, { recursive: true })
    file = join(WRK_DIR, `cookies-${process.pid}-${++loadsStarted}.txt`)
    for (const c of cookies) if (/[\r\n]/.test(c)) throw new Error('a cookie with a line break')
    writeFileSync(file, `${cookies.join('\n')}\n`)
    cookieFiles.set(cookies, file)
    loadFiles.add(file)
  }
  return file
}

/**
 * One whole HTTP/1.1 request for Target.requests. The line breaks are written as tabs in wrk's file
 * (bench/wrk.lua turns them back), so no header or body may hold a tab or a line break: JSON from
 * JSON.stringify has neither.
 */
export function rawRequest(method: string, url: string, headers: Record<string, string>, body?: string): string {
  const u = new URL(url)
  const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`]
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`)
  const text = `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`
  if (/[\t\n]/.test(text.replace(/\r\n/g, ''))) throw new Error('a request with a tab or a line break in a header or its body')
  return text
}

/** Writes raw requests to a file once, for wrk's script: one a line, CRLF written as a tab. */
const requestFiles = new WeakMap<readonly string[], string>()
function requestFile(requests: readonly string[]): string {
  let file = requestFiles.get(requests)
  if (file === undefined || !existsSync(file)) {
    mkdirSync(WRK_DIR, { recursive: true })
    file = join(WRK_DIR, `requests-${process.pid}-${++loadsStarted}.txt`)
    writeFileSync(file, `${requests.map((r) => r.replace(/\r\n/g, '\t')).join('\n')}\n`)
    requestFiles.set(requests, file)
    loadFiles.add(file)
  }
  return file
}

/**
 * wrk's histogram is corrected for coordinated omission when it reports: every latency v above the
 * interval e (run time / (responses / connections), integer µs) also adds v − e, v − 2e, ... while
 * above e. Buckets at or below e are untouched, and above e each bucket m holds its own count plus the
 * counts of m + e, m + 2e, ... So the measured count of m is corrected(m) − corrected(m + e).
 */
export function uncorrect(corrected: Map<number, number>, responses: number, connections: number, durationUs: number): Map<number, number> {
  const perConnection = Math.floor(responses / connections)
  if (perConnection === 0) return corrected
  const e = Math.floor(durationUs / perConnection)
  const out = new Map<number, number>()
  for (const [v, n] of corrected) {
    const measured = v > e ? n - (corrected.get(v + e) ?? 0) : n
    if (measured < 0) throw new Error(`wrk's histogram does not invert at ${v} µs (interval ${e} µs)`)
    if (measured > 0) out.set(v, measured)
  }
  return out
}

/** Runs wrk against a target: for some seconds, until some responses, or one burst (see bench/wrk.lua). */
function runWrk(
  target: Target,
  limit: { seconds: number } | { amount: number } | { burstAfterMs: number; answers?: boolean },
  connections: number,
): Promise<Segment> {
  mkdirSync(WRK_DIR, { recursive: true })
  const out = join(WRK_DIR, `result-${process.pid}-${++loadsStarted}.txt`)
  const env: Record<string, string> = { ...(process.env as Record<string, string>), BENCH_WRK_OUT: out }
  if (target.requests) env.BENCH_WRK_REQUESTS = requestFile(target.requests)
  else if (target.cookies) env.BENCH_WRK_COOKIES = cookieFile(target.cookies)
  const answersFile = 'answers' in limit && limit.answers ? join(WRK_DIR, `answers-${process.pid}-${loadsStarted}.txt`) : undefined
  if (answersFile !== undefined) env.BENCH_WRK_ANSWERS = answersFile
  let seconds = 600
  if ('seconds' in limit) seconds = Math.max(1, Math.round(limit.seconds))
  if ('amount' in limit) env.BENCH_WRK_AMOUNT = String(limit.amount)
  if ('burstAfterMs' in limit) {
    env.BENCH_WRK_BURST_AT = String(Date.now() + limit.burstAfterMs)
    env.BENCH_WRK_CONNECTIONS = String(connections)
    seconds = 60
  }
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, `--timeout`, `${TIMEOUT_SECONDS}s`, '-s', WRK_SCRIPT]
  for (const [k, v] of Object.entries(target.headers)) args.push('-H', `${k}: ${v}`)
  args.push(target.url)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const proc = spawn(WRK, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    loads.add(proc)
    let text = ''
    proc.stdout?.on('data', (d: Buffer) => {
      text = (text + d.toString()).slice(-8192)
    })
    proc.stderr?.on('data', (d: Buffer) => {
      text = (text + d.toString()).slice(-8192)
    })
    proc.once('error', (err) => {
      loads.delete(proc)
      reject(err)
    })
    proc.once('exit', (code) => {
      loads.delete(proc)
      const wallSeconds = (performance.now() - started) / 1000
      let result: string
      try {
        result = readFileSync(out, 'utf8')
        rmSync(out, { force: true })
      } catch {
        reject(new Error(`${target.name}: wrk (exit ${code}) wrote no results:\n${text}`))
        return
      }
      try {
        const seg = parseWrk(result, connections, wallSeconds)
        if (answersFile !== undefined) {
          seg.answers = readAnswers(answersFile)
          rmSync(answersFile, { force: true })
        }
        resolve(seg)
      } catch (err) {
        reject(new Error(`${target.name}: ${err instanceof Error ? err.message : String(err)}\n${text}`))
      }
    })
  })
}

/** The answers bench/wrk.lua wrote: "status<TAB>body" a line (line breaks in a body written as spaces). */
function readAnswers(file: string): { status: number; body: string }[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const tab = l.indexOf('\t')
      return { status: Number(l.slice(0, tab)), body: l.slice(tab + 1) }
    })
}

function parseWrk(text: string, connections: number, wallSeconds: number): Segment {
  const f = new Map<string, string>()
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ')
    if (sp > 0) f.set(line.slice(0, sp), line.slice(sp + 1))
  }
  const num = (k: string) => {
    const v = Number(f.get(k))
    if (!Number.isFinite(v)) throw new Error(`wrk's results lack ${k}`)
    return v
  }
  const responses = num('requests')
  const durationUs = num('duration_us')
  const [connect, read, write, , timeout] = (f.get('errors') ?? '').split(' ').map(Number) as number[]
  const statuses: Record<string, number> = {}
  let non2xx = 0
  for (const pair of (f.get('statuses') ?? '').split(',').filter(Boolean)) {
    const [status, n] = pair.split(':').map(Number) as [number, number]
    statuses[status] = n
    if (status < 200 || status > 299) non2xx += n
  }
  const corrected = new Map<number, number>()
  for (const pair of (f.get('histogram') ?? '').split(',').filter(Boolean)) {
    const [v, n] = pair.split(':').map(Number) as [number, number]
    corrected.set(v, n)
  }
  return {
    responses,
    sent: num('sent'),
    non2xx,
    errors: (connect ?? 0) + (read ?? 0) + (write ?? 0) + (timeout ?? 0),
    seconds: durationUs / 1e6,
    wallSeconds,
    histogram: uncorrect(corrected, responses, connections, durationUs),
    statuses,
    generatorCpuSeconds: num('cpu_us') / 1e6,
  }
}

/** One wrk run (one thread, CONNECTIONS connections) against a server, for some seconds or until some responses. */
export function runLoad(target: Target, limit: { seconds: number } | { amount: number }): Promise<Segment> {
  return runWrk(target, limit, CONNECTIONS)
}

/**
 * A burst: `connections` connections are opened first, then each sends one request at the same
 * moment (a different cookie each, when the target has them), and the run ends with the last
 * response. The latencies are from each request's write to its response.
 */
export async function runBurst(target: Target, connections: number, answers = false): Promise<Segment> {
  const seg = await runWrk(target, { burstAfterMs: 1500, answers }, connections)
  if (seg.responses + seg.errors !== connections)
    throw new Error(`${target.name}: the burst of ${connections} got ${seg.responses} responses and ${seg.errors} errors`)
  return seg
}

/** Stops the load generators still running, each by its pid, and removes their cookie files. */
function stopLoads(): void {
  for (const proc of loads) {
    if (proc.pid !== undefined && proc.exitCode === null) process.kill(proc.pid, 'SIGTERM')
  }
  for (const file of loadFiles) rmSync(file, { force: true })
  loadFiles.clear()
}

export interface Aggregate {
  name: string
  responses: number
  sent: number
  seconds: number
  rps: number
  non2xx: number
  errors: number
  statuses: Record<string, number>
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number }
  segmentRps: number[]
  /** Redis command deltas summed over the measured segments (countRedis targets only). */
  redis?: Map<string, number>
  /**
   * CPU used during the measured segments, per process: share of one core, and µs per response.
   * GENERATOR is wrk.
   */
  cpu: Record<string, { cores: number; usPerRequest: number }>
  /** The server under test (the target's first pid), and whether wrk was busier than it (or near its one core). */
  server: string | undefined
  generatorBound: boolean
}

/** The label of the load generator in Aggregate.cpu. */
export const GENERATOR = 'wrk'
/** wrk runs one thread: at this share of a core it is the bottleneck, whatever the server does. */
const GENERATOR_SATURATED = 0.9

/** Latency percentiles (nearest rank, as scripts/lib/stats.ts) of a histogram of µs, in ms. */
export function histogramStats(h: Map<number, number>): {
  count: number
  mean: number
  p50: number
  p90: number
  p99: number
  max: number
} {
  const values = [...h.keys()].sort((a, b) => a - b)
  let count = 0
  let sum = 0
  for (const v of values) {
    const n = h.get(v) as number
    count += n
    sum += v * n
  }
  const at = (p: number) => {
    if (count === 0) return Number.NaN
    const rank = Math.min(count, Math.max(1, Math.ceil((p / 100) * count)))
    let seen = 0
    for (const v of values) {
      seen += h.get(v) as number
      if (seen >= rank) return v / 1000
    }
    return (values[values.length - 1] as number) / 1000
  }
  return { count, mean: count === 0 ? Number.NaN : sum / count / 1000, p50: at(50), p90: at(90), p99: at(99), max: at(100) }
}

export function mergeHistograms(hs: Iterable<Map<number, number>>): Map<number, number> {
  const all = new Map<number, number>()
  for (const h of hs) for (const [v, n] of h) all.set(v, (all.get(v) ?? 0) + n)
  return all
}

/** @param measured the segments, each the slices it was run in (one each, outside compare). */
function aggregate(
  name: string,
  measured: Segment[][],
  redis: Map<string, number> | undefined,
  cpuSeconds: Map<string, number>,
  server: string | undefined,
): Aggregate {
  const segments = measured.flat()
  const responses = segments.reduce((s, x) => s + x.responses, 0)
  const seconds = segments.reduce((s, x) => s + x.seconds, 0)
  const wallSeconds = segments.reduce((s, x) => s + x.wallSeconds, 0)
  const generator = segments.reduce((s, x) => s + x.generatorCpuSeconds, 0)
  const statuses: Record<string, number> = {}
  for (const s of segments) for (const [k, v] of Object.entries(s.statuses)) statuses[k] = (statuses[k] ?? 0) + v
  const { mean, p50, p90, p99, max } = histogramStats(mergeHistograms(segments.map((s) => s.histogram)))
  const cpu: Aggregate['cpu'] = {
    [GENERATOR]: { cores: generator / seconds, usPerRequest: (generator * 1e6) / responses },
  }
  for (const [k, v] of cpuSeconds) cpu[k] = { cores: v / wallSeconds, usPerRequest: (v * 1e6) / responses }
  const gen = cpu[GENERATOR]?.cores ?? 0
  const srv = server === undefined ? undefined : cpu[server]?.cores
  return {
    name,
    responses,
    sent: segments.reduce((s, x) => s + x.sent, 0),
    seconds,
    rps: responses / seconds,
    non2xx: segments.reduce((s, x) => s + x.non2xx, 0),
    errors: segments.reduce((s, x) => s + x.errors, 0),
    statuses,
    latencyMs: { mean, p50, p90, p99, max },
    segmentRps: measured.map((m) => m.reduce((n, x) => n + x.responses, 0) / m.reduce((n, x) => n + x.seconds, 0)),
    redis,
    cpu,
    server,
    generatorBound: gen >= GENERATOR_SATURATED || (srv !== undefined && gen >= srv),
  }
}

/**
 * Measures targets against each other in one sitting: a warm-up per target, then two measured
 * segments per target of segmentSeconds each, every segment run in slices of sliceSeconds that take
 * turns with the other targets' in palindromic order (A B C C B A A B C ...). The machines this runs
 * on drift by a fifth from one second to the next (a virtual machine's neighbours): a segment of 5 s
 * in one go can land on a slow stretch that its baseline missed, and a ratio moved by 0.1 or more
 * between two runs. Taking turns every second, each target sees the same stretches. A target with an
 * alternate (a second process of the same server) runs it in every other turn.
 */
export async function compare(
  targets: Target[],
  options: { warmupSeconds?: number; segmentSeconds?: number; sliceSeconds?: number; redis?: Redis } = {},
): Promise<Map<string, Aggregate>> {
  const o = {
    warmupSeconds: SETTINGS.warmupSeconds,
    segmentSeconds: SETTINGS.segmentSeconds,
    sliceSeconds: SETTINGS.sliceSeconds,
    ...options,
  }
  for (const t of targets) {
    log(`warm-up ${t.name}${t.alternate ? ' (both processes)' : ''} (${o.warmupSeconds} s)`)
    await runLoad(t, { seconds: o.warmupSeconds })
    if (t.alternate) await runLoad(t.alternate, { seconds: o.warmupSeconds })
  }
  const slices = Math.max(1, Math.round(o.segmentSeconds / o.sliceSeconds))
  const sliceSeconds = o.segmentSeconds / slices
  const segments = new Map<string, Segment[][]>(targets.map((t) => [t.name, [[], []]]))
  const deltas = new Map<string, Map<string, number>>()
  const cpu = new Map<string, Map<string, number>>(targets.map((t) => [t.name, new Map()]))
  for (let half = 0; half < 2; half++) {
    log(`measure segment ${half + 1} of ${targets.map((t) => t.name).join(', ')} (${slices} turns of ${sliceSeconds} s each)`)
    for (let turn = 0; turn < slices; turn++) {
      for (const t of turn % 2 === 0 ? targets : [...targets].reverse()) {
        // A target with two processes: each takes every other turn (the other one in the second segment).
        const run = t.alternate !== undefined && (turn + half) % 2 === 1 ? t.alternate : t
        const before = t.countRedis && o.redis ? await commandStats(o.redis) : undefined
        const cpuBefore = cpuTimes(run.pids ?? {})
        const seg = await runLoad(run, { seconds: sliceSeconds })
        const cpuAfter = cpuTimes(run.pids ?? {})
        const acc = cpu.get(t.name) as Map<string, number>
        for (const [k, v] of cpuAfter) acc.set(k, (acc.get(k) ?? 0) + v - (cpuBefore.get(k) ?? 0))
        if (before && o.redis) {
          const d = diffStats(before, await commandStats(o.redis))
          const acc = deltas.get(t.name) ?? new Map<string, number>()
          for (const [k, v] of d) acc.set(k, (acc.get(k) ?? 0) + v)
          deltas.set(t.name, acc)
        }
        segments.get(t.name)?.[half]?.push(seg)
      }
    }
  }
  return new Map(
    targets.map((t) => [
      t.name,
      aggregate(t.name, segments.get(t.name) ?? [], deltas.get(t.name), cpu.get(t.name) ?? new Map(), Object.keys(t.pids ?? {})[0]),
    ]),
  )
}

/** A paired comparison of two targets (paired below). */
export interface Paired {
  /** The median of the pairs' ratios (a's rate over b's, one pair of adjacent turns each), and their quartiles. */
  median: number
  quartiles: [number, number]
  pairs: number
  /** The servers' CPU per response over all the turns, µs: a's and b's. */
  cpuUs: [number, number]
}

/**
 * Two targets compared pair by pair: `pairs` pairs of adjacent turns of sliceSeconds (a b, then b a,
 * so that neither always goes first), each pair giving one ratio of a's rate to b's; with alternates,
 * the two processes of each side take every other pair. A throughput figure here moves by a tenth
 * from one second to the next; two adjacent seconds move together, so the median of the pairs'
 * ratios resolves a difference of a few percent that two segments of a few seconds do not.
 */
export async function paired(a: Target, b: Target, pairs: number, sliceSeconds = SETTINGS.sliceSeconds): Promise<Paired> {
  const ratios: number[] = []
  const cpu = [0, 0]
  const responses = [0, 0]
  const turn = async (t: Target, side: number, i: number) => {
    const run = t.alternate !== undefined && i % 2 === 1 ? t.alternate : t
    const server = Object.keys(run.pids ?? {})[0]
    const pid = server === undefined ? {} : { [server]: (run.pids ?? {})[server] as number }
    const before = cpuTimes(pid)
    const seg = await runLoad(run, { seconds: sliceSeconds })
    const after = cpuTimes(pid)
    for (const [k, v] of after) cpu[side] = (cpu[side] as number) + v - (before.get(k) ?? 0)
    responses[side] = (responses[side] as number) + seg.responses
    return seg.responses / seg.seconds
  }
  log(`paired turns: ${a.name} against ${b.name} (${pairs} pairs of ${sliceSeconds} s turns)`)
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      const ra = await turn(a, 0, i)
      ratios.push(ra / (await turn(b, 1, i)))
    } else {
      const rb = await turn(b, 1, i)
      ratios.push((await turn(a, 0, i)) / rb)
    }
  }
  const sorted = [...ratios].sort((x, y) => x - y)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
  return {
    median: at(0.5),
    quartiles: [at(0.25), at(0.75)],
    pairs,
    cpuUs: [((cpu[0] as number) * 1e6) / (responses[0] as number), ((cpu[1] as number) * 1e6) / (responses[1] as number)],
  }
}

/** One burst (runBurst) with the CPU of the target's processes over it. */
export async function burst(target: Target, connections: number): Promise<Aggregate> {
  return (await burstWithAnswers(target, connections, false)).aggregate
}

/** The same, also giving every response's status and body (burst mode of bench/wrk.lua with BENCH_WRK_ANSWERS). */
export async function burstWithAnswers(
  target: Target,
  connections: number,
  answers = true,
): Promise<{ aggregate: Aggregate; answers: { status: number; body: string }[] }> {
  const cpuBefore = cpuTimes(target.pids ?? {})
  const seg = await runBurst(target, connections, answers)
  const cpuAfter = cpuTimes(target.pids ?? {})
  const cpu = new Map<string, number>()
  for (const [k, v] of cpuAfter) cpu.set(k, v - (cpuBefore.get(k) ?? 0))
  return { aggregate: aggregate(target.name, [[seg]], undefined, cpu, Object.keys(target.pids ?? {})[0]), answers: seg.answers ?? [] }
}

/** The processes this one started, and theirs (Linux /proc), by pid. */
function descendants(): number[] {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = []
  const todo = [process.pid]
  while (todo.length > 0) {
    for (const c of children.get(todo.pop() as number) ?? []) {
      out.push(c)
      todo.push(c)
    }
  }
  return out
}

/**
 * The pid of the process this one started (or one of theirs) that listens on a loopback TCP port:
 * for servers started through a library (workerd under Miniflare), whose pid it does not give.
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = new Set<string>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      // local address "ADDR:PORT" in hex, state 0A = LISTEN, inode in field 10.
      if (f.length > 9 && f[3] === '0A' && Number.parseInt((f[1] ?? '').split(':')[1] ?? '', 16) === port) inodes.add(f[9] as string)
    }
  }
  for (const pid of descendants()) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const link = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (link && inodes.has(link[1] as string)) return pid
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined
}

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every common kernel). */
const TICKS_PER_SECOND = 100

/** CPU seconds (user + system) so far of the given processes. */
export function cpuTimes(pids: Record<string, number>): Map<string, number> {
  const out = new Map<string, number>()
  for (const [label, pid] of Object.entries(pids)) {
    try {
      // Fields after the command name, which is in parentheses and may contain spaces.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(label, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND)
    } catch {
      // Not Linux, or the process is gone: no figure.
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------
// Redis command counting

/** calls per command from INFO commandstats. */
export async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const text = await redis.info('commandstats')
  const out = new Map<string, number>()
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
    if (m) out.set((m[1] as string).toLowerCase(), Number(m[2]))
  }
  return out
}

export function diffStats(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>()
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0)
    if (d !== 0) out.set(k, d)
  }
  return out
}

export const SCRIPT_ENTRY_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'])

/**
 * What an edge sends once a second, whatever its traffic (RoomDirectory.reload): HGETALL of the
 * settings, and each room's watch, one pipeline (RedisQueueStore.watch: ZRANGEBYSCORE, HMGET, ZCARD,
 * GET, ZMSCORE or ECHO when no visitor is asked after, ZRANGE). No request sends any of these.
 */
export const RELOAD_COMMANDS = new Set(['hgetall', 'zrangebyscore', 'hmget', 'zcard', 'get', 'zmscore', 'echo', 'zrange'])
/** The reload's commands that no Lua script of ours runs, so commandstats can tell them from a script's. */
const RELOAD_ONLY = new Set(['hgetall', 'zmscore', 'echo'])

export interface CommandCount {
  /** EVAL/EVALSHA/FCALL calls: one client round trip each, whatever the script runs inside. */
  scripts: number
  /** HGETALL, ZMSCORE, ECHO: the room directory's reload (once a second per edge process; its other commands are among insideScripts). */
  settingsReload: number
  /** Any other command a client sent (neither run by our scripts nor the bench's own INFO). */
  plain: number
  /** Commands Redis ran inside the scripts (commandstats counts them too); not client calls. */
  insideScripts: number
  byCommand: Record<string, number>
}

/**
 * Splits a commandstats delta into what clients sent and what scripts ran.
 *
 * INFO commandstats (and total_commands_processed) count the commands a Lua script runs through
 * redis.call as well as the EVALSHA that ran it: the bench shows this at start-up with EVAL of a
 * two-command script, which adds eval +1, set +1, get +1. So a plain sum of the delta is not "commands
 * sent". We count instead:
 *   client commands = eval* + fcall* calls + every other command that none of our Lua scripts uses
 * where "commands our scripts use" is read from src/adapters/redis/lua/*.lua (redis.call('X', ...)).
 * INFO is left out: the bench itself sends it to take these snapshots. The once-a-second reload's
 * HGETALL, ZMSCORE and ECHO are reported apart (settingsReload); its other commands are also our
 * scripts' and count among those. A plain command that our scripts also use (say a bare ZREM) would hide among the
 * script-internal ones; the MONITOR sample (monitorSample) counts by connection and catches that case.
 */
export function classify(delta: Map<string, number>, scriptCommands: Set<string>): CommandCount {
  const c: CommandCount = { scripts: 0, settingsReload: 0, plain: 0, insideScripts: 0, byCommand: Object.fromEntries(delta) }
  for (const [cmd, n] of delta) {
    if (SCRIPT_ENTRY_COMMANDS.has(cmd)) c.scripts += n
    else if (cmd === 'info') continue
    else if (RELOAD_ONLY.has(cmd)) c.settingsReload += n
    else if (scriptCommands.has(cmd)) c.insideScripts += n
    else c.plain += n
  }
  return c
}

/** The commands each of our Lua scripts can run, read from their source and the parts they include (lua/lib/). */
export function scriptCommands(): Set<string> {
  const dir = join(ROOT, 'src', 'adapters', 'redis', 'lua')
  const out = new Set<string>()
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.lua'))) {
    const source = readFileSync(join(dir, file), 'utf8')
    for (const m of source.matchAll(/redis\.p?call\(\s*['"]([A-Za-z_]+)['"]/g)) out.add((m[1] as string).toLowerCase())
  }
  return out
}

export interface MonitorSample {
  requests: number
  clientCommands: Record<string, number>
  insideScripts: number
}

/**
 * Exact client-sent commands on a small sequential sample: MONITOR names the source of every command,
 * a client address or "lua" for commands a script ran. The bench's own client sends nothing meanwhile.
 */
export async function monitorSample(redis: Redis, requests: number, send: (i: number) => Promise<void>): Promise<MonitorSample> {
  // The bench's own connection is left out by address, and nothing counts once the sample is over:
  // MONITOR keeps streaming until its connection has really closed.
  const own = /addr=(\S+)/.exec(String(await redis.call('CLIENT', 'INFO')))?.[1]
  const monitor = await redis.monitor()
  const clientCommands: Record<string, number> = {}
  let insideScripts = 0
  let counting = true
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (!counting || source === own) return
    if (source === 'lua') insideScripts++
    else {
      const cmd = String(args[0]).toLowerCase()
      clientCommands[cmd] = (clientCommands[cmd] ?? 0) + 1
    }
  })
  await sleep(100)
  for (let i = 0; i < requests; i++) await send(i)
  await sleep(300)
  counting = false
  const closed = new Promise<void>((resolve) => monitor.once('end', () => resolve()))
  monitor.disconnect()
  await Promise.race([closed, sleep(2000)])
  return { requests, clientCommands, insideScripts }
}

/** used_memory and friends from INFO memory. */
export async function memoryInfo(redis: Redis): Promise<Record<string, number>> {
  const text = await redis.info('memory')
  const out: Record<string, number> = {}
  for (const line of text.split('\r\n')) {
    const m = /^([a-z_]+):(\d+)$/.exec(line)
    if (m) out[m[1] as string] = Number(m[2])
  }
  return out
}

// Load runs with wrk (a C load generator that costs less per request than any server it loads here;
// bench/wrk.lua): the targets, the runs for some seconds, some responses or one burst, and their parsed
// segments.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { log, ROOT } from './common.js'
import { cpuTimes } from './cpu.js'

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
  /** Bursts: CPU time of wrk from the burst's first request to its report, seconds. */
  generatorBurstCpuSeconds?: number
  /** Bursts with answers: every response's status and body, in the order they came. */
  answers?: { status: number; body: string }[]
  /**
   * Bursts: CPU seconds from the burst's moment (its connections open) to wrk's exit, of the target's
   * pids and of wrk (GENERATOR's label), each with the processes it started; /proc counts in 10 ms ticks.
   */
  burstCpu?: Map<string, number>
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
export function runWrk(
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
    // A burst's own CPU: the servers' read at its moment, when every connection is open, and again at
    // wrk's exit (wrk counts its own: bench/wrk.lua's cpu_burst_us).
    let atBurst: Map<string, number> | undefined
    const burstTimer =
      'burstAfterMs' in limit
        ? setTimeout(() => (atBurst = cpuTimes(target.pids ?? {})), Math.max(0, Number(env.BENCH_WRK_BURST_AT) - Date.now()))
        : undefined
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
      clearTimeout(burstTimer)
      const atExit = atBurst === undefined ? undefined : cpuTimes(target.pids ?? {})
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
        if (atBurst !== undefined && atExit !== undefined && seg.generatorBurstCpuSeconds !== undefined) {
          const burstCpu = new Map<string, number>([['wrk', seg.generatorBurstCpuSeconds]])
          for (const [k, v] of atExit) burstCpu.set(k, v - (atBurst.get(k) ?? 0))
          seg.burstCpu = burstCpu
        }
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
    generatorBurstCpuSeconds: f.has('cpu_burst_us') ? Number(f.get('cpu_burst_us')) / 1e6 : undefined,
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
export function stopLoads(): void {
  for (const proc of loads) {
    if (proc.pid !== undefined && proc.exitCode === null) process.kill(proc.pid, 'SIGTERM')
  }
  for (const file of loadFiles) rmSync(file, { force: true })
  loadFiles.clear()
}

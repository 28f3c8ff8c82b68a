// Bench plumbing shared by the measurements (bench/measure/): settings and formats, the
// table row, child servers started and stopped by pid, autocannon load runs with exact latency
// percentiles, and Redis command counting from INFO commandstats and MONITOR.
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import type { Redis } from 'ioredis'
import { percentile } from '../scripts/lib/stats.js'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** From the environment, all optional: see bench/run.ts. */
export const SETTINGS = {
  /** Every target is measured in two segments of this many seconds. */
  segmentSeconds: Number(process.env.BENCH_SEGMENT_SECONDS ?? 5),
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
}

/** A row comparing `value` with a baseline of the same run, as a ratio, against a target (or 'info'). */
export function ratioRow(
  id: string,
  measurement: string,
  value: number,
  baseline: number,
  baselineName: string,
  fmt: (n: number) => string,
  target: { op: '>=' | '<='; value: number } | string,
): Row {
  const ratio = value / baseline
  const isInfo = typeof target === 'string'
  return {
    id,
    measurement,
    value: fmt(value),
    baseline: `${fmt(baseline)} (${baselineName})`,
    ratio: ratio.toFixed(2),
    target: isInfo ? target : `${target.op} ${target.value.toFixed(2)}`,
    met: isInfo ? null : target.op === '>=' ? ratio >= target.value : ratio <= target.value,
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

/** Stops every child still running, one by one, each by its pid. */
export async function stopAllChildren(): Promise<void> {
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

export interface Target {
  name: string
  url: string
  headers: Record<string, string>
  /** When set, every request carries the next of these as its Cookie header (a new visitor each time). */
  cookies?: readonly string[]
  /** Collect Redis command deltas around each measured segment of this target. */
  countRedis?: boolean
  /** Processes whose CPU time to record during the measured segments, by label (e.g. server, redis). */
  pids?: Record<string, number>
}

export interface Segment {
  responses: number
  /** Requests autocannon sent, including the last one per connection still in flight when it stopped. */
  sent: number
  non2xx: number
  errors: number
  seconds: number
  latencies: number[]
  statuses: Record<string, number>
}

/**
 * One autocannon run in this process against a child server. Latencies come from the per-response
 * event (float ms), because autocannon's own histogram rounds to whole milliseconds.
 */
export function runLoad(target: Target, limit: { seconds: number } | { amount: number }): Promise<Segment> {
  const cookies = target.cookies
  let next = 0
  const requests: autocannon.Request[] | undefined =
    cookies === undefined
      ? undefined
      : [
          {
            setupRequest: (req) => {
              // Called once for every request autocannon builds (each connection builds its next
              // request after each response); the shared counter hands out the cookies in turn.
              req.headers = { ...req.headers, cookie: cookies[next++ % cookies.length] }
              return req
            },
          },
        ]
  const latencies: number[] = []
  const statuses: Record<string, number> = {}
  let responses = 0
  let non2xx = 0
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const instance = autocannon(
      {
        url: target.url,
        connections: CONNECTIONS,
        pipelining: 1,
        timeout: 10,
        headers: target.headers,
        ...(requests ? { requests } : {}),
        ...('seconds' in limit ? { duration: limit.seconds } : { amount: limit.amount }),
      },
      (err, result) => {
        if (err) {
          reject(err)
          return
        }
        resolve({
          responses,
          sent: result.requests.sent,
          non2xx,
          errors: result.errors,
          seconds: (performance.now() - started) / 1000,
          latencies,
          statuses,
        })
      },
    )
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      responses++
      latencies.push(responseTime)
      if (statusCode < 200 || statusCode > 299) non2xx++
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
    })
  })
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
   * "load generator" is this process (autocannon).
   */
  cpu: Record<string, { cores: number; usPerRequest: number }>
}

function aggregate(name: string, segments: Segment[], redis: Map<string, number> | undefined, cpuSeconds: Map<string, number>): Aggregate {
  const responses = segments.reduce((s, x) => s + x.responses, 0)
  const seconds = segments.reduce((s, x) => s + x.seconds, 0)
  const all = new Float64Array(responses)
  let o = 0
  for (const s of segments) for (const v of s.latencies) all[o++] = v
  all.sort()
  const statuses: Record<string, number> = {}
  for (const s of segments) for (const [k, v] of Object.entries(s.statuses)) statuses[k] = (statuses[k] ?? 0) + v
  let sum = 0
  for (const v of all) sum += v
  return {
    name,
    responses,
    sent: segments.reduce((s, x) => s + x.sent, 0),
    seconds,
    rps: responses / seconds,
    non2xx: segments.reduce((s, x) => s + x.non2xx, 0),
    errors: segments.reduce((s, x) => s + x.errors, 0),
    statuses,
    latencyMs: {
      mean: sum / all.length,
      p50: percentile(all, 50),
      p90: percentile(all, 90),
      p99: percentile(all, 99),
      max: all.length > 0 ? (all[all.length - 1] as number) : Number.NaN,
    },
    segmentRps: segments.map((s) => s.responses / s.seconds),
    redis,
    cpu: Object.fromEntries([...cpuSeconds].map(([k, v]) => [k, { cores: v / seconds, usPerRequest: (v * 1e6) / responses }])),
  }
}

/**
 * Measures targets against each other in one sitting: a warm-up per target, then measured segments
 * in palindromic order (A B C C B A), so slow drift of a shared, noisy machine hits every target
 * alike. Each target gets 2 × segmentSeconds of measurement (SETTINGS unless given).
 */
export async function compare(
  targets: Target[],
  options: { warmupSeconds?: number; segmentSeconds?: number; redis?: Redis } = {},
): Promise<Map<string, Aggregate>> {
  const o = { warmupSeconds: SETTINGS.warmupSeconds, segmentSeconds: SETTINGS.segmentSeconds, ...options }
  for (const t of targets) {
    log(`warm-up ${t.name} (${o.warmupSeconds} s)`)
    await runLoad(t, { seconds: o.warmupSeconds })
  }
  const segments = new Map<string, Segment[]>(targets.map((t) => [t.name, []]))
  const deltas = new Map<string, Map<string, number>>()
  const cpu = new Map<string, Map<string, number>>(targets.map((t) => [t.name, new Map()]))
  for (const t of [...targets, ...[...targets].reverse()]) {
    log(`measure ${t.name} (${o.segmentSeconds} s)`)
    const before = t.countRedis && o.redis ? await commandStats(o.redis) : undefined
    const cpuBefore = cpuTimes(t.pids ?? {})
    const seg = await runLoad(t, { seconds: o.segmentSeconds })
    const cpuAfter = cpuTimes(t.pids ?? {})
    const acc = cpu.get(t.name) as Map<string, number>
    for (const [k, v] of cpuAfter) acc.set(k, (acc.get(k) ?? 0) + v - (cpuBefore.get(k) ?? 0))
    if (before && o.redis) {
      const d = diffStats(before, await commandStats(o.redis))
      const acc = deltas.get(t.name) ?? new Map<string, number>()
      for (const [k, v] of d) acc.set(k, (acc.get(k) ?? 0) + v)
      deltas.set(t.name, acc)
    }
    segments.get(t.name)?.push(seg)
  }
  return new Map(
    targets.map((t) => [t.name, aggregate(t.name, segments.get(t.name) ?? [], deltas.get(t.name), cpu.get(t.name) ?? new Map())]),
  )
}

/** Linux USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every common kernel). */
const TICKS_PER_SECOND = 100

/** CPU seconds (user + system) so far of the given processes, and of this one as "load generator". */
function cpuTimes(pids: Record<string, number>): Map<string, number> {
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
  const self = process.cpuUsage()
  out.set('load generator', (self.user + self.system) / 1e6)
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

export interface CommandCount {
  /** EVAL/EVALSHA/FCALL calls: one client round trip each, whatever the script runs inside. */
  scripts: number
  /** HGETALL: the room directory's settings reload (once a second per edge process). */
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
 * INFO is left out: the bench itself sends it to take these snapshots. HGETALL is reported apart
 * (settingsReload). A plain command that our scripts also use (say a bare ZREM) would hide among the
 * script-internal ones; the MONITOR sample (monitorSample) counts by connection and catches that case.
 */
export function classify(delta: Map<string, number>, scriptCommands: Set<string>): CommandCount {
  const c: CommandCount = { scripts: 0, settingsReload: 0, plain: 0, insideScripts: 0, byCommand: Object.fromEntries(delta) }
  for (const [cmd, n] of delta) {
    if (SCRIPT_ENTRY_COMMANDS.has(cmd)) c.scripts += n
    else if (cmd === 'info') continue
    else if (cmd === 'hgetall') c.settingsReload += n
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

// Redis command counting from INFO commandstats and MONITOR, and INFO memory.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Redis } from 'ioredis'
import { ROOT, sleep } from './common.js'

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

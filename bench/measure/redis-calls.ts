// Measurement 4: Redis round trips per request, from the commands counted over the measured segments
// of measurements 1 (queued polls) and 2 (admitted requests), and exactly on a MONITOR sample of
// sequential requests, which each of them takes while its edge runs.
//   Baseline: none; a count.
//   Target: at most one script call per poll (concurrent polls of a room share one EVALSHA, so under
//   load a poll costs less); no call at all for an admitted request. With the settings reload (one
//   HGETALL and one watch pipeline per room a second per edge) for information.
import type { Redis } from 'ioredis'
import {
  type Aggregate,
  type CommandCount,
  classify,
  commandStats,
  diffStats,
  fmtInt,
  type MonitorSample,
  RELOAD_COMMANDS,
  type Row,
  scriptCommands,
} from '../lib.js'

/** Sequential requests in each MONITOR sample. */
export const MONITOR_SAMPLE = 200

export interface RedisCalls {
  rows: Row[]
  notes: string[]
  warnings: string[]
  results: { commandstatsExperiment: Record<string, number>; redisCommands: Record<string, unknown> }
}

export async function measureRedisCalls(
  redis: Redis,
  poll: { run: Aggregate; monitor: MonitorSample },
  admitted: { run: Aggregate; monitor: MonitorSample },
): Promise<RedisCalls> {
  const notes: string[] = []
  const warnings: string[] = []
  const experiment = await commandstatsExperiment(redis)
  notes.push(experiment.note)
  const scriptCmds = scriptCommands()
  const pollCount = classify(poll.run.redis ?? new Map(), scriptCmds)
  const admittedCount = classify(admitted.run.redis ?? new Map(), scriptCmds)
  // Per request sent: the requests still in flight when a segment stopped reached the edge and Redis too.
  const pollPer = perRequest(pollCount, poll.run.sent)
  const admittedPer = perRequest(admittedCount, admitted.run.sent)
  const pollMonitorClient = withoutReload(poll.monitor)
  const admittedMonitorClient = withoutReload(admitted.monitor)
  notes.push(
    `commands per poll: ${fmtInt(pollCount.scripts)} script calls + ${fmtInt(pollCount.plain)} plain + ${fmtInt(pollCount.settingsReload)} reload (HGETALL, ZMSCORE, ECHO) ` +
      `over ${fmtInt(poll.run.sent)} polls sent (${fmtInt(poll.run.responses)} answered within the segments); Redis ran ${fmtInt(pollCount.insideScripts)} commands inside the scripts ` +
      `(${(pollCount.insideScripts / Math.max(1, pollCount.scripts)).toFixed(1)} per call, not round trips). ` +
      `MONITOR sample of ${MONITOR_SAMPLE} sequential polls: client commands ${JSON.stringify(poll.monitor.clientCommands)} ` +
      `(${(pollMonitorClient / MONITOR_SAMPLE).toFixed(3)} per poll without the reload), ${poll.monitor.insideScripts} inside scripts.`,
    `commands per admitted request: ${fmtInt(admittedPer.clientCalls)} client calls + ${fmtInt(admittedCount.settingsReload)} reload over ` +
      `${fmtInt(admitted.run.sent)} requests sent. MONITOR sample of ${MONITOR_SAMPLE}: ${JSON.stringify(admitted.monitor.clientCommands)} ` +
      `(${(admittedMonitorClient / MONITOR_SAMPLE).toFixed(3)} per request without the reload).`,
  )
  if (pollMonitorClient !== MONITOR_SAMPLE) warnings.push(`MONITOR saw ${pollMonitorClient} client commands for ${MONITOR_SAMPLE} polls`)
  if (admittedMonitorClient !== 0)
    warnings.push(`MONITOR saw ${admittedMonitorClient} client commands for ${MONITOR_SAMPLE} admitted requests`)
  const row = (id: string, measurement: string, value: string, target: string, met: boolean | null): Row => ({
    id,
    measurement,
    value,
    baseline: '-',
    ratio: '-',
    target,
    met,
  })
  return {
    rows: [
      // Concurrent polls of a room share one EVALSHA, so under load a poll costs less than one call;
      // the MONITOR sample shows exactly one call per poll when polls come one at a time.
      row(
        'redis_calls_per_poll',
        '4. Redis calls per poll (under load, batched)',
        pollPer.withoutSettingsReload.toFixed(4),
        '<= 1',
        pollPer.withoutSettingsReload <= 1.005,
      ),
      row(
        'redis_calls_per_poll_with_reload',
        '4. Redis calls per poll, with settings reload',
        pollPer.withSettingsReload.toFixed(4),
        'info',
        null,
      ),
      row(
        'redis_calls_per_admitted',
        '4. Redis calls per admitted request',
        admittedPer.withoutSettingsReload.toFixed(4),
        '= 0',
        admittedPer.clientCalls === 0,
      ),
      row(
        'redis_calls_per_admitted_with_reload',
        '4. Redis calls per admitted request, with settings reload',
        admittedPer.withSettingsReload.toFixed(5),
        'info',
        null,
      ),
    ],
    notes,
    warnings,
    results: {
      commandstatsExperiment: experiment.delta,
      redisCommands: {
        scriptCommands: [...scriptCmds].sort(),
        poll: { ...pollCount, ...pollPer, requests: poll.run.sent },
        admitted: { ...admittedCount, ...admittedPer, requests: admitted.run.sent },
        monitor: { poll: poll.monitor, admitted: admitted.monitor },
      },
    },
  }
}

/**
 * Shows how INFO commandstats counts scripts: EVAL of a script that runs SET and GET. On Redis 7 the
 * delta is eval +1, set +1, get +1: commands run inside a script are counted as if sent. See classify().
 */
async function commandstatsExperiment(redis: Redis): Promise<{ delta: Record<string, number>; note: string }> {
  const before = await commandStats(redis)
  await redis.eval("redis.call('SET', KEYS[1], '1') redis.call('GET', KEYS[1]) return 1", 1, 'bench:probe')
  const delta = Object.fromEntries(diffStats(before, await commandStats(redis)))
  await redis.del('bench:probe')
  const inner = (delta.set ?? 0) + (delta.get ?? 0)
  const note =
    `commandstats experiment: EVAL of a script running SET and GET changed commandstats by ${JSON.stringify(delta)} ` +
    `(info = the bench's own snapshot). Commands inside scripts ${inner > 0 ? 'ARE' : 'are NOT'} counted, so client ` +
    'calls are counted as eval/evalsha/fcall + plain commands that no Lua script of ours uses (INFO excluded, the reload (HGETALL, ZMSCORE, ECHO) apart).'
  return { delta, note }
}

function perRequest(count: CommandCount, requests: number) {
  const clientCalls = count.scripts + count.plain
  return {
    withoutSettingsReload: clientCalls / requests,
    withSettingsReload: (clientCalls + count.settingsReload) / requests,
    clientCalls,
    settingsReload: count.settingsReload,
  }
}

/** Client commands in a MONITOR sample, leaving out the once-a-second reload (HGETALL and the rooms' watch). */
function withoutReload(sample: MonitorSample): number {
  return Object.entries(sample.clientCommands)
    .filter(([c]) => !RELOAD_COMMANDS.has(c))
    .reduce((s, [, n]) => s + n, 0)
}

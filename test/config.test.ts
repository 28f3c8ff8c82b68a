// Config is validated once at start-up, and every error names the bad field.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { parseRoomSettings } from '../src/core/settings.js'

const room = { id: 'sale', paths: ['/'], totalActiveUsers: 10, newUsersPerMinute: 10 }
const load = (env: Record<string, string>) => () => loadConfig(env)

describe('config', () => {
  it('has working defaults: one demo room, the embedded store, loopback', () => {
    const c = loadConfig({})
    expect(c).toMatchObject({ host: '127.0.0.1', port: 8080, redisUrl: undefined, originUrl: undefined, queueSecretGenerated: true })
    expect(c.rooms.map((r) => r.id)).toEqual(['demo'])
    expect(Object.isFrozen(c)).toBe(true)
  })

  it('decides no event in the ordered lane unless ANTEROOM_LANE_EVENTS names some (with Redis)', () => {
    expect(loadConfig({}).laneEvents).toEqual([])
    const c = loadConfig({ ANTEROOM_LANE_EVENTS: ' demo, festival.night-12 ,', ANTEROOM_REDIS_URL: 'redis://127.0.0.1:6379' })
    expect(c.laneEvents).toEqual(['demo', 'festival.night-12'])
  })

  it('serves from one process unless ANTEROOM_PROCESSES says more, which needs Redis and a PostgreSQL server for the bundled origin', () => {
    const redis = { ANTEROOM_REDIS_URL: 'redis://127.0.0.1:6379' }
    const shared = { ...redis, ANTEROOM_DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/anteroom' }
    expect(loadConfig({}).processes).toBe(1)
    expect(loadConfig({ ANTEROOM_PROCESSES: '1' }).processes).toBe(1)
    expect(loadConfig({ ...shared, ANTEROOM_PROCESSES: '4' }).processes).toBe(4)
    expect(loadConfig({ ...shared, ANTEROOM_PROCESSES: 'auto' }).processes).toBe('auto')
    // With an origin of its own there is no bundled origin, so no database is needed.
    expect(loadConfig({ ...redis, ANTEROOM_ORIGIN: 'http://127.0.0.1:9000', ANTEROOM_PROCESSES: '2' }).processes).toBe(2)
    for (const bad of ['0', '-1', '1.5', 'two', '257', 'AUTO', '0x10', '1e2', ' 2'])
      expect(load({ ...shared, ANTEROOM_PROCESSES: bad })).toThrow('ANTEROOM_PROCESSES: must be a whole number from 1 to 256, or auto')
    expect(load({ ANTEROOM_PROCESSES: '2' })).toThrow('more than one process needs ANTEROOM_REDIS_URL')
    expect(load({ ...redis, ANTEROOM_PROCESSES: 'auto' })).toThrow('more than one process needs ANTEROOM_DATABASE_URL')
  })

  it('records the analytics every minute by default; 0 turns them off, whole minutes up to an hour otherwise', () => {
    expect(loadConfig({}).analyticsSampleSeconds).toBe(60)
    expect(loadConfig({ ANTEROOM_ANALYTICS_SAMPLE_SECONDS: '0' }).analyticsSampleSeconds).toBe(0)
    expect(loadConfig({ ANTEROOM_ANALYTICS_SAMPLE_SECONDS: '300' }).analyticsSampleSeconds).toBe(300)
  })

  it('metrics on for admin tokens, one visit in 16 timed, info logs, request ids made: unless set', () => {
    const c = loadConfig({})
    expect([c.metrics, c.metricsToken, c.metricsTimeEvery, c.logLevel, c.requestIdHeader]).toEqual([true, undefined, 16, 'info', undefined])
    const set = loadConfig({
      ANTEROOM_METRICS: 'off',
      ANTEROOM_METRICS_TOKEN: 't'.repeat(24),
      ANTEROOM_METRICS_TIME_EVERY: '1',
      ANTEROOM_LOG_LEVEL: 'warn',
      ANTEROOM_REQUEST_ID_HEADER: 'X-Request-Id',
    })
    expect([set.metrics, set.metricsToken, set.metricsTimeEvery, set.logLevel, set.requestIdHeader]).toEqual([
      false,
      't'.repeat(24),
      1,
      'warn',
      'x-request-id',
    ])
  })

  it('fills room defaults: refresh 20 s, abandon 3x refresh, fifo, closed on store error', () => {
    expect(parseRoomSettings(room)).toMatchObject({
      refreshSeconds: 20,
      abandonAfterSeconds: 60,
      sessionDurationSeconds: 600,
      mode: 'fifo',
      onStoreError: 'closed',
    })
  })

  it.each([
    [{ ANTEROOM_PORT: '99999' }, /ANTEROOM_PORT: must be a port/],
    [{ ANTEROOM_ORIGIN: 'ftp://x' }, /ANTEROOM_ORIGIN: must start with http:/],
    [{ ANTEROOM_REDIS_URL: 'not a url' }, /ANTEROOM_REDIS_URL: must be a URL/],
    [{ ANTEROOM_QUEUE_SECRET: 'short' }, /ANTEROOM_QUEUE_SECRET: must be at least 32/],
    [{ ANTEROOM_ROOMS: '{' }, /ANTEROOM_ROOMS: must be valid JSON/],
    [{ ANTEROOM_ROOMS: '[]' }, /rooms: must be a non-empty list/],
    [{ ANTEROOM_SIGNING_KEYS: '{}' }, /ANTEROOM_SIGNING_KEYS: must be a non-empty JSON list/],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, totalActiveUsers: 0 }]) }, /rooms\[0\]\.totalActiveUsers: must be between 1 and/],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, newUsersPerMinute: 1.5 }]) }, /rooms\[0\]\.newUsersPerMinute: must be a whole number/],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, totalActiveUsers: 1e12 }]) }, /rooms\[0\]\.totalActiveUsers: must be between/],
    [
      { ANTEROOM_ROOMS: JSON.stringify([{ ...room, mode: 'lottery' }]) },
      /rooms\[0\]\.mode: must be one of fifo, paused, passthrough, closed/,
    ],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, id: 'Bad Id' }]) }, /rooms\[0\]\.id: must be 1-32 lower-case/],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, paths: ['no-slash'] }]) }, /rooms\[0\]\.paths\[0\]: must start with \//],
    [
      { ANTEROOM_ROOMS: JSON.stringify([{ ...room, paths: ['/a/../b'] }]) },
      /rooms\[0\]\.paths\[0\]: must be written in canonical form: \/b/,
    ],
    [
      { ANTEROOM_ROOMS: JSON.stringify([{ ...room, paths: ['/a%2fb'] }]) },
      /rooms\[0\]\.paths\[0\]: must be a plain path like \/tickets: the path has an encoded/,
    ],
    [{ ANTEROOM_MAX_BODY_BYTES: '-1' }, /ANTEROOM_MAX_BODY_BYTES: must be a whole number of bytes/],
    [{ ANTEROOM_METRICS: 'yes' }, /ANTEROOM_METRICS: must be on or off/],
    [{ ANTEROOM_METRICS_TOKEN: 'short' }, /ANTEROOM_METRICS_TOKEN: must be at least 24 characters/],
    [{ ANTEROOM_METRICS_TIME_EVERY: '0' }, /ANTEROOM_METRICS_TIME_EVERY: must be a whole number from 1/],
    [{ ANTEROOM_METRICS_TIME_EVERY: '2.5' }, /ANTEROOM_METRICS_TIME_EVERY: must be a whole number from 1/],
    [{ ANTEROOM_LOG_LEVEL: 'verbose' }, /ANTEROOM_LOG_LEVEL: must be one of debug, info, warn, error/],
    [{ ANTEROOM_REQUEST_ID_HEADER: 'x request id' }, /ANTEROOM_REQUEST_ID_HEADER: must be a header name/],
    [{ ANTEROOM_ANALYTICS_SAMPLE_SECONDS: '30' }, /ANTEROOM_ANALYTICS_SAMPLE_SECONDS: must be 0 \(off\) or a whole number of minutes/],
    [{ ANTEROOM_ANALYTICS_SAMPLE_SECONDS: '3660' }, /ANTEROOM_ANALYTICS_SAMPLE_SECONDS: must be 0/],
    [{ ANTEROOM_ANALYTICS_SAMPLE_SECONDS: 'x' }, /ANTEROOM_ANALYTICS_SAMPLE_SECONDS: must be 0/],
    [{ ANTEROOM_ROOMS: JSON.stringify([{ ...room, colour: 'red' }]) }, /rooms\[0\]\.colour: is not a known setting/],
    [
      { ANTEROOM_ROOMS: JSON.stringify([{ ...room, refreshSeconds: 30, abandonAfterSeconds: 40 }]) },
      /rooms\[0\]\.abandonAfterSeconds: must be at least twice/,
    ],
    [{ ANTEROOM_ROOMS: JSON.stringify([room, room]) }, /rooms\[1\]\.id: "sale" is used twice/],
    [{ ANTEROOM_CONFIG: '/nonexistent/anteroom.json' }, /ANTEROOM_CONFIG: cannot read/],
    [{ ANTEROOM_LANE_EVENTS: 'demo' }, /ANTEROOM_LANE_EVENTS: the ordered lane needs Redis/],
    [
      { ANTEROOM_LANE_EVENTS: 'demo,has space', ANTEROOM_REDIS_URL: 'redis://127.0.0.1:6379' },
      /ANTEROOM_LANE_EVENTS: "has space" is not an event id/,
    ],
    [{ ANTEROOM_LANE_EVENTS: 'demo, demo', ANTEROOM_REDIS_URL: 'redis://127.0.0.1:6379' }, /ANTEROOM_LANE_EVENTS: names an event twice/],
  ])('rejects %j naming the field', (env, message) => {
    expect(load(env as Record<string, string>)).toThrow(message)
  })
})

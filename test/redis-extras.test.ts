import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { buildLuaModule, GENERATED, ruleConstants } from '../scripts/build-lua.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { RedisDefenceStore } from '../src/adapters/redis/defence-store.js'
import { roomKeys, SEEN_BUCKETS, seenBucketOf } from '../src/adapters/redis/keys.js'
import { decimal, RedisQueueStore, readIntegers } from '../src/adapters/redis/queue-store.js'
import { luaScripts, runScript } from '../src/adapters/redis/scripts.js'
import { redisStores } from '../src/adapters/redis/stores.js'
import { CATCH_UP_US, collectWindowMs, MAX_EXTEND, MAX_STEP, recoveryMs } from '../src/core/admission.js'
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../src/core/settings.js'
import { analyticsStoreContract } from './contract/analytics-store.js'
import { claimGateContract } from './contract/claim-gate.js'
import { defenceStoreContract } from './contract/defence-store.js'
import { queueStoreContract } from './contract/queue-store.js'
import { startSingleNodeCluster, type TestCluster } from './support/redis-cluster.js'

const limits: AdmissionLimits = {
  ...ADMISSION_DEFAULTS,
  mode: 'paused',
  totalActiveUsers: 10,
  newUsersPerMinute: 10,
  abandonAfterMs: 60_000,
  sessionMs: 600_000,
}
let redis: Redis

beforeAll(() => {
  redis = new Redis(inject('redisUrl'))
})
afterAll(() => redis.disconnect())

describe('Redis scripts', () => {
  it('each script SHA is pinned here, and Redis computes the same', async () => {
    // A change to a script (or to a file it includes) changes its SHA: update the pin on purpose.
    const pinned = {
      accessRedeem: 'bd3c5ed0e267898290be3f562f2893af4620dea0',
      analytics: '22787eaa1478dbd1e093b19f9a08097f028e75d9',
      end: '00f5ae23a30db914ddf3189cd130f37b5d1dbdc6',
      endAll: 'b9ee02038101c9989f6d4b3dc236d4a7acdd531b',
      finish: '33de8a9adc18e121fcdaa172e9ee58e3f372816d',
      gateClaim: '074165810a398da782b80e037e58c0a08110297e',
      gateCounts: 'b63efc4cf9d8c20f8c4b49b35462d573b9513e4e',
      gateReconcile: 'eebf9ff537527bd2423a2531f1a641c64b148204',
      gateRelease: 'e2bba874ecdc50aa6b2601d79c8fa333dd225563',
      gateSold: 'ebbf428d0d695787fc19ad54c1a47e1b782d3781',
      join: 'd1f1a2cfdbccd9c09ecdfcdef64dc6ee2d1d3d02',
      laneLease: '2b4ae882fc427b1502c5ceecf99d9ca805ab85fb',
      laneSettle: '75d149c85f6a585343c2b3e76a5f7a20bf06d2cd',
      poll: '4cee8545c0b213ef438c815d67a008334b222085',
      refusals: '60be2fbd3aa7d4bd639e7cdc2f8e4261344a9228',
      renew: 'cd6d89fec1ddf73702944508daf665fd4ffad17e',
      sample: '7b1adff5a769e32f9f4b7a35e082e1b537d9ed00',
      settingsCas: 'e26fa305ca5f86080fa1d8cf552883a4029acb4a',
      stats: 'e13c06933c993088de6c56da9bcbfd54c745a4ef',
      templateCas: 'd18607a38df864d382333204b0b6696bace4e3ac',
    }
    const scripts = luaScripts()
    expect(Object.keys(scripts).sort()).toEqual(Object.keys(pinned).sort())
    for (const [name, sha] of Object.entries(pinned)) {
      const script = scripts[name as keyof typeof scripts]
      expect(script.sha, name).toBe(sha)
      expect(await redis.script('LOAD', script.source), name).toBe(sha)
      expect(script.source.split('\n')[0]).toMatch(new RegExp(`^-- ${script.name}: `))
    }
  })

  it('the generated Lua module is what npm run build:lua writes from the .lua files', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(buildLuaModule())
    // Includes are resolved: no script carries an include line, each carries the shared clock.
    for (const script of Object.values(luaScripts())) expect(script.source).not.toContain('-- #include')
    expect(luaScripts().poll.source).toContain('local function clockNow(given)')
    expect(luaScripts().poll.source).toContain('local function decodeLimits(json)')
  })

  it('falls back to EVAL when Redis has no scripts cached', async () => {
    await redis.script('FLUSH')
    const store = new RedisQueueStore(redis, luaScripts())
    const r = await store.poll({ room: 'noscript', visitor: 'AAAAAAAAAAAAAAAA', limits })
    expect(r.state).toBe('paused')
  })

  it('uses Redis TIME when no time is given, so edge clocks cannot reorder the line', async () => {
    const store = new RedisQueueStore(redis, luaScripts())
    const [s1, us1] = await redis.time()
    const r = await store.poll({ room: 'redis-time', visitor: 'BBBBBBBBBBBBBBBB', limits })
    const [s2, us2] = await redis.time()
    const before = Number(s1) * 1e6 + Number(us1)
    const after = Number(s2) * 1e6 + Number(us2)
    expect(r.arrival).toBeGreaterThanOrEqual(before)
    expect(r.arrival).toBeLessThanOrEqual(after)
    expect(r.now).toBeGreaterThanOrEqual(Math.floor(before / 1000))
    expect(r.now).toBeLessThanOrEqual(Math.ceil(after / 1000))
  })

  it('every key of a room carries the room hash tag', async () => {
    const store = new RedisQueueStore(redis, luaScripts())
    const room = 'tagged'
    await store.poll({ room, visitor: 'CCCCCCCCCCCCCCCC', limits: { ...limits, mode: 'fifo' } })
    await store.endSession(room, 'CCCCCCCCCCCCCCCC')
    await store.poll({ room, visitor: 'DDDDDDDDDDDDDDDD', limits })
    const keys = await redis.keys(`*${room}*`)
    expect(keys.length).toBeGreaterThanOrEqual(5)
    for (const key of keys) expect(key.startsWith(`anteroom:{${room}}:`)).toBe(true)
    for (const key of Object.values(roomKeys(room))) expect(key).toContain(`{${room}}`)
  })
})

describe('batched polls (one packed argument per EVALSHA)', () => {
  it('a visitor id the packing cannot carry is refused alone; the others of its batch get their own answers', async () => {
    const store = new RedisQueueStore(redis, luaScripts())
    const room = 'packing'
    const fifo = { ...limits, mode: 'fifo' as const, totalActiveUsers: 0 }
    const ids = ['A000000000000001', 'bad,id', 'A000000000000002', '', 'bad;id', 'A000000000000003']
    const results = await Promise.allSettled(ids.map((visitor) => store.poll({ room, visitor, limits: fifo })))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'rejected', 'fulfilled'])
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'ERR_BAD_REQUEST' })
    // The three who were sent are in line in the order they polled, each told their own place.
    const positions = results.flatMap((r) => (r.status === 'fulfilled' && r.value.state === 'queued' ? [r.value.position] : []))
    expect(positions).toEqual([1, 2, 3])
    expect(await redis.zrange(roomKeys(room).line, '0', '-1')).toEqual(['A000000000000001', 'A000000000000002', 'A000000000000003'])
  })

  it("a call with no polls answers the call's six numbers and changes no line", async () => {
    const k = roomKeys('empty-call')
    const keys = [k.line, k.sweep, k.active, k.admissions, k.stats, k.lastArrival, k.seenPrefix, k.used, k.ended, k.pace, k.life, k.drawn]
    const reply = readIntegers(
      (await runScript(redis, luaScripts().poll, keys, ['', JSON.stringify(limits), '{"active":0}', ''])) as string,
    )
    expect(reply).toHaveLength(6)
    expect(reply?.[0]).toBe(0)
    expect(await redis.zcard(k.line)).toBe(0)
  })

  it('an answer of the wrong length or not integers fails every poll of its batch, as a store failure', async () => {
    // The poll script swapped for one that answers a fixed text (run by EVAL after NOSCRIPT).
    for (const text of ['1,2,', '1,x,2,3,', '']) {
      const source = `return '${text}'`
      const poll = { ...luaScripts().poll, source, sha: createHash('sha1').update(source).digest('hex') }
      const store = new RedisQueueStore(redis, { ...luaScripts(), poll })
      const results = await Promise.allSettled(
        ['W000000000000001', 'W000000000000002'].map((visitor) => store.poll({ room: 'wrong-answer', visitor, limits })),
      )
      for (const r of results) {
        expect(r.status).toBe('rejected')
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'ERR_STORE_UNAVAILABLE' })
      }
    }
  })

  it('the answer is one text of integers that keeps all 16 digits of a µs time; any other text is refused', async () => {
    const store = new RedisQueueStore(redis, luaScripts())
    // A place restored from a token, in µs: 16 digits, which Lua's tostring would round to 14.
    const arrival = 1_733_000_000_123_457
    const now = 1_733_000_100_000
    const r = await store.poll({ room: 'digits', visitor: 'D000000000000001', arrival, tokenExpires: now + 60_000, limits, now })
    expect(r).toMatchObject({ state: 'paused', arrival, position: 1, now })
    expect(readIntegers('1,1733000000123457,0,-1,')).toEqual([1, 1_733_000_000_123_457, 0, -1])
    for (const bad of ['1,2', '1,,2,', ',', '1,x,', '1.5,', '-,', '--1,', ' 1,']) expect(readIntegers(bad)).toBeUndefined()
    expect(readIntegers('')).toEqual([])
  })

  it('writes the numbers it sends as String does, eight digits at a time', () => {
    const numbers = [
      0,
      1,
      99_999_999,
      1e8,
      1e8 + 1,
      1e16 - 1,
      1_733_000_000_123_457,
      1_733_000_100_000,
      Number.MAX_SAFE_INTEGER,
      2 ** 53 + 2,
      1.5,
      -3,
    ]
    let seed = 5
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      numbers.push(Math.floor((seed / 2 ** 31) * 10 ** (1 + (i % 16))), 1_733_000_000_000_000 + seed * 97 + i)
    }
    for (const n of numbers) expect(decimal(n), String(n)).toBe(String(n))
  })

  it('polls reach Redis in the order they came: a full batch goes at once, after what gathered before it with another hint', async () => {
    // Three polls with one hint, then twenty with another, in one turn: the second hint's first batch
    // fills (and is sent) while the first hint's three are still gathering; they must go first.
    const store = new RedisQueueStore(redis, luaScripts())
    const room = 'order'
    const fifo = { ...limits, mode: 'fifo' as const, totalActiveUsers: 0 }
    const ids = Array.from({ length: 23 }, (_, i) => `O${String(i).padStart(15, '0')}`)
    const before = Number((await redis.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0)
    const results = await Promise.all(ids.map((visitor, i) => store.poll({ room, visitor, limits: fifo, hint: { active: i < 3 ? 0 : 1 } })))
    const calls = Number((await redis.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0) - before
    expect(await redis.zrange(roomKeys(room).line, '0', '-1')).toEqual(ids)
    expect(results.map((r) => (r.state === 'queued' ? r.position : -1))).toEqual(ids.map((_, i) => i + 1))
    // 3 with the first hint; 16 (full, so sent at once), then 32 (of which 4 came) with the second.
    expect(calls).toBe(3)
  })

  it('polls with different hints go in different calls: an outage one edge reports is heard', async () => {
    // A StoreRelay gathers the polls of many Worker isolates; each brings its own hint.
    const store = new RedisQueueStore(redis, luaScripts())
    const room = 'hints'
    const now = 1_900_000_000_000
    const before = Number((await redis.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0)
    await Promise.all([
      store.poll({ room, visitor: 'H000000000000001', limits, now, hint: { active: 0, outage: now - 5000 } }),
      store.poll({ room, visitor: 'H000000000000002', limits, now, hint: { active: 0 } }),
    ])
    const after = Number((await redis.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0)
    expect(after - before).toBe(2)
    expect(Number(await redis.hget(roomKeys(room).life, 'outage'))).toBe(now - 5000)
  })
})

describe('seen buckets', () => {
  it('the Lua states none of the rule’s constants or windows by hand: build:lua writes them from core/admission.ts', () => {
    const lua = (f: string) => readFileSync(new URL(`../src/adapters/redis/lua/${f}`, import.meta.url), 'utf8')
    // No constant assigned a number in the rule's library, and no window worked out from a refresh in the poll.
    expect(lua('lib/rule.lua')).not.toMatch(/^local [A-Z_]+ = \d/m)
    expect(lua('lib/rule.lua')).toContain('-- #rule-constants')
    expect(lua('poll-12.lua')).not.toMatch(/refreshSeconds \* \d/)
    const written = ruleConstants()
    for (const [name, value] of [
      ['MAX_STEP', MAX_STEP],
      ['BUCKETS', SEEN_BUCKETS],
      ['CATCH_UP_US', CATCH_UP_US],
      ['MAX_EXTEND', MAX_EXTEND],
    ] as const)
      expect(written).toContain(`local ${name} = ${value} --`)
    // The windows as functions of refreshSeconds, evaluated as Lua would: the same as core/admission.ts's.
    for (const r of [1, 5, 20, 300]) {
      const recovery = /recoveryMs\(refreshSeconds\) return refreshSeconds \* (\d+) \+ (\d+) end/.exec(written)!
      const collect = /collectWindowMs\(refreshSeconds\) return refreshSeconds \* (\d+) end/.exec(written)!
      expect(r * Number(recovery[1]) + Number(recovery[2])).toBe(recoveryMs(r))
      expect(r * Number(collect[1])).toBe(collectWindowMs(r))
    }
  })

  it("lib/rule.lua's bucketOf gives seenBucketOf's bucket for ids of any length and byte", async () => {
    // bucketOf hashes four bytes at a time; the remainder taken once for them must be the same number.
    // As scripts include it: its constants written from core/admission.ts (scripts/build-lua.ts).
    const rule = readFileSync(new URL('../src/adapters/redis/lua/lib/rule.lua', import.meta.url), 'utf8').replace(
      '-- #rule-constants',
      ruleConstants(),
    )
    let seed = 5
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const ids = Array.from({ length: 400 }, (_, i) =>
      Array.from({ length: 1 + (i % 40) }, () =>
        String.fromCharCode(i % 5 === 0 ? 33 + rand(94) : ([48, 65, 97][rand(3)] as number) + rand(26)),
      ).join(''),
    )
    ids.push('~'.repeat(64))
    const buckets = (await redis.eval(
      `${rule}\nlocal out = {}\nfor i, v in ipairs(ARGV) do out[i] = bucketOf(v) end\nreturn out`,
      0,
      ...ids,
    )) as number[]
    expect(buckets).toEqual(ids.map(seenBucketOf))
  })

  it('the script and keys.ts put a visitor in the same bucket, and buckets stay compact listpacks', async () => {
    const store = new RedisQueueStore(redis, luaScripts())
    const room = 'buckets'
    const k = roomKeys(room)
    const visitors = Array.from({ length: 3000 }, (_, i) => `w${String(i).padStart(15, '0')}`)
    await Promise.all(visitors.map((visitor) => store.poll({ room, visitor, limits })))
    for (const v of visitors.slice(0, 50)) expect(await redis.hexists(`${k.seenPrefix}${seenBucketOf(v)}`, v)).toBe(1)
    const keys = await redis.keys(`${k.seenPrefix}*`)
    let entries = 0
    for (const key of keys) {
      entries += await redis.hlen(key)
      expect(await redis.object('ENCODING', key)).toBe('listpack')
      expect(Number(key.slice(k.seenPrefix.length))).toBeLessThan(SEEN_BUCKETS)
    }
    expect(entries).toBe(visitors.length)
    expect(await redis.zcard(k.sweep)).toBe(keys.length)
  })
})

describe('on a Redis Cluster', () => {
  let started: TestCluster
  let cluster: Cluster
  beforeAll(async () => {
    started = await startSingleNodeCluster()
    cluster = started.cluster
  })
  afterAll(async () => {
    await started.stop()
  })

  // join-1.lua names its minute hashes from a declared prefix, as poll-12.lua its seen buckets.
  defenceStoreContract('redis cluster', async () => new RedisDefenceStore(cluster, luaScripts()))
  claimGateContract('redis cluster', async () => new RedisClaimGate(cluster, luaScripts()))
  // analytics-5.lua names its hour hashes from a declared prefix too; a report reads them in one pipeline.
  analyticsStoreContract('redis cluster', async () => redisStores(cluster, luaScripts()))

  queueStoreContract('redis cluster', async () => ({
    store: new RedisQueueStore(cluster, luaScripts()),
    async forget() {
      const keys = await cluster.keys('anteroom:{c*')
      for (const key of keys) await cluster.del(key)
    },
  }))
})

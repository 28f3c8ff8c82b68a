// The DefenceStore contract on the memory store and on Redis (a Cluster in redis-extras.test.ts),
// and the client network a join counts against (core/network.ts).
import { describe, expect, it } from 'vitest'
import { MemoryDefenceStore } from '../src/adapters/memory/defence-store.js'
import { RedisDefenceStore } from '../src/adapters/redis/defence-store.js'
import { roomKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { networkOf } from '../src/core/network.js'
import { defenceStoreContract } from './contract/defence-store.js'
import { redisClients } from './support/redis-clients.js'

const redis = redisClients()

defenceStoreContract('memory', async () => new MemoryDefenceStore())
defenceStoreContract('redis', async () => new RedisDefenceStore(redis(), luaScripts()))

describe('the keys of the bot defence in Redis', () => {
  it('carry the room hash tag, and a minute of joins is kept two minutes, not forever', async () => {
    const client = redis()
    const store = new RedisDefenceStore(client, luaScripts())
    const room = `keys-${Date.now().toString(36)}`
    await store.countJoin({ room, network: '192.0.2.0/24', limit: 5, now: 1_800_000_030_000 })
    await store.addRefusals(room, { network: 1 }, 1_800_000_030_000)
    const keys = (await client.keys(`*${room}*`)).sort()
    expect(keys).toEqual([`${roomKeys(room).joins}30000000`, roomKeys(room).refused].sort())
    const ttl = await client.pttl(`${roomKeys(room).joins}30000000`)
    expect(ttl).toBeGreaterThan(60_000)
    expect(ttl).toBeLessThanOrEqual(120_000)
  })
})

describe('the network of a client address', () => {
  const p = { v4: 24, v6: 56 }
  it('groups IPv4 by /24 and IPv6 by /56, and reads an IPv4-mapped IPv6 address as IPv4', () => {
    expect(networkOf('203.0.113.7', p)).toBe('203.0.113.0/24')
    expect(networkOf('203.0.113.250', p)).toBe('203.0.113.0/24')
    expect(networkOf('::ffff:203.0.113.9', p)).toBe('203.0.113.0/24')
    expect(networkOf('::FFFF:203.0.113.9', p)).toBe('203.0.113.0/24')
    expect(networkOf('2001:db8:0:1ff:1::1', p)).toBe('2001:db8:0:100::/56')
    expect(networkOf('2001:0db8:0000:0100:0000:0000:0000:0001', p)).toBe('2001:db8:0:100::/56')
    expect(networkOf('2001:db8:0:200::1', p)).toBe('2001:db8:0:200::/56')
    expect(networkOf('fe80::1%eth0', p)).toBe('fe80::/56')
  })

  it('follows the prefix lengths of the room', () => {
    expect(networkOf('203.0.113.200', { v4: 20, v6: 48 })).toBe('203.0.112.0/20')
    expect(networkOf('203.0.113.200', { v4: 32, v6: 48 })).toBe('203.0.113.200/32')
    expect(networkOf('2001:db8:abcd:12ff::', { v4: 24, v6: 60 })).toBe('2001:db8:abcd:12f0::/60')
    expect(networkOf('2001:db8:abcd:12ff::1', { v4: 24, v6: 48 })).toBe('2001:db8:abcd::/48')
  })

  it('is undefined for anything that is not an address', () => {
    for (const bad of [
      undefined,
      '',
      'unknown',
      '1.2.3',
      '256.1.1.1',
      '1.2.3.4.5',
      '1:2:3:4:5:6:7:8:9',
      '1::2::3',
      '::ffff:1.2.3.4:5',
      'x'.repeat(70),
    ])
      expect(networkOf(bad, p), String(bad)).toBeUndefined()
  })
})

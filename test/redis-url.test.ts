// ANTEROOM_REDIS_URL's three forms (src/config/redis-url.ts): one server, a Sentinel set, a Cluster; what
// is refused, and that the password is never repeated in an error. The failovers themselves are tested
// on real processes in test/redis-sentinel.test.ts and test/redis-cluster.test.ts.
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { parseRedisUrl } from '../src/config/redis-url.js'

describe('ANTEROOM_REDIS_URL names one server, a Sentinel set or a Cluster', () => {
  it('parses the three forms', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379/2')).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379/2' })
    expect(parseRedisUrl('redis+sentinel://10.0.0.1:26379,10.0.0.2,[::1]:26380/mymaster')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'mymaster',
      db: 0,
    })
    expect(parseRedisUrl('redis+sentinel://:p%40ss@s1:26379/main/3')).toMatchObject({ password: 'p@ss', name: 'main', db: 3 })
    expect(parseRedisUrl('redis+cluster://app:secret@n1:7000,n2:7001,n3')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
        { host: 'n3', port: 6379 },
      ],
      username: 'app',
      password: 'secret',
    })
  })

  it.each([
    ['http://x:1', /ANTEROOM_REDIS_URL: must start with redis:\/\/, rediss:\/\/, redis\+sentinel:\/\//],
    ['not a url', /ANTEROOM_REDIS_URL: must be a URL/],
    ['redis+sentinel://s1:26379,s2:26379', /ANTEROOM_REDIS_URL: redis\+sentinel:\/\/ needs the master name after the hosts/],
    ['redis+sentinel://s1:26379/main/x', /ANTEROOM_REDIS_URL: the database after the master name must be a number/],
    ['redis+sentinel://s1:99999/main', /ANTEROOM_REDIS_URL: host 1 \("s1:99999"\): the port must be from 1 to 65535/],
    ['redis+sentinel://s1:1,,s2:2/main', /ANTEROOM_REDIS_URL: host 2 \(""\) must be host or host:port/],
    ['redis+cluster://n1:7000,n2:7001/1', /ANTEROOM_REDIS_URL: a Redis Cluster has only database 0/],
    ['redis+cluster://', /ANTEROOM_REDIS_URL: redis\+cluster:\/\/ needs at least one host:port/],
    ['redis+cluster://n1:7000?tls=1', /ANTEROOM_REDIS_URL: redis\+cluster:\/\/ takes no query/],
  ])('refuses %s, naming the field', (url, message) => {
    expect(() => loadConfig({ ANTEROOM_REDIS_URL: url })).toThrow(message)
  })

  it('never repeats the password in an error', () => {
    expect(() => loadConfig({ ANTEROOM_REDIS_URL: 'redis+cluster://u:hunter2@n1:70000' })).toThrow(/port must be/)
    try {
      loadConfig({ ANTEROOM_REDIS_URL: 'redis+cluster://u:hunter2@n1:70000' })
    } catch (err) {
      expect(String(err)).not.toContain('hunter2')
    }
  })
})

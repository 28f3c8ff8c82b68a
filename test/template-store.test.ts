// The page templates' store on memory and on a real Redis (the contract in test/contract/template-store.ts).
import { Redis } from 'ioredis'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { MemoryTemplateStore } from '../src/adapters/memory/template-store.js'
import { TEMPLATES_KEY } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { RedisTemplateStore } from '../src/adapters/redis/template-store.js'
import { templateStoreContract } from './contract/template-store.js'

const clients: Redis[] = []
afterAll(() => {
  for (const c of clients) c.disconnect()
})

function redis(): Redis {
  const client = new Redis(inject('redisUrl'))
  clients.push(client)
  return client
}

templateStoreContract('memory', async () => new MemoryTemplateStore())
templateStoreContract('redis', async () => new RedisTemplateStore(redis(), luaScripts()))

describe('on Redis', () => {
  it('keeps one hash: a template and its revision beside it; a damaged entry is left out, not fatal', async () => {
    const client = redis()
    const store = new RedisTemplateStore(client, luaScripts())
    const name = `h-${Date.now().toString(36)}`
    await store.put({ name, source: '<p>x</p>', stylesheet: null }, 0)
    expect(JSON.parse((await client.hget(TEMPLATES_KEY, name)) as string)).toEqual({
      rev: 1,
      template: { name, source: '<p>x</p>', stylesheet: null },
    })
    expect(await client.hget(TEMPLATES_KEY, `rev:${name}`)).toBe('1')
    await client.hset(TEMPLATES_KEY, `${name}-bad`, '{not json')
    expect((await store.list()).some((v) => v.template.name === name)).toBe(true)
    expect(await store.get(`${name}-bad`)).toBeUndefined()
  })
})

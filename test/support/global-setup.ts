// Vitest global setup: one real redis-server for the whole run, on a free loopback port.
import type { TestProject } from 'vitest/node'
import { type RedisServer, startRedis } from './redis-server.js'

let redis: RedisServer | undefined

export async function setup(project: TestProject): Promise<void> {
  redis = await startRedis()
  project.provide('redisUrl', redis.url)
}

export async function teardown(): Promise<void> {
  await redis?.stop()
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string
  }
}

// Vitest global setup: one real redis-server and one real PostgreSQL server for the whole run, each on a
// free loopback port, started in parallel and stopped in teardown.
import type { TestProject } from 'vitest/node'
import { type PostgresServer, startPostgres } from './postgres-server.js'
import { type RedisServer, startRedis } from './redis-server.js'

let redis: RedisServer | undefined
let pg: PostgresServer | undefined

export async function setup(project: TestProject): Promise<void> {
  const [r, p] = await Promise.allSettled([startRedis(), startPostgres()])
  if (r.status === 'fulfilled') redis = r.value
  if (p.status === 'fulfilled') pg = p.value
  if (r.status === 'rejected' || p.status === 'rejected') {
    await teardown()
    throw r.status === 'rejected' ? r.reason : (p as PromiseRejectedResult).reason
  }
  project.provide('redisUrl', r.value.url)
  project.provide('postgresUrl', p.value.url)
}

export async function teardown(): Promise<void> {
  await Promise.all([redis?.stop(), pg?.stop()])
  redis = undefined
  pg = undefined
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string
    postgresUrl: string
  }
}

// Vitest global setup: the Worker bundle, and one real redis-server and one real PostgreSQL server for the
// whole run, each on a free loopback port, started in parallel and stopped in teardown.
import { join, resolve } from 'node:path'
import type { TestProject } from 'vitest/node'
import { type PostgresServer, startPostgres } from './postgres-server.js'
import { type RedisServer, startRedis } from './redis-server.js'
import { buildWorker } from './worker.js'

const ROOT = resolve(import.meta.dirname, '../..')

let redis: RedisServer | undefined
let pg: PostgresServer | undefined

export async function setup(project: TestProject): Promise<void> {
  // The Worker bundle for the workerd tests, built once by wrangler as for a deploy.
  project.provide('workerScript', await buildWorker('test/worker/entry.ts', join(ROOT, '.tmp/test-worker')))
  project.provide('workerProductionScript', await buildWorker('worker/index.ts', join(ROOT, '.tmp/test-worker-production')))
  const [r, p] = await Promise.allSettled([startRedis(['--databases', '1000']), startPostgres()])
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

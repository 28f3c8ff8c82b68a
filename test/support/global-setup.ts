// Vitest global setup: the Worker bundle, and one real redis-server and one real PostgreSQL server for the
// whole run, each on a free loopback port, started in parallel and stopped in teardown.
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { TestProject } from 'vitest/node'
import { type PostgresServer, startPostgres } from './postgres-server.js'
import { type RedisServer, startRedis } from './redis-server.js'
import { buildWorker } from './worker.js'

const ROOT = resolve(import.meta.dirname, '../..')

let redis: RedisServer | undefined
let pg: PostgresServer | undefined
/** This run's bundles: a directory of its own, so that two test runs in one checkout never rebuild each other's. */
const BUNDLES = join(ROOT, `.tmp/test-worker-${process.pid}`)

export async function setup(project: TestProject): Promise<void> {
  // The Worker bundle for the workerd tests, built once by wrangler as for a deploy.
  project.provide('workerScript', await buildWorker('test/worker/entry.ts', join(BUNDLES, 'test')))
  project.provide('workerProductionScript', await buildWorker('worker/index.ts', join(BUNDLES, 'production')))
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
  await Promise.all([redis?.stop(), pg?.stop(), rm(BUNDLES, { recursive: true, force: true })])
  redis = undefined
  pg = undefined
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string
    postgresUrl: string
  }
}

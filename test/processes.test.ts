// ANTEROOM_PROCESSES: `npm start` as a primary and its workers (src/entry/processes.ts). Against a real
// redis-server and PostgreSQL: the workers share what the primary made up (the queue secret, the
// signing key), so a visitor's tokens outlive the process that made them; a worker that dies is
// replaced while the other serves; a signal stops them all; a crash loop stops the primary. The
// settings' checks are in test/config.test.ts.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MAX_RESTARTS } from '../src/entry/processes.js'
import { cookieFetch } from './support/cookie-fetch.js'
import { freshDatabase } from './support/postgres-server.js'
import { freePort, type RedisServer, startRedis } from './support/redis-server.js'

const ROOT = new URL('..', import.meta.url).pathname

/** The workers `pid` started (every thread's children, from /proc, that run the entry: not tsx's esbuild). */
function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
    if (text !== '') out.push(...text.split(/\s+/).map(Number))
  }
  return out.filter((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('src/entry/node.ts')
    } catch {
      return false
    }
  })
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Polls `ok` every 50 ms until it holds; false after `ms`. */
async function until(ok: () => boolean, ms = 30_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (ok()) return true
  return ok()
}

const lines = (output: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('npm start with ANTEROOM_PROCESSES=2', () => {
  let redis: RedisServer
  let database: { url: string; drop(): Promise<void> }
  let child: ChildProcess | undefined
  let output = ''

  beforeAll(async () => {
    redis = await startRedis()
    database = await freshDatabase(inject('postgresUrl'), 'processes')
  })
  afterAll(async () => {
    const pid = child?.pid
    if (pid !== undefined && alive(pid)) {
      for (const w of childrenOf(pid)) process.kill(w, 'SIGKILL')
      process.kill(pid, 'SIGKILL')
    }
    await redis.stop()
    await database.drop()
  })

  it('serves from two workers that share the secrets the primary made, replaces one that dies, and stops on a signal', async () => {
    const [port, originPort] = [await freePort(), await freePort()]
    const edge = `http://127.0.0.1:${port}`
    child = spawn(process.execPath, ['--import', 'tsx', 'src/entry/node.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        ANTEROOM_PROCESSES: '2',
        ANTEROOM_PORT: String(port),
        ANTEROOM_DEMO_ORIGIN_PORT: String(originPort),
        ANTEROOM_REDIS_URL: redis.url,
        ANTEROOM_DATABASE_URL: database.url,
        // No queue secret and no signing key: the primary makes them, once for both workers.
        ANTEROOM_ADMIN_TOKEN: 'processes-test-admin-token-0123456789',
        ANTEROOM_ROOMS: JSON.stringify([{ id: 'demo', paths: ['/'], totalActiveUsers: 100, newUsersPerMinute: 6000, event: 'demo' }]),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    const primary = child.pid as number
    const listening = () => lines(output).filter((l) => l.event === 'listening')
    expect(await until(() => listening().length >= 2 || child?.exitCode !== null, 60_000), output).toBe(true)
    expect(
      listening()
        .map((l) => l.worker)
        .sort(),
    ).toEqual([0, 1])
    expect(lines(output).find((l) => l.event === 'processes')).toMatchObject({ processes: 2 })
    const warnings = lines(output)
      .filter((l) => l.event === 'warning')
      .map((l) => String(l.message))
    expect(warnings.filter((w) => w.includes('share'))).toHaveLength(2)
    const first = childrenOf(primary)
    expect(first).toHaveLength(2)
    // What the primary made up is the same in both workers, and never in the log.
    const environ = (pid: number) =>
      Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .filter((e) => e.startsWith('ANTEROOM_'))
          .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
      )
    const [one, two] = first.map(environ) as [Record<string, string>, Record<string, string>]
    expect(one.ANTEROOM_QUEUE_SECRET?.length).toBeGreaterThanOrEqual(32)
    expect(two.ANTEROOM_QUEUE_SECRET).toBe(one.ANTEROOM_QUEUE_SECRET)
    expect(two.ANTEROOM_SIGNING_KEYS).toBe(one.ANTEROOM_SIGNING_KEYS)
    const privateKey = (JSON.parse(one.ANTEROOM_SIGNING_KEYS as string) as { d: string }[])[0]?.d as string
    expect(privateKey.length).toBeGreaterThan(20)

    // A visitor gets in and holds a seat: the admission token is signed by one worker, checked by the
    // edge and the bundled origin in whichever worker takes the connection.
    const visitor = cookieFetch(edge)
    expect((await visitor('/', { headers: { accept: 'text/html' } })).status).toBe(200)
    const hold = (seat: string) =>
      visitor('/events/demo/holds', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seats: [seat] }),
      })
    expect((await hold('A1')).status).toBe(201)

    // Both first workers die, one after the other; each is replaced, and the other serves meanwhile.
    const seen = new Set(first)
    for (const [i, pid] of first.entries()) {
      process.kill(pid, 'SIGKILL')
      expect(await until(() => !alive(pid))).toBe(true)
      expect((await fetch(`${edge}/.well-known/jwks.json`)).status).toBe(200)
      expect(await until(() => childrenOf(primary).filter((p) => !seen.has(p)).length === 1)).toBe(true)
      for (const p of childrenOf(primary)) seen.add(p)
      expect(await until(() => listening().length >= 3 + i, 60_000)).toBe(true)
    }
    const exits = lines(output).filter((l) => l.event === 'warning' && String(l.message).startsWith('a worker exited'))
    expect(exits.map((l) => l.pid).sort()).toEqual([...first].sort())
    expect(exits.every((l) => l.signal === 'SIGKILL')).toBe(true)
    const now = childrenOf(primary)
    expect(now).toHaveLength(2)
    expect(now.some((p) => first.includes(p))).toBe(false)

    // Neither process that made the visitor's tokens is left, and the tokens still work.
    expect((await hold('A2')).status).toBe(201)

    expect(output).not.toContain(one.ANTEROOM_QUEUE_SECRET)
    expect(output).not.toContain(privateKey)
    // SIGTERM to the primary stops the workers, then itself, with code 0.
    const exited = new Promise<number | null>((r) => child?.once('exit', (code) => r(code)))
    process.kill(primary, 'SIGTERM')
    expect(await exited).toBe(0)
    expect(now.filter(alive)).toEqual([])
  }, 120_000)
})

describe('npm start with ANTEROOM_PROCESSES=2 and no admin token', () => {
  it('writes one admin token, for every worker: it still opens the admin API once the first workers are gone', async () => {
    // A directory of its own: the token file goes into the working directory's .anteroom/.
    const cwd = mkdtempSync(join(tmpdir(), 'anteroom-processes-'))
    const redis = await startRedis()
    const port = await freePort()
    const edge = `http://127.0.0.1:${port}`
    const primary = spawn(process.execPath, ['--import', `${ROOT}node_modules/tsx/dist/loader.mjs`, `${ROOT}src/entry/node.ts`], {
      cwd,
      env: {
        PATH: process.env.PATH,
        ANTEROOM_PROCESSES: '2',
        ANTEROOM_PORT: String(port),
        ANTEROOM_REDIS_URL: redis.url,
        ANTEROOM_ORIGIN: 'http://127.0.0.1:9',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    primary.stdout?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    primary.stderr?.on('data', (d: Buffer) => {
      output += d.toString()
    })
    try {
      const listening = () => lines(output).filter((l) => l.event === 'listening')
      expect(await until(() => listening().length >= 2 || primary.exitCode !== null, 60_000), output).toBe(true)
      const token = readFileSync(join(cwd, '.anteroom/admin-token'), 'utf8').trim()
      const rooms = () => fetch(`${edge}/_anteroom/api/rooms`, { headers: { authorization: `Bearer ${token}` } })
      expect((await rooms()).status).toBe(200)
      const first = childrenOf(primary.pid as number)
      expect(first).toHaveLength(2)
      for (const pid of first) process.kill(pid, 'SIGKILL')
      expect(await until(() => listening().length >= 4, 60_000), output).toBe(true)
      expect(childrenOf(primary.pid as number).some((p) => first.includes(p))).toBe(false)
      for (let i = 0; i < 10; i++) expect((await rooms()).status).toBe(200)
      // Made once, by the primary: the file was not written again.
      expect(lines(output).filter((l) => l.event === 'admin_token_created')).toHaveLength(1)
      expect(readFileSync(join(cwd, '.anteroom/admin-token'), 'utf8').trim()).toBe(token)
      expect(output).not.toContain(token)
    } finally {
      const pid = primary.pid
      if (pid !== undefined && alive(pid)) {
        for (const w of childrenOf(pid)) process.kill(w, 'SIGKILL')
        process.kill(pid, 'SIGKILL')
      }
      await redis.stop()
      rmSync(cwd, { recursive: true, force: true })
    }
  }, 120_000)
})

describe('the primary', () => {
  /** Starts test/support/primary-child.ts with two workers of `exec`; its output as it comes. */
  function primaryOf(exec: string) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/primary-child.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PRIMARY_PROCESSES: '2', PRIMARY_EXEC: exec },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const out = { text: '' }
    child.stdout?.on('data', (d: Buffer) => {
      out.text += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => {
      out.text += d.toString()
    })
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    return { child, out, exited }
  }

  it(`stops every worker and exits 1 when one worker keeps exiting (more than ${MAX_RESTARTS} times within a minute)`, async () => {
    const { out, exited } = primaryOf('exiting-worker.mjs')
    expect(await exited, out.text).toBe(1)
    const logged = lines(out.text)
    const ran = logged.filter((l) => l.event === 'worker_ran')
    // Started again under their own index each time, until one index had exited a sixth time.
    expect(new Set(ran.map((l) => l.worker))).toEqual(new Set(['0', '1']))
    for (const index of ['0', '1']) expect(ran.filter((l) => l.worker === index).length).toBeLessThanOrEqual(MAX_RESTARTS + 1)
    expect(Math.max(...['0', '1'].map((i) => ran.filter((l) => l.worker === i).length))).toBe(MAX_RESTARTS + 1)
    const warned = logged.filter((l) => l.event === 'warning' && l.code === 3)
    expect(warned.length).toBeGreaterThanOrEqual(MAX_RESTARTS)
    expect(warned.length).toBeLessThanOrEqual(2 * MAX_RESTARTS)
    expect(logged.find((l) => l.event === 'error')).toMatchObject({ message: 'workers keep exiting: stopping', code: 3 })
  }, 60_000)

  it('kills a worker that does not stop after SIGTERM once the grace is over, and exits 0', async () => {
    const { child, out, exited } = primaryOf('stubborn-worker.mjs')
    expect(
      await until(() => lines(out.text).filter((l) => l.event === 'worker_ran').length === 2 || child.exitCode !== null),
      out.text,
    ).toBe(true)
    const pids = lines(out.text)
      .filter((l) => l.event === 'worker_ran')
      .map((l) => Number(l.pid))
    process.kill(child.pid as number, 'SIGTERM')
    expect(await exited, out.text).toBe(0)
    // Each heard SIGTERM, ignored it, and was killed.
    expect(lines(out.text).filter((l) => l.event === 'worker_ignored_sigterm')).toHaveLength(2)
    expect(await until(() => pids.every((p) => !alive(p)), 5000)).toBe(true)
  }, 60_000)
})

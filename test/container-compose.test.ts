// compose.yaml's wiring, checked without a Docker engine: pinned images, readiness and start order, the published port, the services' URLs, and no secret written into the file.
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { compose, containerPort, environment, finalOf, interpolate, listensOn, resolvedEnv, service } from './support/container-files.js'

describe('compose.yaml', () => {
  test('redis, postgres and the edge, with images pinned to a release', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['edge', 'postgres', 'redis'])
    expect(service('redis').image).toMatch(/^redis:7\.0\.\d+$/)
    expect(service('postgres').image).toMatch(/^postgres:15\.\d+(-bookworm)?$/)
    for (const s of Object.values(compose.services)) expect(s.image ?? '').not.toMatch(/latest/)
  })

  test('redis and postgres say when they are ready, and the edge waits for both', () => {
    expect(service('redis').healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping'])
    const pg = service('postgres').healthcheck?.test
    expect(Array.isArray(pg) && pg[0] === 'CMD' && pg[1] === 'pg_isready').toBe(true)
    // An init as process 1: node there would ignore SIGTERM until the edge installs its handler.
    expect(service('edge').init).toBe(true)
    expect(service('edge').depends_on).toEqual({ redis: { condition: 'service_healthy' }, postgres: { condition: 'service_healthy' } })
  })

  test('the edge is built from the Dockerfile, and publishes the port the Dockerfile EXPOSEs; nothing else is published', () => {
    const build = service('edge').build
    expect(typeof build === 'string' ? build : build?.context).toBe('.')
    if (typeof build === 'object') expect(build.dockerfile ?? 'Dockerfile').toBe('Dockerfile')
    const exposed = finalOf('EXPOSE').flatMap((e) => e.args.split(/\s+/).map((p) => Number(p.split('/')[0])))
    const published = (service('edge').ports ?? []).map(containerPort)
    expect(published.length).toBeGreaterThan(0)
    for (const p of published) expect(exposed).toContain(p)
    expect(service('redis').ports).toBeUndefined()
    expect(service('postgres').ports).toBeUndefined()
    // The image listens on every interface; a loopback host here would make the published port a dead end.
    expect(environment(service('edge')).has('ANTEROOM_HOST')).toBe(false)
  })

  test("the edge's URLs name the other services, the ports they listen on, and the database's user, password and name", () => {
    const env = resolvedEnv(service('edge'))
    const redis = new URL(env.ANTEROOM_REDIS_URL ?? '')
    expect(redis.protocol).toBe('redis:')
    expect(redis.hostname).toBe('redis')
    expect(Number(redis.port || 6379)).toBe(listensOn('redis'))
    const db = new URL(env.ANTEROOM_DATABASE_URL ?? '')
    expect(db.hostname).toBe('postgres')
    expect(Number(db.port || 5432)).toBe(listensOn('postgres'))
    const pg = resolvedEnv(service('postgres'))
    expect(decodeURIComponent(db.username)).toBe(pg.POSTGRES_USER)
    expect(decodeURIComponent(db.password)).toBe(pg.POSTGRES_PASSWORD)
    expect(db.pathname).toBe(`/${pg.POSTGRES_DB}`)
    // The config accepts them as they stand.
    expect(() => loadConfig(env)).not.toThrow()
  })

  test('no secret is written into the file: the edge passes its secrets through, and the database password has a demo default only', () => {
    const edge = environment(service('edge'))
    for (const name of [
      'ANTEROOM_QUEUE_SECRET',
      'ANTEROOM_SIGNING_KEYS',
      'ANTEROOM_ADMIN_TOKEN',
      'ANTEROOM_ADMIN_TOKENS',
      'ANTEROOM_METRICS_TOKEN',
    ]) {
      expect(edge.has(name), name).toBe(true)
      expect(edge.get(name), `${name} must come from the shell or .env`).toBeUndefined()
    }
    const password = environment(service('postgres')).get('POSTGRES_PASSWORD') ?? ''
    expect(password).toMatch(/^\$\{POSTGRES_PASSWORD:-[^}]*demo[^}]*\}$/)
    expect(edge.get('ANTEROOM_DATABASE_URL')).toContain('${POSTGRES_PASSWORD:-')
    // Set in the shell, the password reaches both sides.
    const shell = { POSTGRES_PASSWORD: 'from-the-shell' }
    expect(interpolate(password, shell)).toBe('from-the-shell')
    expect(new URL(interpolate(edge.get('ANTEROOM_DATABASE_URL') ?? '', shell)).password).toBe('from-the-shell')
  })
})

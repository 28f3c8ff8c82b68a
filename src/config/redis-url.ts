// ANTEROOM_REDIS_URL in its three shapes: one server, a Sentinel set, a Cluster. The config checks it
// with this parser at start-up (an error names the field and never repeats a password); the Redis
// adapter (src/adapters/redis/connect.ts) builds its client from what it returns.
//
//   redis://[user:password@]host[:port][/db]               one server (rediss:// for TLS)
//   redis+sentinel://[user:password@]host[:port],host[:port],.../master-name[/db]
//                                                          the sentinels (port 26379 by default) and the
//                                                          name they monitor the master under; the
//                                                          credentials are the data nodes'
//   redis+cluster://[user:password@]host[:port],host[:port],...
//                                                          a few cluster nodes to discover the rest from
//                                                          (port 6379 by default); database 0 only

export interface HostPort {
  host: string
  port: number
}

export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string; db: number; username?: string; password?: string }
  | { kind: 'cluster'; nodes: HostPort[]; username?: string; password?: string }

/** Why a URL cannot be used, in words meant for the operator (no secrets in them). */
export class RedisUrlError extends Error {}

const FORMS = 'redis://, rediss://, redis+sentinel://host:port,host:port/master-name or redis+cluster://host:port,host:port'
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i

function fail(message: string): never {
  throw new RedisUrlError(message)
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    fail(`the ${what} is not valid percent-encoding`)
  }
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
function hostPort(text: string, defaultPort: number, index: number): HostPort {
  const where = `host ${index + 1} ("${text}")`
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(text)
  if (m === null) fail(`${where} must be host or host:port`)
  const port = m[3] === undefined ? defaultPort : Number(m[3])
  if (port < 1 || port > 65535) fail(`${where}: the port must be from 1 to 65535`)
  return { host: (m[1] ?? m[2]) as string, port }
}

function database(text: string): number {
  if (!/^\d{1,2}$/.test(text)) fail(`the database after the master name must be a number, got "${text}"`)
  return Number(text)
}

/** Parses ANTEROOM_REDIS_URL; throws RedisUrlError saying what is wrong. */
export function parseRedisUrl(value: string): RedisTarget {
  const scheme = SCHEME.exec(value)?.[1]?.toLowerCase()
  if (scheme === undefined) fail(`must be a URL: ${FORMS}`)
  if (scheme === 'redis' || scheme === 'rediss') {
    try {
      new URL(value)
    } catch {
      fail(`must be a URL: ${FORMS}`)
    }
    return { kind: 'single', url: value }
  }
  if (scheme !== 'redis+sentinel' && scheme !== 'redis+cluster') fail(`must start with ${FORMS}`)
  const rest = value.slice(scheme.length + 3)
  if (/[?#]/.test(rest)) fail(`${scheme}:// takes no query or fragment (the options are fixed; see docs/architecture.md)`)
  const slash = rest.indexOf('/')
  const authority = slash < 0 ? rest : rest.slice(0, slash)
  const path = slash < 0 ? '' : rest.slice(slash + 1)
  const at = authority.lastIndexOf('@')
  const userinfo = at < 0 ? undefined : authority.slice(0, at)
  const hostList = at < 0 ? authority : authority.slice(at + 1)
  let username: string | undefined
  let password: string | undefined
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':')
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon)
    if (user !== '') username = decode(user, 'user name')
    if (colon >= 0) password = decode(userinfo.slice(colon + 1), 'password')
  }
  if (hostList === '') fail(`${scheme}:// needs at least one host:port`)
  const credentials = { ...(username !== undefined && { username }), ...(password !== undefined && { password }) }
  if (scheme === 'redis+sentinel') {
    const sentinels = hostList.split(',').map((h, i) => hostPort(h, 26379, i))
    const [name, db, ...extra] = path.split('/')
    if (name === undefined || name === '')
      fail('redis+sentinel:// needs the master name after the hosts: redis+sentinel://host:port,host:port/master-name')
    if (extra.length > 0 && !(extra.length === 1 && extra[0] === ''))
      fail('after the hosts comes master-name or master-name/db, nothing more')
    return {
      kind: 'sentinel',
      sentinels,
      name: decode(name, 'master name'),
      db: db === undefined || db === '' ? 0 : database(db),
      ...credentials,
    }
  }
  if (path !== '') fail('a Redis Cluster has only database 0: nothing may follow the hosts')
  return { kind: 'cluster', nodes: hostList.split(',').map((h, i) => hostPort(h, 6379, i)), ...credentials }
}

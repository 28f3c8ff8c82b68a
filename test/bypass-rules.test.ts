// Bypass rules without HTTP (core/cidr.ts, core/bypass.ts, src/config/guards.ts): CIDR blocks parsed
// and matched (IPv4, IPv6, IPv4-mapped, the spellings a rule may not have), rules checked with errors
// that name their field, path rules matched against the spellings of a path an origin might read
// alike, header secrets compared as MACs, and the config of secrets and the human check's provider.
import { describe, expect, it } from 'vitest'
import { jsMac } from '../src/adapters/js/mac.js'
import { loadConfig } from '../src/config/index.js'
import {
  BYPASS_SECRET_DOMAIN,
  type BypassRule,
  cidrRule,
  compileBypass,
  headerRule,
  parseBypassRule,
  pathRule,
} from '../src/core/bypass.js'
import { CidrMatcher, ipv4Number, parseCidr } from '../src/core/cidr.js'
import { isAnteroomError } from '../src/core/errors.js'
import { canonicalPath } from '../src/core/path.js'
import { parseRoomSettings } from '../src/core/settings.js'

function thrown(run: () => unknown): { code: string; message: string; field: string | undefined } {
  try {
    run()
  } catch (err) {
    if (isAnteroomError(err)) return { code: err.code, message: err.message, field: err.field }
    throw err
  }
  throw new Error('nothing was thrown')
}

const matcher = (...blocks: string[]) =>
  new CidrMatcher(
    blocks.map((b) => {
      const p = parseCidr(b)
      if (!p.ok) throw new Error(p.problem)
      return p.cidr
    }),
  )

describe('CIDR blocks', () => {
  it('match IPv4 by prefix, and nothing that is not an address', () => {
    const m = matcher('10.0.0.0/8', '192.0.2.0/24', '198.51.100.7')
    for (const a of ['10.0.0.1', '10.255.255.255', '192.0.2.0', '192.0.2.255', '198.51.100.7']) expect(m.matches(a), a).toBe(true)
    for (const a of [
      '11.0.0.1',
      '9.255.255.255',
      '192.0.3.0',
      '198.51.100.8',
      '',
      'localhost',
      '10.0.0',
      '10.0.0.1.1',
      '010.0.0.1',
      '10.0.0.256',
    ])
      expect(m.matches(a), a).toBe(false)
    expect(m.matches(undefined)).toBe(false)
  })

  it('match IPv6 by prefix in any spelling, and an IPv4-mapped client as its IPv4 address', () => {
    const m = matcher('2001:db8::/32', '192.0.2.0/24')
    for (const a of ['2001:db8::1', '2001:DB8:0:0:0:0:0:1', '2001:db8:ffff::', '::ffff:192.0.2.9', '::FFFF:192.0.2.9', '::ffff:c000:209'])
      expect(m.matches(a), a).toBe(true)
    for (const a of ['2001:db9::1', '2001:db7:ffff::', '::ffff:192.0.3.9', '::192.0.2.9', 'fe80::1']) expect(m.matches(a), a).toBe(false)
  })

  it('take an IPv4-mapped block as the IPv4 block it covers, and store blocks in one form', () => {
    expect(parseCidr('::ffff:10.0.0.0/104')).toMatchObject({ ok: true, text: '10.0.0.0/8' })
    expect(matcher('::ffff:10.0.0.0/104').matches('10.1.2.3')).toBe(true)
    expect(parseCidr('2001:DB8:0:0:0:0:0:0/32')).toMatchObject({ ok: true, text: '2001:db8::/32' })
    expect(parseCidr(' 192.0.2.7 ')).toMatchObject({ ok: true, text: '192.0.2.7/32' })
    expect(parseCidr('2001:db8::7')).toMatchObject({ ok: true, text: '2001:db8::7/128' })
  })

  it('refuse what a rule must not say: bits past the prefix, blocks wider than /8 or /16, other spellings', () => {
    const problems = Object.fromEntries(
      [
        '10.0.0.1/8',
        '0.0.0.0/0',
        '10.0.0.0/7',
        '::/0',
        '2001::/15',
        '1.2.3.4/33',
        '010.0.0.0/8',
        'fe80::1%eth0',
        '10.0.0.0/x',
        'example.com',
        '::ffff:10.0.0.0/64',
      ].map((b) => [b, (parseCidr(b) as { problem?: string }).problem]),
    )
    expect(problems).toEqual({
      '10.0.0.1/8': 'has bits set past the /8: write 10.0.0.0/8',
      '0.0.0.0/0': 'an IPv4 block may be at most a /8',
      '10.0.0.0/7': 'an IPv4 block may be at most a /8',
      '::/0': 'an IPv6 block may be at most a /16',
      '2001::/15': 'an IPv6 block may be at most a /16',
      '1.2.3.4/33': 'an IPv4 prefix is at most 32 bits',
      '010.0.0.0/8': 'an IPv4 number may not start with 0 (010 reads as 8 to some parsers)',
      'fe80::1%eth0': 'a zone id (%eth0) has no place in a rule',
      '10.0.0.0/x': 'the prefix after / must be a number of bits',
      'example.com': 'must be an IPv4 or IPv6 address or block, like 192.0.2.0/24 or 2001:db8::/32',
      '::ffff:10.0.0.0/64': 'an IPv4-mapped block (::ffff:a.b.c.d) needs a prefix of at least 96',
    })
  })

  it('read an IPv4 client address without allocating, and nothing else as one', () => {
    expect(ipv4Number('203.0.113.7')).toBe(0xcb007107)
    expect(ipv4Number('0.0.0.0')).toBe(0)
    for (const a of ['1.2.3', '1.2.3.4.', '.1.2.3.4', '1..2.3', '256.1.1.1', '01.2.3.4', '1.2.3.4 ', '::1'])
      expect(ipv4Number(a), a).toBe(-1)
  })
})

describe('bypass rules', () => {
  it('are checked, each error naming its field (within a rule, and within a room)', () => {
    const cases: [unknown, string, string][] = [
      [{ id: 'office', kind: 'cidr', networks: ['10.0.0.1/8'] }, 'networks[0]', 'has bits set past the /8: write 10.0.0.0/8'],
      [{ id: 'office', kind: 'cidr', networks: ['192.0.2.0/24', 'x'] }, 'networks[1]', 'must be an IPv4 or IPv6 address'],
      [{ id: 'office', kind: 'cidr', networks: [] }, 'networks', 'must be a list of 1 to 64'],
      [{ id: 'static', kind: 'path', paths: ['/tickets/%73tatic'] }, 'paths[0]', 'must be written in canonical form: /tickets/static'],
      [{ id: 'static', kind: 'path', paths: ['/tickets/../admin'] }, 'paths[0]', 'must be written in canonical form: /admin'],
      [{ id: 'static', kind: 'path', paths: ['/tickets/a%2fb'] }, 'paths[0]', 'must be a plain path like /tickets/static'],
      [{ id: 'static', kind: 'path', paths: ['tickets'] }, 'paths[0]', 'must start with /'],
      [{ id: 'static', kind: 'path', paths: ['/'] }, 'paths[0]', 'must not be /'],
      [{ id: 'search', kind: 'crawler', crawlers: ['googlebot', 'askjeeves'] }, 'crawlers[1]', 'is not a known crawler'],
      [{ id: 'partner', kind: 'header', secret: 'Partner A' }, 'secret', 'must name a secret of ANTEROOM_BYPASS_SECRETS'],
      [{ id: 'partner', kind: 'header', secret: 'partner-a', value: 'x'.repeat(40) }, 'value', 'is not part of a header rule'],
      [{ id: 'Office', kind: 'cidr', networks: ['10.0.0.0/8'] }, 'id', 'must be 1-32 lower-case letters'],
      [{ id: 'office', kind: 'xff' }, 'kind', 'must be one of cidr, header, path, crawler'],
      ['office', 'rule', 'must be an object'],
    ]
    for (const [rule, field, message] of cases) {
      const err = thrown(() => parseBypassRule(rule))
      expect(err, JSON.stringify(rule)).toMatchObject({ code: 'ERR_SETTINGS_INVALID', field })
      expect(err.message, JSON.stringify(rule)).toContain(`${field}: ${message}`)
      const inRoom = thrown(() =>
        parseRoomSettings({
          id: 'sale',
          newUsersPerMinute: 1,
          totalActiveUsers: 1,
          bypass: [{ id: 'ok', kind: 'path', paths: ['/x'] }, rule],
        }),
      )
      expect(inRoom.field, JSON.stringify(rule)).toBe(field === 'rule' ? 'bypass[1]' : `bypass[1].${field}`)
    }
  })

  it('have unique ids in a room, and path rules only inside the room’s own paths', () => {
    const room = (bypass: unknown[], paths = ['/tickets', '/shop']) =>
      thrown(() => parseRoomSettings({ id: 'sale', newUsersPerMinute: 1, totalActiveUsers: 1, paths, bypass }))
    expect(
      room([
        { id: 'a', kind: 'path', paths: ['/tickets/static'] },
        { id: 'a', kind: 'cidr', networks: ['10.0.0.0/8'] },
      ]),
    ).toMatchObject({ field: 'bypass[1].id', message: 'bypass[1].id: "a" is used twice' })
    expect(room([{ id: 'a', kind: 'path', paths: ['/shop/x', '/admin'] }])).toMatchObject({
      field: 'bypass[0].paths[1]',
      message: "bypass[0].paths[1]: must lie inside the room's paths (/tickets, /shop)",
    })
    // By whole segments: /ticketsx is not inside /tickets.
    expect(room([{ id: 'a', kind: 'path', paths: ['/ticketsx'] }]).field).toBe('bypass[0].paths[0]')
    // A room on every path takes any path rule.
    expect(
      parseRoomSettings({ id: 'sale', newUsersPerMinute: 1, totalActiveUsers: 1, bypass: [{ id: 'a', kind: 'path', paths: ['/admin'] }] })
        .bypass,
    ).toHaveLength(1)
  })

  it('match a path by its canonical form, case-insensitively and by whole segments: no spelling reaches past the rule', () => {
    const rules = compileBypass([{ id: 'static', kind: 'path', paths: ['/tickets/static'] }], () => undefined)
    const match = (raw: string) => {
      const path = canonicalPath(raw)
      return path.ok ? pathRule(rules, path.key)?.id : `refused: ${path.problem}`
    }
    for (const raw of [
      '/tickets/static',
      '/tickets/static/',
      '/tickets/static/app.css',
      '/TICKETS/Static/app.css',
      '/tickets//static/x',
      '/tickets/./static/x',
      '/tickets/%73tatic/x',
      '/tickets/x/../static/y',
    ])
      expect(match(raw), raw).toBe('static')
    for (const raw of [
      '/tickets/staticx',
      '/tickets/static-admin/buy',
      '/tickets/static/../buy',
      '/tickets/buy',
      '/tickets',
      '/static',
      '/tickets/stat%69c/../../buy',
    ])
      expect(match(raw), raw).toBeUndefined()
    for (const raw of [
      '/tickets/static%2f..%2fbuy',
      '/tickets/static/..%5cbuy',
      '/tickets/static/%252e%252e/buy',
      '/tickets/static;/../buy',
    ])
      expect(match(raw), raw).toMatch(/^refused: /)
  })

  it('match the client address, never a header; a secret only as a MAC, every rule compared', () => {
    const mac = jsMac('test-queue-secret-0123456789abcdef')
    const secrets: Record<string, string> = { 'partner-a': 'a'.repeat(40), 'partner-b': 'b'.repeat(40) }
    const list: BypassRule[] = [
      { id: 'office', kind: 'cidr', networks: ['192.0.2.0/24'] },
      { id: 'a', kind: 'header', secret: 'partner-a' },
      { id: 'b', kind: 'header', secret: 'partner-b' },
      { id: 'c', kind: 'header', secret: 'not-configured' },
    ]
    const rules = compileBypass(list, (name) =>
      secrets[name] === undefined ? undefined : mac.sign(`${BYPASS_SECRET_DOMAIN}${secrets[name]}`),
    )
    expect(cidrRule(rules, '192.0.2.10')?.id).toBe('office')
    expect(cidrRule(rules, '203.0.113.7')).toBeUndefined()
    const header = (value: string) => headerRule(rules, mac.sign(`${BYPASS_SECRET_DOMAIN}${value}`))?.id
    expect(header('a'.repeat(40))).toBe('a')
    expect(header('b'.repeat(40))).toBe('b')
    for (const v of ['a'.repeat(39), `${'a'.repeat(40)} `, 'not-configured', '', 'partner-a']) expect(header(v), v).toBeUndefined()
  })
})

describe('the config of bypass secrets and the human check', () => {
  const rooms = (room: Record<string, unknown>) => JSON.stringify([{ id: 'sale', newUsersPerMinute: 1, totalActiveUsers: 1, ...room }])
  const config = (env: Record<string, string>) => thrown(() => loadConfig(env))

  it('names the bad setting', () => {
    expect(config({ ANTEROOM_BYPASS_SECRETS: 'partner-a:short' })).toMatchObject({
      code: 'ERR_CONFIG',
      field: 'ANTEROOM_BYPASS_SECRETS[0]',
      message: 'ANTEROOM_BYPASS_SECRETS[0]: the secret of partner-a must be at least 32 characters',
    })
    expect(config({ ANTEROOM_BYPASS_SECRETS: `ok:${'x'.repeat(32)},Bad Name:${'y'.repeat(32)}` }).field).toBe('ANTEROOM_BYPASS_SECRETS[1]')
    expect(config({ ANTEROOM_BYPASS_SECRETS: `a:${'x'.repeat(32)},a:${'y'.repeat(32)}` }).message).toContain('a is named twice')
    expect(config({ ANTEROOM_ROOMS: rooms({ bypass: [{ id: 'p', kind: 'header', secret: 'partner-a' }] }) })).toMatchObject({
      field: 'rooms[0].bypass[0].secret',
      message: 'rooms[0].bypass[0].secret: is not a secret of ANTEROOM_BYPASS_SECRETS (none is configured)',
    })
    expect(config({ ANTEROOM_ROOMS: rooms({ humanCheck: 'turnstile' }) })).toMatchObject({
      code: 'ERR_CONFIG',
      field: 'rooms[0].humanCheck',
    })
    expect(config({ ANTEROOM_HUMAN_CHECK_SECRET: 'secret' }).field).toBe('ANTEROOM_HUMAN_CHECK_SITE_KEY')
    expect(
      config({ ANTEROOM_HUMAN_CHECK_SECRET: 's', ANTEROOM_HUMAN_CHECK_SITE_KEY: 'k', ANTEROOM_HUMAN_CHECK_URL: 'ftp://x' }).field,
    ).toBe('ANTEROOM_HUMAN_CHECK_URL')
    expect(
      config({ ANTEROOM_HUMAN_CHECK_SECRET: 's', ANTEROOM_HUMAN_CHECK_SITE_KEY: 'k', ANTEROOM_HUMAN_CHECK_TIMEOUT_MS: '5' }).field,
    ).toBe('ANTEROOM_HUMAN_CHECK_TIMEOUT_MS')
    expect(config({ ANTEROOM_DNS_SERVER: 'not a server' }).field).toBe('ANTEROOM_DNS_SERVER')
    expect(config({ ANTEROOM_DOH_URL: 'dns://1.1.1.1' }).field).toBe('ANTEROOM_DOH_URL')
  })

  it('takes secrets, a provider and a room that uses them; Turnstile’s endpoints by default', () => {
    const c = loadConfig({
      ANTEROOM_BYPASS_SECRETS: `partner-a:${'x'.repeat(32)}`,
      ANTEROOM_HUMAN_CHECK_SECRET: 'the-secret',
      ANTEROOM_HUMAN_CHECK_SITE_KEY: '0x4AAAAAAA',
      ANTEROOM_DNS_SERVER: '127.0.0.1:5353',
      ANTEROOM_ROOMS: rooms({ humanCheck: 'turnstile', bypass: [{ id: 'p', kind: 'header', secret: 'partner-a' }] }),
    })
    expect(c.bypassSecrets).toEqual({ 'partner-a': 'x'.repeat(32) })
    expect(c.humanCheck).toEqual({
      url: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
      secret: 'the-secret',
      siteKey: '0x4AAAAAAA',
      scriptUrl: 'https://challenges.cloudflare.com/turnstile/v0/api.js',
      timeoutMs: 3000,
    })
    expect(c.dnsServer).toBe('127.0.0.1:5353')
    expect(c.dohUrl).toBe('https://cloudflare-dns.com/dns-query')
    expect(c.rooms[0]?.bypass).toEqual([{ id: 'p', kind: 'header', secret: 'partner-a' }])
  })
})

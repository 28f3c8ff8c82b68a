// The canonical path (src/core/path.ts): what rooms are matched on and what the origin receives.
import { describe, expect, it } from 'vitest'
import { canonicalPath, isReserved } from '../src/core/path.js'

const ok = (p: string) => {
  const c = canonicalPath(p)
  if (!c.ok) throw new Error(`${p}: ${c.problem}`)
  return c
}

describe('canonicalPath', () => {
  it.each([
    ['/', '/'],
    ['/shop', '/shop'],
    ['/shop/', '/shop/'],
    ['//shop//a', '/shop/a'],
    ['/%73hop/a', '/shop/a'],
    ['/sh%6Fp', '/shop'],
    ['/x/../shop', '/shop'],
    ['/x/%2e%2e/shop', '/shop'],
    ['/x/.%2E/shop', '/shop'],
    ['/./shop/.', '/shop/'],
    ['/shop/..', '/'],
    ['/../../shop', '/shop'],
    ['/a/b/../../c', '/c'],
    ['/caf%C3%A9', '/caf%C3%A9'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a%20b', '/a%20b'],
    ['/a%3fb%23c', '/a%3Fb%23c'],
    ['/%25', '/%25'],
    ["/a:b@c!$&'()*+,=", "/a:b@c!$&'()*+,="],
  ])('%s becomes %s', (input, path) => {
    expect(ok(input).path).toBe(path)
    // A fixed point: decoding and resolving the output again changes nothing.
    expect(ok(path).path).toBe(path)
  })

  it('matches in lower case', () => {
    expect(ok('/SHOP/%C3%A9').key).toBe('/shop/%c3%a9')
    expect(ok('/Shop').key).toBe(ok('/%73HOP').key)
  })

  it.each([
    ['/a%2fb', 'encoded /'],
    ['/a%2Fb', 'encoded /'],
    ['/a%5cb', 'encoded /'],
    ['/a\\b', 'backslash'],
    ['/a%00', 'control'],
    ['/a\u0000', 'control'],
    ['/a%09', 'control'],
    ['/a\tb', 'control'],
    ['/a%7F', 'control'],
    ['/a;b', ';parameters'],
    ['/a%3Bb', 'encoded ;'],
    ['/shop%3b/x', 'encoded ;'],
    ['/x/..%e2%88%95shop', 'U+2215'],
    ['/x%ef%bc%8fshop', 'U+2215'],
    ['/x/%ef%bc%8e%ef%bc%8e/shop', 'U+2215'],
    ['/a/..;/b', ';parameters'],
    ['/%252e%252e/b', 'encoded twice'],
    ['/%25u002e', 'encoded twice'],
    ['/a%u002e', 'two hex digits'],
    ['/a%', 'two hex digits'],
    ['/a%4', 'two hex digits'],
    ['/%c0%ae', 'UTF-8'],
    ['/%c0%af', 'UTF-8'],
    ['/%e0%80%ae', 'UTF-8'],
    ['/%ff', 'UTF-8'],
    ['/%ed%a0%80', 'UTF-8'],
    ['/shop.', 'ends in a dot'],
    ['/shop%20', 'ends in a dot or a space'],
    ['/x/.../shop', 'ends in a dot'],
    ['/x/..%20/shop', 'ends in a dot or a space'],
    ['shop', 'start with /'],
  ])('refuses %s (%s)', (input, problem) => {
    const c = canonicalPath(input)
    expect(c.ok).toBe(false)
    if (!c.ok) expect(c.problem).toContain(problem)
  })

  it('is a fixed point for random inputs: the origin decoding what it gets once more finds the same path', () => {
    const alphabet = ['a', 'B', '/', '.', '%2e', '%2E', '%41', '%c3%a9', '%20', '~', '-', '%3F', '..', '%25', 'é', ':', '@']
    let seed = 7
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed
    }
    let accepted = 0
    for (let i = 0; i < 5000; i++) {
      let p = '/'
      for (let n = next() % 12; n > 0; n--) p += alphabet[next() % alphabet.length]
      const c = canonicalPath(p)
      if (!c.ok) continue
      accepted++
      expect(c.path.startsWith('/'), p).toBe(true)
      expect(c.path, p).not.toMatch(/(^|\/)\.\.?(\/|$)|\/\//)
      const again = canonicalPath(c.path)
      expect(again.ok && again.path, p).toBe(c.path)
      // What an origin gets after one more decode names the same segments.
      expect(decodeURIComponent(c.path).split('/').length, p).toBe(c.path.split('/').length)
    }
    expect(accepted).toBeGreaterThan(1000)
  })

  it('reserves /_anteroom and everything under it, nothing else', () => {
    expect(isReserved(ok('/_ANTEROOM/api').key)).toBe(true)
    expect(isReserved(ok('/_anteroom').key)).toBe(true)
    expect(isReserved(ok('/%5Fanteroom/x').key)).toBe(true)
    expect(isReserved(ok('/_anteroomx').key)).toBe(false)
    expect(isReserved(ok('/x/_anteroom').key)).toBe(false)
  })
})

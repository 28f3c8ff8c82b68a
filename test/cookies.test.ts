// Reading the edge's own cookies from a Cookie header: readCookie finds the first part called by the
// name without splitting the header, and must read every header exactly as splitting it did.
import { describe, expect, it } from 'vitest'
import { readCookie } from '../src/http/cookies.js'

/** The reading before: split on ";", trim each part, the first part that starts with `name=`. */
function reference(header: string | null, name: string): string | undefined {
  if (header === null || header.length > 8192) return undefined
  const prefix = `${name}=`
  for (const part of header.split(';')) {
    const item = part.trim()
    if (item.startsWith(prefix)) {
      const value = item.slice(prefix.length)
      return /^[A-Za-z0-9._~-]*$/.test(value) ? value : undefined
    }
  }
  return undefined
}

const NAME = 'anteroom_q_line'

describe('readCookie', () => {
  it('reads the first part with the name, and nothing that only contains it', () => {
    expect(readCookie(`${NAME}=abc`, NAME)).toBe('abc')
    expect(readCookie(`a=1; ${NAME}=abc; ${NAME}=def`, NAME)).toBe('abc')
    expect(readCookie(`a=${NAME}=evil; ${NAME}=good`, NAME)).toBe('good')
    expect(readCookie(`x${NAME}=evil`, NAME)).toBeUndefined()
    expect(readCookie(`a=1;\t ${NAME}=abc \t`, NAME)).toBe('abc')
    expect(readCookie(`${NAME}= abc`, NAME)).toBeUndefined()
    expect(readCookie(`${NAME}=a"b`, NAME)).toBeUndefined()
    expect(readCookie(`${NAME}=`, NAME)).toBe('')
    expect(readCookie(null, NAME)).toBeUndefined()
    expect(readCookie(`${NAME}=${'a'.repeat(9000)}`, NAME)).toBeUndefined()
  })

  it('reads every header as splitting and trimming it did (a differential check)', () => {
    let seed = 3
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const pieces = [
      NAME,
      `${NAME}=`,
      'anteroom_q_',
      '=',
      ';',
      '; ',
      ' ',
      '\t',
      '\u00a0',
      '\ufeff',
      'a',
      'Z9._~-',
      '"',
      ',',
      'x',
      'line',
      '/:@[`{\x7f+',
    ]
    for (let i = 0; i < 20_000; i++) {
      let header = ''
      for (let k = rand(12); k >= 0; k--) header += pieces[rand(pieces.length)]
      expect(readCookie(header, NAME), JSON.stringify(header)).toBe(reference(header, NAME))
    }
  })
})

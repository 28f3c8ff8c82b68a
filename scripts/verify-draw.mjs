#!/usr/bin/env node
// Checks a scheduled room's published draw, independently of Anteroom's code (node:crypto only):
//
//   node scripts/verify-draw.mjs https://tickets.example/_anteroom/draw?room=sale
//   node scripts/verify-draw.mjs draw.json          # a saved answer (all of its pages in one "draw" list)
//
// 1. the seed's SHA-256 is the commitment published before the opening;
// 2. every listed value is HMAC-SHA256(key = seed bytes, message = "<room>:<ticket>");
// 3. the list is in draw order: ascending by the value's first 10 hex digits (40 bits), then by ticket;
//    and the ranks are 1, 2, 3, ...
// Prints the tickets in rank order with --list. Exit status 1 when any check fails.
import { createHash, createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'

async function load(source) {
  if (!/^https?:\/\//.test(source)) return JSON.parse(readFileSync(source, 'utf8'))
  const pages = []
  for (let offset = 0; ; ) {
    const url = new URL(source)
    url.searchParams.set('offset', String(offset))
    const res = await fetch(url)
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`)
    const page = await res.json()
    pages.push(page)
    offset += page.draw?.length ?? 0
    if (page.state !== 'drawn' || offset >= page.entrants || (page.draw?.length ?? 0) === 0) break
  }
  return { ...pages[0], draw: pages.flatMap((p) => p.draw ?? []) }
}

const source = process.argv[2]
if (source === undefined) {
  console.error('usage: node scripts/verify-draw.mjs <draw URL or file> [--list]')
  process.exit(2)
}
const d = await load(source)
const problems = []
if (d.state !== 'drawn' || typeof d.seed !== 'string') {
  console.error(`no seed yet (state ${d.state}): the draw is published when the sale opens`)
  process.exit(1)
}
const seed = Buffer.from(d.seed, 'hex')
if (createHash('sha256').update(seed).digest('hex') !== d.commitment) problems.push('SHA-256(seed) is not the commitment')
const key = (e) => [e.value.slice(0, 10), e.ticket]
d.draw.forEach((e, i) => {
  const value = createHmac('sha256', seed).update(`${d.room}:${e.ticket}`).digest('hex')
  if (value !== e.value) problems.push(`rank ${e.rank}: the value of ${e.ticket} is ${value}, not ${e.value}`)
  if (e.rank !== i + 1) problems.push(`entry ${i + 1} has rank ${e.rank}`)
  const before = d.draw[i - 1]
  if (before !== undefined) {
    const [a, b] = [key(before), key(e)]
    if (a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1])) problems.push(`rank ${e.rank} (${e.ticket}) should come before rank ${before.rank}`)
  }
})
if (d.draw.length !== d.entrants) problems.push(`${d.draw.length} entries listed, ${d.entrants} in the draw`)
if (process.argv.includes('--list')) for (const e of d.draw) console.log(e.ticket)
if (problems.length > 0) {
  for (const p of problems.slice(0, 20)) console.error(`FAIL ${p}`)
  process.exit(1)
}
console.error(
  `OK: room ${d.room}, ${d.draw.length} entrants, seed matches commitment ${d.commitment.slice(0, 16)}…, every value and the order check out`,
)

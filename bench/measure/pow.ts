// Measurement 9: what the edge pays to check a proof-of-work answer (core/pow.ts), in µs of one core.
//   Baseline: checking a queue token (QueueTokens.verify), which every poll of a waiting visitor costs,
//   with the same MAC, in the same process and run.
//   Measured: PowChallenges.check on a valid answer with the parts each edge runs: the plain
//   JavaScript HMAC (adapters/js/mac.ts, on both) with node:crypto's SHA-256 (the Node edge) or with
//   WebCrypto's (a Worker; measured here on Node, so an order of magnitude, not workerd's own
//   figure); and issuing a challenge.
// Sequential calls, after a warm-up; the median of 5 rounds of ROUND calls. The difficulty does not
// change the edge's cost: a check is one HMAC and one SHA-256 whatever it is. What a browser pays to
// solve is measured in test/pow.browser.test.ts (headless Chromium) and quoted in the README.
import { jsMac } from '../../src/adapters/js/mac.js'
import { nodeDigest } from '../../src/adapters/node/digest.js'
import { webCryptoDigest } from '../../src/adapters/webcrypto/digest.js'
import { POW_RECOMMENDED_DIFFICULTY, PowChallenges, solveChallenge } from '../../src/core/pow.js'
import { newVisitorId, QueueTokens } from '../../src/core/queue-token.js'
import { log, type Measured, ratioRow } from '../lib.js'
import { BENCH_SECRET } from '../line.js'

const ROUND = 20_000
const ROUNDS = 5
const ROOM = 'line'
/** Low, so that the bench solves quickly: the check costs the same at any difficulty. */
const SOLVED_AT = 8

/** µs per call of `f`: the median of ROUNDS rounds, after a warm-up round. */
async function perCall(f: () => unknown): Promise<number> {
  const rounds: number[] = []
  for (let r = 0; r <= ROUNDS; r++) {
    const t0 = performance.now()
    for (let i = 0; i < ROUND; i++) await f()
    if (r > 0) rounds.push(((performance.now() - t0) * 1000) / ROUND)
  }
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)] as number
}

const us = (n: number) => `${n.toFixed(2)} µs`

export async function measurePow(): Promise<Measured> {
  const now = Date.now()
  const tokens = new QueueTokens(jsMac(BENCH_SECRET))
  const token = await tokens.sign({ room: ROOM, visitor: newVisitorId(), arrival: now * 1000, expires: now + 60_000 })
  const node = new PowChallenges(jsMac(BENCH_SECRET), nodeDigest)
  const web = new PowChallenges(jsMac(BENCH_SECRET), webCryptoDigest)
  const answer = await solveChallenge((await node.issue(ROOM, SOLVED_AT, now)).value, SOLVED_AT, nodeDigest)
  // Refused answers must be refused, or the figures measure the wrong thing.
  for (const pow of [node, web]) {
    if (!(await pow.check(answer, ROOM, SOLVED_AT, now)).ok) throw new Error('bench/measure/pow.ts: a valid answer was refused')
  }
  if ((await tokens.verify(token, ROOM, now)) === undefined) throw new Error('bench/measure/pow.ts: the queue token was refused')

  log(`measure proof-of-work checks (${ROUNDS} rounds of ${ROUND})`)
  const queueToken = await perCall(() => tokens.verify(token, ROOM, now))
  const nodeCheck = await perCall(() => node.check(answer, ROOM, SOLVED_AT, now))
  const webCheck = await perCall(() => web.check(answer, ROOM, SOLVED_AT, now))
  const issue = await perCall(() => node.issue(ROOM, POW_RECOMMENDED_DIFFICULTY, now))
  const baseline = 'queue-token check'
  return {
    rows: [
      ratioRow(
        'pow_check_node_us',
        '9. proof-of-work check, Node edge (JS HMAC, node:crypto SHA-256)',
        nodeCheck,
        queueToken,
        baseline,
        us,
        'info',
      ),
      ratioRow(
        'pow_check_webcrypto_us',
        '9. proof-of-work check, as a Worker (JS HMAC, WebCrypto SHA-256), on Node',
        webCheck,
        queueToken,
        baseline,
        us,
        'info',
      ),
      ratioRow('pow_issue_node_us', '9. issuing a challenge, Node edge', issue, queueToken, baseline, us, 'info'),
    ],
    notes: [
      `proof of work (measurement 9): one check is one HMAC and one SHA-256 at any difficulty: ${us(nodeCheck)} with node:crypto's SHA-256, ` +
        `${us(webCheck)} with WebCrypto's on Node (the HMAC in plain JavaScript in both), against ${us(queueToken)} for a queue-token check; issuing a challenge ${us(issue)}. ` +
        `A browser solves difficulty ${POW_RECOMMENDED_DIFFICULTY} (2^${POW_RECOMMENDED_DIFFICULTY} hashes on average): see test/pow.browser.test.ts and the README.`,
    ],
    warnings: [],
    results: { pow: { checkNodeUs: nodeCheck, checkWebCryptoUs: webCheck, issueNodeUs: issue, queueTokenCheckUs: queueToken } },
  }
}

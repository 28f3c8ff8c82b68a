// The counts of the bypass rules and the human check (src/http/bypass.ts, human-check.ts): bypasses by
// room, rule and kind; human checks by outcome; shadow-lane visits; crawler checks and the DNS lookups
// they made. Cells are made once (a rule's when its room's rules are compiled) and bumped in place: no
// allocation on a request. They live in the edge's metric registry (GET /_anteroom/metrics) when
// metrics are on, and in one of their own otherwise: the admin's Bypass & checks view reads them either way.

import { CRAWLER_OUTCOMES, type CrawlerOutcome } from '../core/crawlers.js'
import { HUMAN_CHECK_COUNTED, type HumanCheckCounted } from '../core/human-check.js'
import { type CounterCell, type CounterFamily, MetricRegistry } from '../core/metrics.js'

/** A room's human-check cells, and its shadow visits. */
export interface HumanCheckMeter {
  readonly outcomes: Readonly<Record<HumanCheckCounted, CounterCell>>
  readonly shadowVisits: CounterCell
}

export class GuardMeters {
  private readonly bypasses: CounterFamily
  private readonly humanChecks: CounterFamily
  private readonly shadowVisits: CounterFamily
  private readonly humans = new Map<string, HumanCheckMeter>()
  /** Crawler checks by outcome (cache answers included), and the verifications that asked DNS. */
  readonly crawlerChecks: Readonly<Record<CrawlerOutcome, CounterCell>>
  readonly crawlerLookups: Readonly<Record<CrawlerOutcome, CounterCell>>

  constructor(readonly registry: MetricRegistry = new MetricRegistry()) {
    this.bypasses = registry.counter(
      'anteroom_bypasses_total',
      'Requests this edge let past the line by a bypass rule, by room, rule and kind (cidr, header, path, crawler); each was forwarded with an admission marked bypass.',
      ['room', 'rule', 'kind'],
    )
    this.humanChecks = registry.counter(
      'anteroom_human_checks_total',
      "Human checks of newcomers at this edge, by outcome: asked (shown the widget), passed, failed (put in the shadow lane), error and timeout (siteverify could not say: the room's humanCheckOnError applied).",
      ['room', 'outcome'],
    )
    this.shadowVisits = registry.counter(
      'anteroom_shadow_visits_total',
      'Visits answered from the shadow lane (visitors who failed the human check: they wait and are never admitted), without a store call.',
      ['room'],
    )
    const checks = registry.counter(
      'anteroom_crawler_checks_total',
      'Requests whose User-Agent named a crawler that a rule lets past, by what reverse and forward DNS said of the address (cached answers included): verified, refused or error.',
      ['outcome'],
    )
    const lookups = registry.counter(
      'anteroom_crawler_lookups_total',
      'Crawler verifications that asked DNS (a reverse lookup, then forward ones), by outcome.',
      ['outcome'],
    )
    const by = (family: CounterFamily) =>
      Object.fromEntries(CRAWLER_OUTCOMES.map((o) => [o, family.cell(o)])) as Record<CrawlerOutcome, CounterCell>
    this.crawlerChecks = by(checks)
    this.crawlerLookups = by(lookups)
  }

  /** A rule's cell (the same one for the same room, rule and kind, whichever settings object asks). */
  bypass(room: string, rule: string, kind: string): CounterCell {
    return this.bypasses.cell(room, rule, kind)
  }

  /** A room's human-check cells, made on first use. */
  human(room: string): HumanCheckMeter {
    let meter = this.humans.get(room)
    if (meter === undefined) {
      const outcomes = Object.fromEntries(HUMAN_CHECK_COUNTED.map((o) => [o, this.humanChecks.cell(room, o)])) as Record<
        HumanCheckCounted,
        CounterCell
      >
      meter = { outcomes, shadowVisits: this.shadowVisits.cell(room) }
      this.humans.set(room, meter)
    }
    return meter
  }

  /** What the admin view shows of a room: each rule's bypasses, the human checks by outcome, the shadow visits, and the crawler checks. */
  counts(room: string, rules: readonly { id: string; kind: string }[]) {
    const human = this.human(room)
    return {
      rules: Object.fromEntries(rules.map((r) => [r.id, this.bypass(room, r.id, r.kind).value])),
      humanCheck: Object.fromEntries(HUMAN_CHECK_COUNTED.map((o) => [o, human.outcomes[o].value])) as Record<HumanCheckCounted, number>,
      shadowVisits: human.shadowVisits.value,
      crawlerChecks: Object.fromEntries(CRAWLER_OUTCOMES.map((o) => [o, this.crawlerChecks[o].value])) as Record<CrawlerOutcome, number>,
      crawlerLookups: Object.fromEntries(CRAWLER_OUTCOMES.map((o) => [o, this.crawlerLookups[o].value])) as Record<CrawlerOutcome, number>,
    }
  }
}

// TemplateStore on Redis: one hash, field <name> = {"rev": n, "template": {...}} and field
// rev:<name> = n (template names hold no ':'). Writes and removals go through template-cas-1.lua, a
// compare-and-set on the revision; the edges' once-a-second look is one HMGET of the rev: fields.
import type { Cluster, Redis } from 'ioredis'
import type { PageTemplate } from '../../core/page-template.js'
import type { TemplateStore, TemplateWrite, VersionedTemplate } from '../../ports/template-store.js'
import { TEMPLATES_KEY } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { storeCall } from './store-call.js'
import { casResult, readVersioned } from './versioned.js'

const REV = 'rev:'

/** A template's entry; undefined when damaged: the other templates keep working. */
const decode = (json: string): VersionedTemplate | undefined =>
  readVersioned(json, (stored) => {
    const t = stored.template as Partial<PageTemplate> | undefined
    if (typeof t?.name !== 'string' || typeof t.source !== 'string') return undefined
    return {
      rev: stored.rev,
      template: { name: t.name, source: t.source, stylesheet: typeof t.stylesheet === 'string' ? t.stylesheet : null },
    }
  })

export class RedisTemplateStore implements TemplateStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  async list(): Promise<VersionedTemplate[]> {
    const all = await storeCall(() => this.redis.hgetall(TEMPLATES_KEY))
    return Object.entries(all)
      .filter(([field]) => !field.startsWith(REV))
      .map(([, json]) => decode(json))
      .filter((t): t is VersionedTemplate => t !== undefined)
      .sort((a, b) => a.template.name.localeCompare(b.template.name))
  }

  async get(name: string): Promise<VersionedTemplate | undefined> {
    const json = await storeCall(() => this.redis.hget(TEMPLATES_KEY, name))
    return json === null ? undefined : decode(json)
  }

  async revisions(names: string[]): Promise<number[]> {
    if (names.length === 0) return []
    const revs = await storeCall(() => this.redis.hmget(TEMPLATES_KEY, ...names.map((n) => `${REV}${n}`)))
    return revs.map((r) => Number(r ?? 0))
  }

  put(template: PageTemplate, expectedRev: number): Promise<TemplateWrite> {
    return this.cas(template.name, expectedRev, JSON.stringify(template))
  }

  remove(name: string, expectedRev: number): Promise<TemplateWrite> {
    return this.cas(name, expectedRev, '')
  }

  private async cas(name: string, expectedRev: number, json: string): Promise<TemplateWrite> {
    const reply = (await storeCall(() => runScript(this.redis, this.scripts.templateCas, [TEMPLATES_KEY], [name, expectedRev, json]))) as [
      number,
      number | string,
    ]
    return casResult(reply, decode)
  }
}

// TemplateStore in process memory, for a single instance with no Redis.
import type { PageTemplate } from '../../core/page-template.js'
import type { TemplateStore, TemplateWrite, VersionedTemplate } from '../../ports/template-store.js'

export class MemoryTemplateStore implements TemplateStore {
  private readonly templates = new Map<string, VersionedTemplate>()
  /** Each name's last revision, kept after a removal. */
  private readonly revs = new Map<string, number>()

  async list(): Promise<VersionedTemplate[]> {
    return [...this.templates.values()].sort((a, b) => a.template.name.localeCompare(b.template.name))
  }

  async get(name: string): Promise<VersionedTemplate | undefined> {
    return this.templates.get(name)
  }

  async revisions(names: string[]): Promise<number[]> {
    return names.map((name) => this.revs.get(name) ?? 0)
  }

  async put(template: PageTemplate, expectedRev: number): Promise<TemplateWrite> {
    const current = this.templates.get(template.name)
    if ((current?.rev ?? 0) !== expectedRev) return { ok: false, current }
    const rev = (this.revs.get(template.name) ?? 0) + 1
    this.revs.set(template.name, rev)
    this.templates.set(template.name, { template: { ...template }, rev })
    return { ok: true, rev }
  }

  async remove(name: string, expectedRev: number): Promise<TemplateWrite> {
    const current = this.templates.get(name)
    if (current === undefined || current.rev !== expectedRev) return { ok: false, current }
    const rev = current.rev + 1
    this.revs.set(name, rev)
    this.templates.delete(name)
    return { ok: true, rev }
  }
}

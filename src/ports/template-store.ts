// The TemplateStore port: the rooms' page templates (core/page-template.ts), kept in the store so that
// every edge shares them. Each template has a revision that only grows, through a removal too (a
// template made again under the same name gets a new one); a write names the revision it was based on
// (compare-and-set). Edges ask for the revisions of the templates their rooms use once a second, and
// read a template only when its revision moved.
import type { PageTemplate } from '../core/page-template.js'

export interface VersionedTemplate {
  template: PageTemplate
  rev: number
}

export type TemplateWrite = { ok: true; rev: number } | { ok: false; current: VersionedTemplate | undefined }

export interface TemplateStore {
  /** Every template, by name. */
  list(): Promise<VersionedTemplate[]>
  get(name: string): Promise<VersionedTemplate | undefined>
  /** The revision of each of these names, in order (0: never written); a removed template's counts on. */
  revisions(names: string[]): Promise<number[]>
  /** Writes a template only if its revision is still `expectedRev` (0: there must be none now). */
  put(template: PageTemplate, expectedRev: number): Promise<TemplateWrite>
  /** Removes a template only if it is there at revision `expectedRev`. */
  remove(name: string, expectedRev: number): Promise<TemplateWrite>
}

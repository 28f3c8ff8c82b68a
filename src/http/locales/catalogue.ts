// What a language's catalogue is: every text of the visitor's pages under a key, English
// (locales/en.ts) being the source of truth for the keys and their {placeholders}. A text that
// depends on a count is a plural: one form per plural category of the language (Intl.PluralRules),
// `other` always; {n} in it is the count, written with Intl.NumberFormat.

export type PluralCategory = 'zero' | 'one' | 'two' | 'few' | 'many' | 'other'
export type Plural = { readonly [C in PluralCategory]?: string } & { readonly other: string }
export type Text = string | Plural

export function isPlural(text: Text): text is Plural {
  return typeof text === 'object'
}
